import {
  type Attributes,
  type AttributeValue,
  type Context,
  context,
  type Span,
  SpanKind,
  type SpanOptions,
  SpanStatusCode,
  type TimeInput,
  trace,
} from "@opentelemetry/api";
import type { CarriedTrace } from "./carried-trace.js";

/**
 * The Tracer port: every span boundloop emits goes through here, over `@opentelemetry/api` only (the
 * SDK and its exporter are wired at the entry points, shared/telemetry/sdk.ts). Span names, kinds and
 * `gen_ai.*` attributes follow the OpenTelemetry GenAI semantic conventions (Development status; the
 * version is named in docs/tracing.md); boundloop's own attributes are under {@link ATTR} `boundloop.`.
 * With tracing off nothing is registered: every helper here runs its work without a span.
 */

/** The instrumentation scope of every boundloop span. */
export const TRACER_NAME = "boundloop";

/** Attribute keys: the GenAI conventions' `gen_ai.*`, the general `error.type`, and boundloop's own. */
export const ATTR = {
  operationName: "gen_ai.operation.name",
  providerName: "gen_ai.provider.name",
  agentName: "gen_ai.agent.name",
  agentId: "gen_ai.agent.id",
  conversationId: "gen_ai.conversation.id",
  requestModel: "gen_ai.request.model",
  finishReasons: "gen_ai.response.finish_reasons",
  inputTokens: "gen_ai.usage.input_tokens",
  outputTokens: "gen_ai.usage.output_tokens",
  toolName: "gen_ai.tool.name",
  toolCallId: "gen_ai.tool.call.id",
  toolType: "gen_ai.tool.type",
  /** Opt-in content (TRACE_CONTENT): the chat request's messages, the reply, tool arguments and results. */
  inputMessages: "gen_ai.input.messages",
  outputMessages: "gen_ai.output.messages",
  toolArguments: "gen_ai.tool.call.arguments",
  toolResult: "gen_ai.tool.call.result",
  errorType: "error.type",
  serverAddress: "server.address",
  serverPort: "server.port",
  tenant: "boundloop.tenant.id",
  runId: "boundloop.run.id",
  runStatus: "boundloop.run.status",
  runCycles: "boundloop.run.cycles",
  runDurable: "boundloop.run.durable",
  /**
   * The answer's numbers no tool result or prompt gave (docs/evals.md, Grounding), as written: content,
   * set only with content capture on (TRACE_CONTENT).
   */
  answerUngrounded: "boundloop.answer.ungrounded",
  /** How many numbers of the answer no tool result or prompt gave (always set when any). */
  answerUngroundedCount: "boundloop.answer.ungrounded_count",
  answerGroundingAction: "boundloop.answer.grounding_action",
  cycle: "boundloop.cycle",
  toolStatus: "boundloop.tool.status",
  idempotencyKey: "boundloop.tool.idempotency_key",
  errorCode: "boundloop.error.code",
  approvalId: "boundloop.approval.id",
  approvalDecision: "boundloop.approval.decision",
  policyDecision: "boundloop.policy.decision",
  policyIds: "boundloop.policy.ids",
  policySource: "boundloop.policy.source",
  policyVersion: "boundloop.policy.version",
  policyShadowDecision: "boundloop.policy.shadow.decision",
  policyShadowIds: "boundloop.policy.shadow.ids",
  /** A model call's or a run's cost (docs/quotas.md "Cost"): six decimal places, and its currency. */
  costAmount: "boundloop.cost.amount",
  costCurrency: "boundloop.cost.currency",
} as const;

/**
 * How spans are made, set once by the entry point's wiring ({@link configureTracing}).
 * - `enabled`: a tracer provider is registered (our SDK, or an ADOT layer's); off, no span is started
 * - `captureContent`: prompts, answers, tool arguments and results go on spans (the conventions'
 *   opt-in attributes); off by default, and never a secret either way
 */
export interface TracingOptions {
  enabled: boolean;
  captureContent: boolean;
}

let options: TracingOptions = { enabled: false, captureContent: false };

/** Sets the {@link TracingOptions} of this process (entry points and tests). */
export function configureTracing(next: TracingOptions): void {
  options = { ...next };
}

/** The current {@link TracingOptions}. */
export function tracingOptions(): Readonly<TracingOptions> {
  return options;
}

/** boundloop's tracer (the registered provider's, or the API's no-op one). */
export function tracer() {
  return trace.getTracer(TRACER_NAME);
}

/** A span kind of the conventions, re-exported so callers need no API import. */
export const Kind = SpanKind;

/**
 * Runs `fn` inside a span named `name` (made active, so spans started in `fn` become its children),
 * then ends it. A throw marks the span error (`error.type` = the error's name) and is rethrown. With
 * tracing off `fn` runs with `undefined` and no span.
 * @param parent the parent context; default the active one
 */
export async function inSpan<T>(
  name: string,
  spanOptions: SpanOptions,
  fn: (span: Span | undefined) => Promise<T>,
  parent?: Context,
): Promise<T> {
  if (!options.enabled) return fn(undefined);
  const span = tracer().startSpan(name, spanOptions, parent ?? context.active());
  try {
    return await context.with(trace.setSpan(parent ?? context.active(), span), () => fn(span));
  } catch (error) {
    failSpan(span, error instanceof Error ? error.name : "_OTHER");
    throw error;
  } finally {
    span.end();
  }
}

/**
 * Marks a span failed: status error and `error.type` = `code`, boundloop's stable code (a problem code,
 * a tool error code, a run status), never an error's text (which may hold internal detail).
 */
export function failSpan(span: Span | undefined, code: string): void {
  if (!span) return;
  span.setStatus({ code: SpanStatusCode.ERROR });
  span.setAttributes({ [ATTR.errorType]: code, [ATTR.errorCode]: code });
}

/** Sets attributes, skipping undefined values. */
export function setAttributes(
  span: Span | undefined,
  attributes: Record<string, AttributeValue | undefined>,
) {
  if (!span) return;
  const defined: Attributes = {};
  for (const [key, value] of Object.entries(attributes)) if (value !== undefined) defined[key] = value;
  span.setAttributes(defined);
}

/**
 * Sets an opt-in content attribute (JSON text of `value`) when content capture is on; the value is
 * built only then.
 */
export function setContent(span: Span | undefined, key: string, value: () => unknown): void {
  if (!span || !options.captureContent) return;
  span.setAttribute(key, JSON.stringify(value()) ?? "null");
}

/**
 * A span emitted whole after the fact, with its own start and end (epoch ms): the approval wait of a
 * durable run, whose start and end happened in different invocations, or the agent span of a durable
 * run, ended by the invocation that finishes it. With tracing off nothing is emitted.
 * @param preset the ids to give it (see {@link startSpanWithIds})
 */
export function emitSpan(
  name: string,
  spanOptions: SpanOptions & { startTime: TimeInput },
  endTime: TimeInput,
  setup: (span: Span) => void,
  parent?: Context,
  preset?: { traceId?: string; spanId?: string },
): void {
  if (!options.enabled) return;
  const span = startSpanWithIds(name, spanOptions, parent ?? context.active(), preset);
  setup(span);
  span.end(endTime);
}

/**
 * Starts a span with preset ids: `spanId` (16 hex digits), and `traceId` (32) when it has no parent,
 * so spans emitted before it, possibly in other invocations, can name it as their parent. Honoured by
 * the SDK's id generator at the entry point (shared/telemetry/sdk.ts); an SDK that does not read
 * {@link presetIds} (an ADOT layer's) gives new ids: the span is still emitted.
 */
export function startSpanWithIds(
  name: string,
  spanOptions: SpanOptions,
  parent: Context,
  preset: { traceId?: string | undefined; spanId?: string | undefined } = {},
): Span {
  presetIds.traceId = preset.traceId;
  presetIds.spanId = preset.spanId;
  try {
    return tracer().startSpan(name, spanOptions, parent);
  } finally {
    presetIds.traceId = undefined;
    presetIds.spanId = undefined;
  }
}

/**
 * The ids the next span started synchronously must get (set by {@link startSpanWithIds} around one
 * `startSpan`); read by the SDK's id generator at the entry point (shared/telemetry/sdk.ts).
 */
export const presetIds: { traceId: string | undefined; spanId: string | undefined } = {
  traceId: undefined,
  spanId: undefined,
};

/** A span context carried in a durable execution's input (shared/carried-trace.ts). */
export type { CarriedTrace } from "./carried-trace.js";

/** The active context with `carried`'s agent span as its (remote) parent span. */
export function contextOf(carried: CarriedTrace, base: Context = context.active()): Context {
  return trace.setSpanContext(base, {
    traceId: carried.traceId,
    spanId: carried.spanId,
    traceFlags: carried.traceFlags,
    isRemote: true,
  });
}

/** The context the agent span of `carried` itself is a child of (its parent span, or none). */
export function parentContextOf(carried: CarriedTrace, base: Context = context.active()): Context {
  if (!carried.parentSpanId) return trace.deleteSpan(base);
  return trace.setSpanContext(base, {
    traceId: carried.traceId,
    spanId: carried.parentSpanId,
    traceFlags: carried.traceFlags,
    isRemote: true,
  });
}

/** Runs `fn` with `ctx` active (or with the active context when `ctx` is undefined). */
export function withContext<T>(ctx: Context | undefined, fn: () => T): T {
  return ctx ? context.with(ctx, fn) : fn();
}
