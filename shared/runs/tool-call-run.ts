/**
 * One tool call asked for directly (an MCP `tools/call`), run as a run of one cycle through the same
 * lifecycle as every other run (shared/runs/lifecycle.ts): its record in `GET /v1/runs` and the console,
 * its audit step, its events, its spans, its log lines and metrics. What the call itself goes through is
 * the loop's: the dispatcher's validation, the tool turn's approval check (shared/agent/tool-turn.ts), the
 * one idempotency engine (shared/runs/exactly-once.ts) and the one approval service
 * (shared/runs/approval-service.ts), in shared/runs/tool-call-once.ts. The protocol's names (where the
 * key travels, how a result is rendered) stay in the adapter (shared/mcp/).
 */
import { randomUUID } from "node:crypto";
import { Deadline } from "../agent/deadline.js";
import { withPolicy } from "../agent/decision.js";
import { notStartedResult, type PreparedToolCall, prepareToolCall } from "../agent/dispatcher.js";
import type { ToolResult } from "../agent/result.js";
import type { ToolCallRequest, ToolDefinition } from "../agent/tool.js";
import type { CycleRecord, RunOutcome } from "../agent/types.js";
import type { SecurityContext } from "../identity.js";
import { observeToolResults } from "../observability.js";
import { admitToolCall, finishBudget } from "../quotas/run-quota.js";
import { RunLifecycle } from "./lifecycle.js";
import { type CallInRun, runKeyed, runTurn, type ToolCallRunDeps } from "./tool-call-once.js";

export type { ToolCallRunDeps } from "./tool-call-once.js";

import { zeroUsage } from "../token-usage.js";

/** The `reason` of every one-cycle tool-call run's record (and the prefix of its audited prompt). */
export const TOOL_CALL_RUN_REASON = "mcp tools/call";

/**
 * One tool call as the adapter received it:
 * - `toolName`, `arguments`: as the protocol parsed them (validated here, by the dispatcher)
 * - `key`: the caller's idempotency key as sent (undefined: none; checked here: 1 to 255 printable ASCII)
 * - `keyField`: where the adapter read the key, for the errors that name it (`path`: a field path,
 *   `label`: how a client writes it)
 * - `remainingMs`: the Lambda's remaining time when the request arrived (ms; undefined outside Lambda)
 */
export interface ToolCallRunRequest {
  security: SecurityContext;
  toolName: string;
  arguments: unknown;
  key: unknown;
  keyField: { path: string; label: string };
  remainingMs?: number | undefined;
}

/**
 * What a tool-call run answers: the tool result (its `metadata.toolCallId` is the run's id), whether it
 * was replayed from an earlier call with the same key, and the tool (for the adapter's rendering of its
 * output schema; undefined for an unknown tool).
 */
export interface ToolCallRun {
  result: ToolResult;
  replayed: boolean;
  tool: ToolDefinition | undefined;
}

/**
 * Runs one tool call as a one-cycle run (docs/mcp.md): start (the record, `running`), the guarded call
 * (shared/runs/tool-call-once.ts), the cycle's audit step, finish (`completed`, reason
 * {@link TOOL_CALL_RUN_REASON}, no model call: zero tokens). A store that fails before or around the
 * call gives fatal_error STORE_UNAVAILABLE (retryable; a fixed sentence, the error logged only). A replay
 * is a run of its own too. Never throws.
 */
export async function runToolCall(deps: ToolCallRunDeps, request: ToolCallRunRequest): Promise<ToolCallRun> {
  const { security } = request;
  const runId = `mcp_${randomUUID().replaceAll("-", "")}`;
  const budgetMs = Deadline.budgetMs(
    deps.config.limits.runTimeoutMs,
    request.remainingMs,
    deps.config.limits.deadlineReserveMs,
  );
  // The run's clock: its deadline, start, finish and duration go by the one its record is dated by.
  const deadline = new Deadline(budgetMs, deps.clock);
  const life = new RunLifecycle(deps, { runId, tenantId: security.tenantId, userId: security.userId });
  try {
    return await life.within({ durable: false, conversationId: runId }, () =>
      oneCycle(deps, request, { runId, life, deadline, budgetMs }),
    );
  } finally {
    deadline.dispose();
  }
}

/** The run of {@link runToolCall}: its id, lifecycle, deadline and budget (ms). */
interface ToolCallRunState {
  runId: string;
  life: RunLifecycle;
  deadline: Deadline;
  budgetMs: number;
}

/** {@link runToolCall} inside its observers' scope: start, the guarded call, the audit, finish. */
async function oneCycle(
  deps: ToolCallRunDeps,
  request: ToolCallRunRequest,
  run: ToolCallRunState,
): Promise<ToolCallRun> {
  const startedAt = deps.clock.now();
  const call = callOf(run.runId, request);
  const tool = deps.tools.get(request.toolName);
  // Admission at the door (runs per minute, runs in flight), as a run's: a refused call has run and
  // written nothing (no run record, no audit), only its log line and metric. Policy decisions over the
  // call are the tool turn's (shared/agent/tool-turn.ts), the loop's own.
  const door = await admitToolCall(deps.quotas, request.security, run.runId, run.deadline.at);
  if (door.kind === "refused") return refusedAtDoor(deps, call, door.error, tool);
  let answer: { result: ToolResult; replayed?: boolean | undefined };
  try {
    await run.life.start({
      prompt: `${TOOL_CALL_RUN_REASON} ${request.toolName}`,
      limits: { maxCycles: 1, runTimeoutMs: Math.max(1, run.budgetMs) },
      syncDeadlineAt: run.deadline.at,
    });
    answer = await guardedCall(deps, request, call, run);
  } catch (error) {
    deps.logger.error("tool call run failed", { toolName: request.toolName, error: error as Error });
    answer = { result: storeFailed(call) };
  } finally {
    await finishBudget(door.budget, deps.logger);
  }
  // A replayed result is this call's answer: it carries this run's id.
  const result = { ...answer.result, metadata: { ...answer.result.metadata, toolCallId: run.runId } };
  const replayed = answer.replayed === true;
  await audit(deps, run.life, { call, result, replayed, durationMs: deps.clock.now() - startedAt });
  return { result, replayed, tool };
}

/**
 * A call the quotas refused at the door: the retryable fatal_error (RATE_LIMITED with `retryAfterSeconds`
 * and the policy, or QUOTA_UNAVAILABLE) with the run's id, its "tool result" log line and metric only.
 */
function refusedAtDoor(
  deps: ToolCallRunDeps,
  call: ToolCallRequest,
  error: Parameters<typeof notStartedResult>[2],
  tool: ToolDefinition | undefined,
): ToolCallRun {
  const result = notStartedResult(call, "fatal_error", error);
  const record = { cycle: 1, toolCalls: [{ ...call, result }] } as Pick<CycleRecord, "cycle" | "toolCalls">;
  observeToolResults(deps, record as CycleRecord, { surface: "mcp", replayed: false });
  return { result, replayed: false, tool };
}

/** The call as the audit step and the dispatcher take it: its id is the run's, its arguments as JSON text. */
function callOf(runId: string, request: ToolCallRunRequest): ToolCallRequest {
  return { id: runId, name: request.toolName, arguments: argumentsText(request.arguments) ?? "" };
}

/**
 * Arguments as JSON text, or undefined when they cannot be written as JSON (nested deeper than the
 * process's stack allows: a RangeError, never an answer of its own).
 */
function argumentsText(args: unknown): string | undefined {
  try {
    return JSON.stringify(args ?? {});
  } catch {
    return undefined;
  }
}

/** The call after the dispatcher's checks: keyed (exactly once, approvals) or not. */
async function guardedCall(
  deps: ToolCallRunDeps,
  request: ToolCallRunRequest,
  call: ToolCallRequest,
  run: ToolCallRunState,
): Promise<{ result: ToolResult; replayed?: boolean | undefined }> {
  if (argumentsText(request.arguments) === undefined) return { result: unreadableArguments(call) };
  const prepared = prepareToolCall(call, deps.tools, request.security);
  if (prepared.kind === "failed") return { result: prepared.result };
  const context: CallInRun = {
    deps,
    security: request.security,
    prepared,
    deadline: run.deadline,
    life: run.life,
    runId: run.runId,
    keyField: request.keyField,
  };
  if (request.key !== undefined) return runKeyed(context, request.key);
  return { result: await withoutKey(context, prepared) };
}

/**
 * A call without a key: a read runs; a mutating tool runs only when its business key makes it once
 * (recordInvoice: one invoice per quote), and never when it needs approval (nothing could collect the
 * decision): validation_error IDEMPOTENCY_KEY_REQUIRED then, and nothing runs.
 */
async function withoutKey(context: CallInRun, prepared: PreparedToolCall): Promise<ToolResult> {
  const { tool } = prepared;
  if (tool.isMutating && !tool.businessKey) {
    return keyRequired(context, "changes data and has no business key of its own");
  }
  const turn = await runTurn(context, context.runId);
  // The policy decision that asked for the approval is this call's explanation, as on a keyed call.
  if (turn.pending)
    return withPolicy(keyRequired(context, "needs a person's approval"), turn.result.metadata.policy);
  return turn.result;
}

/** validation_error IDEMPOTENCY_KEY_REQUIRED naming the key's field; the tool did not run. */
function keyRequired(context: CallInRun, why: string): ToolResult {
  const { prepared, keyField } = context;
  return notStartedResult(prepared.call, "validation_error", {
    code: "IDEMPOTENCY_KEY_REQUIRED",
    message: `${prepared.tool.name} ${why}; send a key in ${keyField.label} (the same key again replays the result). The tool did not run.`,
    details: { path: keyField.path },
    retryable: true,
  });
}

/** validation_error INVALID_ARGUMENTS for arguments that cannot even be read (nested too deep). */
function unreadableArguments(call: ToolCallRequest): ToolResult {
  return notStartedResult(call, "validation_error", {
    code: "INVALID_ARGUMENTS",
    message: `The arguments of ${call.name} are nested too deeply to be read; the tool did not run.`,
    retryable: false,
  });
}

/** fatal_error STORE_UNAVAILABLE: a fixed sentence, never the store's error text. */
function storeFailed(call: ToolCallRequest): ToolResult {
  return notStartedResult(call, "fatal_error", {
    code: "STORE_UNAVAILABLE",
    message: `${call.name} could not be guarded: the data store failed. The same call, with the same key, can be made again.`,
    retryable: true,
  });
}

/**
 * The run's one cycle and its end, through the lifecycle: the audit step (`finishReason` "mcp", no
 * model call), the "tool result" log line and metrics with `surface: "mcp"`, then the outcome. A failed
 * write is logged and does not change the call's result (the lifecycle's rule for every run).
 */
async function audit(
  deps: ToolCallRunDeps,
  life: RunLifecycle,
  done: { call: ToolCallRequest; result: ToolResult; replayed: boolean; durationMs: number },
): Promise<void> {
  const { call, result, replayed, durationMs } = done;
  const record: CycleRecord = {
    cycle: 1,
    request: { messageCount: 0, toolsOffered: [call.name] },
    finishReason: "mcp",
    modelLatencyMs: 0,
    usage: zeroUsage(),
    toolCalls: [{ ...call, result }],
    outcome: "completed",
  };
  await life.cycle(record, undefined, { surface: "mcp", replayed });
  const outcome: RunOutcome = {
    runId: life.subject.runId,
    status: "completed",
    answer: null,
    reason: TOOL_CALL_RUN_REASON,
    cycles: 1,
    toolResults: [result],
    usage: zeroUsage(),
    messages: [],
    durationMs,
    modelErrorStatus: null,
    details: {},
    grounding: null,
  };
  await life
    .finish(outcome, durationMs)
    .catch((error: unknown) => deps.logger.error("run outcome not written", { error: error as Error }));
}
