import { inspect } from "node:util";
import type { SecurityContext } from "../identity.js";
import { isStoreUnavailable } from "../store/errors.js";
import { DeadlineExceededError, raceAbort } from "./deadline.js";
import { toolIdempotencyKey } from "./idempotency-key.js";
import type { ToolError, ToolResult, ToolStatus } from "./result.js";
import {
  strictSchemaOf,
  ToolBusinessError,
  type ToolCallRequest,
  type ToolContext,
  type ToolDefinition,
  ToolDefinitionError,
} from "./tool.js";
import { describeIssue, inexactNumberIssues, toolArgumentsText } from "./tool-arguments.js";
import { toolSpan } from "./trace-spans.js";
import { zodIssues } from "./zod-issues.js";

export type { ToolCallRequest } from "./tool.js";
export { zodIssues } from "./zod-issues.js";

/**
 * An internal failure the model and the API client never see the text of (they get a stable code and a
 * fixed sentence): for the logs only.
 * - `source`: a tool's thrown error, a failed approval check, or the model provider's failure
 * - `name`: the tool (or "model"); `code`: the stable code the model and client were given
 * - `detail`: the full text ({@link describeThrown}: name, message, cause chain; the provider's message)
 */
export interface InternalFailure {
  source: "tool" | "approval_check" | "model";
  name: string;
  code: string;
  detail: string;
}

/** Hands `failure` to `report` (the run's `onInternalFailure` hook); a hook that throws is ignored. */
export function reportInternalFailure(
  report: ((failure: InternalFailure) => void) | undefined,
  failure: InternalFailure,
): void {
  try {
    report?.(failure);
  } catch {
    // Observers never change a run.
  }
}

/**
 * Per-call context the loop hands the dispatcher.
 * - `runScope`: the client's Idempotency-Key, else the run id (see `toolIdempotencyKey`)
 * - `occurrence`: index of this call among identical calls in the same assistant turn
 * - `signal`: the run's deadline signal
 * - `remainingMs`: ms left before the run's deadline, read when the call is about to start; a tool whose
 *   `timeoutMs` is longer than this is not started (omitted: no such check)
 * - `onInternalFailure`: gets the detail of a TOOL_FAILED / STORE_UNAVAILABLE result (for the logs)
 */
export interface DispatchContext {
  runId: string;
  runScope: string;
  occurrence: number;
  signal: AbortSignal;
  remainingMs?: () => number;
  onInternalFailure?: ((failure: InternalFailure) => void) | undefined;
}

/** Tools by name. Build it once with {@link createRegistry}. */
export type ToolRegistry = ReadonlyMap<string, ToolDefinition>;

/**
 * Builds a registry from tool definitions, converting each schema to OpenAI strict JSON Schema now
 * (a tool built without `defineTool` is checked here too).
 * @throws ToolDefinitionError when two tools share a name, or a schema is outside the strict subset
 */
export function createRegistry(tools: readonly ToolDefinition[]): ToolRegistry {
  const registry = new Map<string, ToolDefinition>();
  for (const tool of tools) {
    if (registry.has(tool.name)) throw new ToolDefinitionError(`Duplicate tool name "${tool.name}".`);
    strictSchemaOf(tool);
    registry.set(tool.name, tool);
  }
  return registry;
}

/** Whether the caller holds the permission `tool` requires (a tool requiring none is open to every caller). */
function mayCall(tool: ToolDefinition, security: SecurityContext): boolean {
  return !tool.requiredPermission || security.permissions.includes(tool.requiredPermission);
}

/**
 * The tools of `registry` the caller may call, in registry order: those requiring no permission and
 * those whose `requiredPermission` is among `security.permissions`. These are the tools a run offers the
 * model (and an MCP server lists); a tool withheld here is not described to the model at all, so a model
 * is never invited to call what the caller may not. Offering is not authorizing: {@link prepareToolCall}
 * still checks the permission of every call, and a call to a withheld tool is `permission_denied`.
 */
export function toolsAllowedFor(registry: ToolRegistry, security: SecurityContext): ToolDefinition[] {
  return [...registry.values()].filter((tool) => mayCall(tool, security));
}

/**
 * The full text of anything thrown: an Error's name, message and cause chain (AggregateError's inner
 * errors too), a string as is, any other value inspected. Never empty, never "{}" or "[object Object]".
 */
export function describeThrown(error: unknown): string {
  if (error instanceof Error) {
    let text = error.message ? `${error.name}: ${error.message}` : error.name;
    if (error instanceof AggregateError && error.errors.length > 0) {
      text += ` [${error.errors.map(describeThrown).join("; ")}]`;
    }
    if (error.cause !== undefined) text += ` (cause: ${describeThrown(error.cause)})`;
    return text;
  }
  if (typeof error === "string") return error || "(empty string thrown)";
  return inspect(error, { depth: 3, breakLength: Number.POSITIVE_INFINITY });
}

/**
 * The result of a tool call that was never started (its turn or run went over a budget, or the run had
 * no time left for it): a failed {@link ToolResult} with `details.started: false` and
 * `details.mayHaveCommitted: false`, so every tool_call id still gets a tool message.
 */
export function notStartedResult(
  call: ToolCallRequest,
  status: Exclude<ToolStatus, "success">,
  error: { code: string; message: string; retryable: boolean; details?: Record<string, unknown> },
): ToolResult {
  return toolResult(call, status, null, {
    ...error,
    details: { ...error.details, started: false, mayHaveCommitted: false },
  });
}

/** A tool error as the dispatcher builds it: `details` defaults to {}. */
type ToolErrorInput = Omit<ToolError, "details"> & { details?: Record<string, unknown> };

/** The {@link ToolResult} of `call` (`error` is dropped for a success; latencyMs in ms). */
function toolResult(
  call: ToolCallRequest,
  status: ToolStatus,
  data: unknown,
  error: ToolErrorInput,
  latencyMs = 0,
  idempotencyKey: string | null = null,
): ToolResult {
  return {
    status,
    data,
    error: status === "success" ? null : { ...error, details: error.details ?? {} },
    metadata: { toolName: call.name, toolCallId: call.id, latencyMs, idempotencyKey },
  };
}

/**
 * A tool call that passed every check made before it may run (tool known, permission held, arguments
 * parsed and valid): `args` is zod's output (trimmed, defaults applied, nulls of optional fields removed),
 * the identity a mutating tool's idempotency key is built from.
 */
export interface PreparedToolCall {
  call: ToolCallRequest;
  tool: ToolDefinition;
  args: unknown;
}

/**
 * The checks of a tool call that need no clock and no I/O, in this order: unknown tool → permission →
 * malformed arguments → JSON.parse (blank text as `{}`) → numbers written with more digits than a double
 * holds → strip nulls of optional fields → zod safeParse. Returns the failed
 * {@link ToolResult} (UNKNOWN_TOOL, PERMISSION_DENIED, MALFORMED_ARGUMENTS, INVALID_JSON,
 * INVALID_ARGUMENTS with details.issues), or the call ready for {@link runPreparedCall}. Never throws.
 */
export function prepareToolCall(
  call: ToolCallRequest,
  registry: ToolRegistry,
  security: SecurityContext,
): { kind: "failed"; result: ToolResult } | ({ kind: "ready" } & PreparedToolCall) {
  const tool = registry.get(call.name);
  if (!tool) {
    // The tools offered to this caller: naming a withheld one would invite a call that is refused.
    const available = toolsAllowedFor(registry, security).map((allowed) => allowed.name);
    return failed(call, "validation_error", {
      code: "UNKNOWN_TOOL",
      message: `There is no tool named "${call.name}". Available tools: ${available.join(", ")}.`,
      details: { available },
      retryable: true,
    });
  }
  if (!mayCall(tool, security)) {
    return failed(call, "permission_denied", {
      code: "PERMISSION_DENIED",
      message: `The caller lacks the permission "${String(tool.requiredPermission)}" that ${tool.name} requires.`,
      details: { requiredPermission: tool.requiredPermission },
      retryable: false,
    });
  }
  if (call.malformedArguments !== undefined) {
    return failed(call, "validation_error", {
      code: "MALFORMED_ARGUMENTS",
      message: `The arguments must be a JSON object encoded as a string; they arrived as a JSON ${call.malformedArguments} (${call.arguments.slice(0, 200)}). The tool did not run. Send the arguments as one JSON object.`,
      details: { received: call.malformedArguments },
      retryable: true,
    });
  }
  let raw: unknown;
  const text = toolArgumentsText(call.arguments);
  try {
    raw = JSON.parse(text);
  } catch (error) {
    return failed(call, "validation_error", {
      code: "INVALID_JSON",
      message: `The arguments are not complete, valid JSON (${(error as Error).message}); the tool did not run. Send the whole JSON object again.`,
      details: { received: call.arguments.slice(0, 200) },
      retryable: true,
    });
  }
  // A number JSON.parse rounded is not what the model wrote: refused before the schema sees the double.
  const inexact = inexactNumberIssues(text, raw);
  if (inexact.length > 0) {
    return failed(call, "validation_error", {
      code: "INVALID_ARGUMENTS",
      message: `Invalid arguments for ${tool.name}: ${inexact.map((i) => describeIssue(i)).join("; ")}`,
      details: { issues: inexact },
      retryable: true,
    });
  }
  const input = strictSchemaOf(tool).stripNulls(raw);
  const parsed = tool.inputSchema.safeParse(input);
  if (!parsed.success) {
    const issues = zodIssues(parsed.error, input);
    return failed(call, "validation_error", {
      code: "INVALID_ARGUMENTS",
      message: `Invalid arguments for ${tool.name}: ${issues.map((i) => describeIssue(i)).join("; ")}`,
      details: { issues },
      retryable: true,
    });
  }
  return { kind: "ready", call, tool, args: parsed.data };
}

/** A call {@link prepareToolCall} refused, with its failed {@link ToolResult}. */
function failed(call: ToolCallRequest, status: ToolStatus, error: ToolErrorInput) {
  return { kind: "failed" as const, result: toolResult(call, status, null, error) };
}

/**
 * Runs one tool call: {@link prepareToolCall}, then {@link runPreparedCall}. Never throws: every outcome
 * is a {@link ToolResult} in one of the fixed categories, each error with code, message, details and
 * `retryable` (codes as the two functions list). The call runs in its `execute_tool` span.
 */
export async function dispatchToolCall(
  call: ToolCallRequest,
  registry: ToolRegistry,
  security: SecurityContext,
  context: DispatchContext,
): Promise<ToolResult> {
  return toolSpan(call, async () => {
    const prepared = prepareToolCall(call, registry, security);
    if (prepared.kind === "failed") return prepared.result;
    return runPreparedCall(prepared, security, context);
  });
}

/**
 * Runs a prepared call: time check ({@link refusalByTime}) → execute (under the run's signal and the
 * tool's own timeout). A mutating tool's idempotency key is built from `context.occurrence` and the
 * prepared (validated) arguments. Never throws.
 * Codes: a tool's business code; DEADLINE_EXCEEDED, TOOL_TIMEOUT, STORE_UNAVAILABLE and TOOL_FAILED as
 * {@link fatalErrorOf} lists them (details.started false when the call was not started at all).
 */
export async function runPreparedCall(
  prepared: PreparedToolCall,
  security: SecurityContext,
  context: DispatchContext,
): Promise<ToolResult> {
  const { call, tool, args } = prepared;
  const refusal = refusalByTime(tool, context);
  if (refusal) return notStartedResult(call, "fatal_error", refusal);
  const operationKey = operationKeyFor(prepared, security, context);
  const idempotencyKey = tool.isMutating ? operationKey() : null;
  const toolTimeout = tool.timeoutMs === undefined ? undefined : AbortSignal.timeout(tool.timeoutMs);
  const signal = toolTimeout ? AbortSignal.any([context.signal, toolTimeout]) : context.signal;
  const started = performance.now();
  try {
    const handlerContext = new HandlerContext(
      context.runId,
      idempotencyKey ?? undefined,
      operationKey,
      signal,
    );
    const data = await raceAbort(tool.handler(args as never, security, handlerContext), signal);
    return ended(call, started, idempotencyKey, "success", data, { code: "", message: "", retryable: false });
  } catch (error) {
    if (error instanceof ToolBusinessError) {
      const { code, message, details } = error;
      const failure = { code, message, details, retryable: false };
      return ended(call, started, idempotencyKey, "business_error", null, failure);
    }
    const failure = fatalErrorOf(error, tool, context, toolTimeout?.aborted === true);
    return ended(call, started, idempotencyKey, "fatal_error", null, failure);
  }
}

/**
 * The {@link ToolContext} a handler gets: `operationKey` is a getter on the prototype, computed on first
 * read. A class, not an object literal with a getter: on Node 20 such a literal is built by the runtime,
 * ~1.5 µs a call, where a class instance costs a few dozen nanoseconds.
 */
class HandlerContext implements ToolContext {
  readonly #operationKey: () => string;
  constructor(
    readonly runId: string,
    readonly idempotencyKey: string | undefined,
    operationKey: () => string,
    readonly signal: AbortSignal,
  ) {
    this.#operationKey = operationKey;
  }

  get operationKey(): string {
    return this.#operationKey();
  }
}

/** The {@link ToolResult} of a call that ran, timed from `started` (`performance.now()`, ms). */
function ended(
  call: ToolCallRequest,
  started: number,
  idempotencyKey: string | null,
  status: ToolStatus,
  data: unknown,
  error: ToolErrorInput,
): ToolResult {
  return toolResult(call, status, data, error, Math.round(performance.now() - started), idempotencyKey);
}

/**
 * Why a call must not start (DEADLINE_EXCEEDED, `started` false): the run's deadline has passed, or the
 * tool's `timeoutMs` does not fit in the time left; undefined when it may start.
 */
function refusalByTime(tool: ToolDefinition, context: DispatchContext): ToolErrorInput | undefined {
  if (context.signal.aborted) {
    return {
      code: "DEADLINE_EXCEEDED",
      message: `${tool.name} was not started: the run's deadline had passed.`,
      retryable: false,
    };
  }
  const remainingMs = context.remainingMs?.();
  if (tool.timeoutMs === undefined || remainingMs === undefined || tool.timeoutMs <= remainingMs) return;
  return {
    code: "DEADLINE_EXCEEDED",
    message: `${tool.name} was not started: it may take up to ${tool.timeoutMs} ms and the run has ${remainingMs} ms left before its deadline.`,
    details: { timeoutMs: tool.timeoutMs, remainingMs },
    retryable: false,
  };
}

/**
 * The call's operation key, computed on first use: it costs two canonical JSON forms and two SHA-256,
 * so only a mutating tool (its idempotency key) or a handler that reads `context.operationKey` pays it.
 */
function operationKeyFor(
  prepared: PreparedToolCall,
  security: SecurityContext,
  context: DispatchContext,
): () => string {
  let operationKey: string | undefined;
  return () =>
    (operationKey ??= toolIdempotencyKey({
      tenantId: security.tenantId,
      userId: security.userId,
      runScope: context.runScope,
      toolName: prepared.tool.name,
      args: prepared.args,
      occurrence: context.occurrence,
    }));
}

/**
 * The error of a call that threw something other than a business error (details.started true):
 * DEADLINE_EXCEEDED at the run's deadline (details.mayHaveCommitted), TOOL_TIMEOUT after the tool's own
 * timeout (retryable for read tools), STORE_UNAVAILABLE when the data store could not serve the tool after
 * the AWS SDK's own retries (shared/store/errors.ts `isStoreUnavailable`; retryable, since a mutating tool's
 * idempotency key makes the same call safe to repeat), TOOL_FAILED for anything else. The last two get a
 * fixed sentence; the error's own text goes to `context.onInternalFailure` only.
 */
function fatalErrorOf(
  error: unknown,
  tool: ToolDefinition,
  context: DispatchContext,
  timedOut: boolean,
): ToolErrorInput {
  const effect = tool.isMutating
    ? "it may already have had its effect (retrying with the same idempotency key is safe)"
    : "it has no side effects";
  if (error instanceof DeadlineExceededError || context.signal.aborted) {
    return {
      code: "DEADLINE_EXCEEDED",
      message: `${tool.name} was stopped at the run's deadline; ${effect}.`,
      details: { started: true, mayHaveCommitted: tool.isMutating },
      retryable: false,
    };
  }
  if (timedOut) {
    return {
      code: "TOOL_TIMEOUT",
      message: `${tool.name} was stopped after its timeout of ${tool.timeoutMs} ms; ${effect}.`,
      details: { started: true, timeoutMs: tool.timeoutMs, mayHaveCommitted: tool.isMutating },
      retryable: !tool.isMutating,
    };
  }
  // The model and the client get the code and a fixed sentence; the error's text (messages, cause
  // chain: table names, hosts, SQL, stack frames) goes to the logs only.
  const unavailable = isStoreUnavailable(error);
  const code = unavailable ? "STORE_UNAVAILABLE" : "TOOL_FAILED";
  reportInternalFailure(context.onInternalFailure, {
    source: "tool",
    name: tool.name,
    code,
    detail: describeThrown(error),
  });
  return {
    code,
    message: unavailable
      ? `${tool.name} could not reach the data store; ${effect}. The same call can be made again.`
      : `${tool.name} failed with an internal error; ${effect}.`,
    details: { mayHaveCommitted: tool.isMutating },
    retryable: unavailable,
  };
}
