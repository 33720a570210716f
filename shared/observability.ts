import { Logger } from "@aws-lambda-powertools/logger";
import { Metrics, MetricUnit } from "@aws-lambda-powertools/metrics";
import type { InternalFailure } from "./agent/dispatcher.js";
import type { CycleRecord, RunOutcome } from "./agent/loop.js";
import type { ToolResult } from "./agent/result.js";
import type { Config } from "./config.js";

/**
 * The service's structured logger and metrics, built once per Lambda container.
 * - `logger`: Powertools Logger, one JSON object per line on stdout (CloudWatch Logs), with
 *   `service`, `level`, `timestamp`, the Lambda request id and the keys a request appends (runId,
 *   tenantId). Prompts, answers and secrets are never logged at INFO.
 * - `metrics`: Powertools Metrics, CloudWatch Embedded Metric Format on stdout, flushed once per
 *   invocation by {@link flushMetrics}.
 */
export interface Observability {
  logger: Logger;
  metrics: Metrics;
}

/**
 * Attribute names whose values are replaced by "[REDACTED]" in every log line, as a second line of
 * defence: no code logs these, and this keeps a future mistake out of the logs.
 */
const REDACTED_KEYS = new Set([
  "apikey",
  "api_key",
  "openai_api_key",
  "authorization",
  "secret",
  "secretstring",
  "password",
  "prompt",
]);

/**
 * Builds the service's Powertools logger from config (POWERTOOLS_SERVICE_NAME, POWERTOOLS_LOG_LEVEL),
 * with the {@link REDACTED_KEYS} replacer. The one way a logger is made in functions/ and shared/.
 */
export function createLogger(config: Config["observability"]): Logger {
  return new Logger({
    serviceName: config.serviceName,
    logLevel: config.logLevel,
    jsonReplacerFn: (key, value) => (REDACTED_KEYS.has(key.toLowerCase()) ? "[REDACTED]" : value),
  });
}

/**
 * Builds the logger ({@link createLogger}) and metrics from config (POWERTOOLS_SERVICE_NAME,
 * POWERTOOLS_METRICS_NAMESPACE, POWERTOOLS_LOG_LEVEL).
 */
export function createObservability(config: Config["observability"]): Observability {
  const logger = createLogger(config);
  const metrics = new Metrics({ namespace: config.metricsNamespace, serviceName: config.serviceName });
  return { logger, metrics };
}

/**
 * Metrics of one finished run, stored with the dimension `status` (the run's status) and published at
 * the end of the invocation: `Runs` (Count 1), `Cycles` (Count), `PromptTokens`, `CompletionTokens`,
 * `TotalTokens` (Count), `RunLatency` (Milliseconds).
 */
export function recordRunMetrics(
  metrics: Metrics,
  outcome: Pick<RunOutcome, "status" | "cycles" | "usage" | "durationMs">,
): void {
  metrics.addDimension("status", outcome.status);
  metrics.addMetric("Runs", MetricUnit.Count, 1);
  metrics.addMetric("Cycles", MetricUnit.Count, outcome.cycles);
  metrics.addMetric("PromptTokens", MetricUnit.Count, outcome.usage.promptTokens);
  metrics.addMetric("CompletionTokens", MetricUnit.Count, outcome.usage.completionTokens);
  metrics.addMetric("TotalTokens", MetricUnit.Count, outcome.usage.totalTokens);
  metrics.addMetric("RunLatency", MetricUnit.Milliseconds, outcome.durationMs);
}

/**
 * Metrics of one tool result, emitted at once (Powertools single metrics, one EMF line each) with the
 * dimensions `toolName` and `status` (success, validation_error, permission_denied, business_error,
 * fatal_error): `ToolResults` (Count 1) and `ToolLatency` (Milliseconds, the handler's wall time).
 * A call that came over MCP (`surface` "mcp") has the dimension `surface: mcp` as well.
 */
export function recordToolResultMetric(metrics: Metrics, result: ToolResult, surface?: "mcp"): void {
  const dimensions = {
    toolName: result.metadata.toolName,
    status: result.status,
    ...(surface ? { surface } : {}),
  };
  metrics.singleMetric().addDimensions(dimensions).addMetric("ToolResults", MetricUnit.Count, 1);
  metrics
    .singleMetric()
    .addDimensions(dimensions)
    .addMetric("ToolLatency", MetricUnit.Milliseconds, result.metadata.latencyMs);
}

/**
 * Counts one problem response (`ProblemResponses`, Count 1) with the dimension `code` (the stable
 * problem code, e.g. STORE_UNAVAILABLE), emitted at once.
 */
export function recordProblemMetric(metrics: Metrics, code: string): void {
  metrics.singleMetric().addDimension("code", code).addMetric("ProblemResponses", MetricUnit.Count, 1);
}

/**
 * Publishes the invocation's stored metrics as one EMF line (nothing when none were stored) and clears
 * the invocation's dimensions. Call once at the end of every invocation.
 */
export function flushMetrics(metrics: Metrics): void {
  if (metrics.hasStoredMetrics()) metrics.publishStoredMetrics();
  else metrics.clearDimensions();
}

/**
 * The run hook that logs an internal failure at ERROR ("internal failure": source, name, code, detail),
 * the one place the text the model and the client do not get (a tool's error and cause chain, a failed
 * approval check, the provider's message) is kept.
 */
export function logInternalFailure(logger: Logger): (failure: InternalFailure) => void {
  return (failure) => logger.error("internal failure", { ...failure });
}

/**
 * What a cycle's tool result lines add: `surface` "mcp" for a call that came over MCP (also a metric
 * dimension), `replayed` for a result replayed from an earlier call with the same idempotency key.
 */
export interface ToolResultLabels {
  surface: "mcp";
  replayed: boolean;
}

/**
 * Logs each tool result of a cycle (INFO "tool result": cycle, toolName, toolCallId, status, error code, latencyMs,
 * idempotencyKey, and the {@link ToolResultLabels}; never arguments or data) and records its metrics
 * ({@link recordToolResultMetric}).
 */
export function observeToolResults(
  observability: Observability,
  record: CycleRecord,
  labels?: ToolResultLabels,
): void {
  for (const call of record.toolCalls) {
    observability.logger.info("tool result", {
      cycle: record.cycle,
      toolName: call.result.metadata.toolName,
      toolCallId: call.id,
      status: call.result.status,
      errorCode: call.result.error?.code ?? null,
      latencyMs: call.result.metadata.latencyMs,
      idempotencyKey: call.result.metadata.idempotencyKey,
      ...labels,
    });
    recordToolResultMetric(observability.metrics, call.result, labels?.surface);
  }
}
