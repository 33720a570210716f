import { randomFillSync } from "node:crypto";
import { context, type ProxyTracerProvider, trace } from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-http";
import { resourceFromAttributes } from "@opentelemetry/resources";
import {
  BatchSpanProcessor,
  ConsoleSpanExporter,
  type IdGenerator,
  SimpleSpanProcessor,
  type SpanExporter,
  type SpanProcessor,
  TracerProvider,
} from "@opentelemetry/sdk-trace";
import { configureTracing, presetIds } from "../tracing.js";

/**
 * Where spans go, chosen at the entry point (shared/telemetry/entry.ts reads it from config):
 * - `otlp`: OTLP/HTTP (JSON) to `endpoint` + `/v1/traces`, batched, flushed before each invocation ends;
 *   `timeoutMs` bounds each export, its retries included (default: the exporter's 10 s)
 * - `console`: the SDK's console exporter (one object per span on stdout)
 * - `exporter`: any SpanExporter (tests' InMemorySpanExporter, `npm start -- --trace`'s tree printer),
 *   exported span by span, or batched with `batch` (the benchmark's)
 */
export type TracingExport =
  | { kind: "otlp"; endpoint: string; timeoutMs?: number }
  | { kind: "console" }
  | { kind: "exporter"; exporter: SpanExporter; batch?: boolean };

/** The running SDK: `flush` exports what has ended (call it before an invocation returns). */
export interface TracingSdk {
  provider: TracerProvider;
  flush(): Promise<void>;
  shutdown(): Promise<void>;
  /** Whether it is still the process's registered provider (no other SDK replaced it, nothing disabled it). */
  registered(): boolean;
}

/**
 * The SDK's id generator, except that a span started while {@link presetIds} holds ids gets them:
 * the agent span of a durable run is emitted by the invocation that finishes the run with the id its
 * children in earlier invocations already named as their parent (shared/tracing.ts `emitSpan`).
 */
export const presetAwareIds: IdGenerator = {
  generateTraceId: () => presetIds.traceId ?? randomHex(16),
  generateSpanId: () => presetIds.spanId ?? randomHex(8),
};

/**
 * Random bytes for ids, drawn from the OS's CSPRNG 4 KiB at a time: a `randomBytes` call per id would be a
 * system call per span, the largest single cost of a traced cycle (bench P1 with tracing on).
 */
const POOL = Buffer.alloc(4096);
let poolAt = POOL.length;

/** `bytes` fresh random bytes as lower-case hex (never all zero: the W3C trace context forbids it). */
export function randomHex(bytes: number): string {
  for (;;) {
    if (poolAt + bytes > POOL.length) {
      randomFillSync(POOL);
      poolAt = 0;
    }
    const hex = POOL.toString("hex", poolAt, poolAt + bytes);
    poolAt += bytes;
    if (/[^0]/.test(hex)) return hex;
  }
}

/**
 * Starts the OpenTelemetry SDK for this process and registers it globally (tracer provider and an
 * AsyncLocalStorage context manager, replacing any registered before: tests start one per file), then
 * turns boundloop's spans on ({@link configureTracing}).
 * @param serviceName `service.name` of the resource (POWERTOOLS_SERVICE_NAME)
 * @param captureContent the opt-in content attributes (TRACE_CONTENT)
 */
export function startTracing(
  exportTo: TracingExport,
  serviceName: string,
  captureContent: boolean,
): TracingSdk {
  const processor: SpanProcessor =
    exportTo.kind === "otlp"
      ? new BatchSpanProcessor({
          exporter: new OTLPTraceExporter({
            url: `${exportTo.endpoint.replace(/\/+$/, "")}/v1/traces`,
            ...(exportTo.timeoutMs ? { timeoutMillis: exportTo.timeoutMs } : {}),
          }),
          ...(exportTo.timeoutMs ? { exportTimeoutMillis: exportTo.timeoutMs } : {}),
        })
      : exportTo.kind === "exporter" && exportTo.batch
        ? new BatchSpanProcessor({ exporter: exportTo.exporter })
        : new SimpleSpanProcessor({
            exporter: exportTo.kind === "console" ? new ConsoleSpanExporter() : exportTo.exporter,
          });
  const functionName = process.env.AWS_LAMBDA_FUNCTION_NAME;
  const provider = new TracerProvider({
    resource: resourceFromAttributes({
      "service.name": serviceName,
      ...(functionName ? { "cloud.provider": "aws", "faas.name": functionName } : {}),
    }),
    idGenerator: presetAwareIds,
    spanProcessors: [processor],
  });
  trace.disable();
  context.disable();
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  trace.setGlobalTracerProvider(provider);
  configureTracing({ enabled: true, captureContent });
  return {
    provider,
    flush: () => provider.forceFlush(),
    registered: () => (trace.getTracerProvider() as ProxyTracerProvider).getDelegate() === provider,
    shutdown: async () => {
      configureTracing({ enabled: false, captureContent: false });
      await provider.shutdown();
      trace.disable();
      context.disable();
    },
  };
}
