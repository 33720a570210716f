import type { SecurityContext } from "../identity.js";
import type { Deadline } from "./deadline.js";
import { type CallDecision, decideCall, runDecided, type ToolCallDecider, withPolicy } from "./decision.js";
import {
  describeThrown,
  notStartedResult,
  prepareToolCall,
  reportInternalFailure,
  type ToolCallRequest,
  type ToolRegistry,
} from "./dispatcher.js";
import { operationIdentity, toolIdempotencyKey } from "./idempotency-key.js";
import type { PolicyAudit, ToolResult } from "./result.js";
import type { RunLimits } from "./run-limits.js";
import type { ApprovalPreview } from "./tool.js";
import { toolSpan } from "./trace-spans.js";
import type { RunHooks } from "./types.js";

/** A tool call of the current turn, with a unique id (`originalId` is the model's id when it was re-keyed). */
export interface TurnCall extends ToolCallRequest {
  originalId?: string;
}

/**
 * What one turn of tool calls produced: the result of its `cycle-N:tools` step (plain JSON).
 * - `results`: one per call, in call order (not yet capped to the tool-result size)
 * - `started`: calls that reached the dispatcher (validation failures included), for the per-run budget
 * - `refused`: a call was refused because the run's tool-call budget was spent
 * - `deadlinePassed`: the run's deadline had passed when the turn settled (read inside the step)
 * - `pending`: calls whose tool's approval policy asked for a person's decision (present only when there
 *   are some); their entry in `results` is a placeholder (business_error APPROVAL_PENDING) until
 *   shared/agent/approval.ts settles them
 */
export interface ToolTurnResult {
  results: ToolResult[];
  started: number;
  refused: boolean;
  deadlinePassed: boolean;
  pending?: PendingApproval[];
}

/**
 * A validated call that waits for a person's decision: its index in the turn, the call, its occurrence
 * (so the approved call gets the idempotency key it would have had), its validated arguments, the
 * backend's preview and, when the tenant's policies asked for the approval, their decision's explanation
 * (`policy`, decision "approval": every result the call settles to without running carries it). Plain
 * JSON (it is part of the tools step's checkpoint; one checkpointed before `policy` existed has none).
 */
export interface PendingApproval {
  index: number;
  call: TurnCall;
  occurrence: number;
  args: unknown;
  preview: ApprovalPreview;
  policy?: PolicyAudit;
}

/** What {@link runToolTurn} needs from the run; `startedBefore`: tool calls the run started in earlier turns. */
export interface ToolTurnContext {
  tools: ToolRegistry;
  security: SecurityContext;
  runId: string;
  runScope: string;
  limits: RunLimits;
  deadline: Deadline;
  startedBefore: number;
  /** True when the model call that asked for these calls spent the token budget: none of them runs. */
  overTokenBudget: boolean;
  /** The run's hooks: `onInternalFailure` gets the detail of a failed call or approval check. */
  hooks?: RunHooks | undefined;
  /** The policy decision service (shared/agent/decision.ts); absent: no policies, every valid call runs. */
  decide?: ToolCallDecider | undefined;
}

/**
 * Runs one turn's tool calls, at most `maxConcurrentToolCalls` at a time, and returns their results in
 * call order. Calls past `maxToolCallsPerTurn` get validation_error TOO_MANY_TOOL_CALLS, calls past the
 * run's `maxToolCallsPerRun` get fatal_error BUDGET_EXCEEDED, and with `overTokenBudget` every call gets
 * fatal_error BUDGET_EXCEEDED; none of those runs. Each mutating call that passed validation gets its
 * occurrence: its index among the turn's calls with the same {@link operationIdentity} (tool + validated
 * arguments), which feeds its idempotency key. Each valid call is decided by `context.decide` (the
 * tenant's policies, shared/agent/decision.ts): a refusal is its result, a policy asking for approval
 * lists it in `pending`. A call whose tool's `needsApproval` returns a preview does
 * not run: it is listed in `pending` (see {@link PendingApproval}); every call that reached the dispatcher
 * and is not pending runs in its `execute_tool` span (shared/agent/trace-spans.ts); a policy that throws gives
 * fatal_error APPROVAL_CHECK_FAILED (retryable; the call did not run). Never throws.
 */
export async function runToolTurn(calls: TurnCall[], context: ToolTurnContext): Promise<ToolTurnResult> {
  const { limits, deadline } = context;
  if (context.overTokenBudget) {
    return {
      results: calls.map(tokenBudgetResult),
      started: 0,
      refused: false,
      deadlinePassed: deadline.expired,
    };
  }
  const occurrences = new Map<string, number>();
  const pending: PendingApproval[] = [];
  let started = 0;
  let refused = false;
  const jobs = calls.map((call, index): Job => {
    const refusal = limitRefusal(call, index, context.startedBefore + started, limits);
    if (refusal) {
      refused ||= refusal.error?.code === "BUDGET_EXCEEDED";
      return () => Promise.resolve(refusal);
    }
    started += 1;
    const prepared = prepareToolCall(call, context.tools, context.security);
    if (prepared.kind === "failed") return () => toolSpan(call, () => Promise.resolve(prepared.result));
    // Counted in call order on the validated arguments, the identity the idempotency key hashes.
    let occurrence = 0;
    if (prepared.tool.isMutating) {
      const identity = operationIdentity(prepared.tool.name, prepared.args);
      occurrence = occurrences.get(identity) ?? 0;
      occurrences.set(identity, occurrence + 1);
    }
    return decidedJob({ index, call, prepared, occurrence }, context, pending);
  });
  const results = await mapConcurrent(jobs, limits.maxConcurrentToolCalls);
  const turn: ToolTurnResult = { results, started, refused, deadlinePassed: deadline.expired };
  if (pending.length > 0) turn.pending = pending.sort((a, b) => a.index - b.index);
  return turn;
}

/** One call of a turn, to be run: the result it settles to. */
type Job = () => Promise<ToolResult>;

/** The decision of a call when no policy service is configured: run it, nothing to audit or settle. */
const RUN: Extract<CallDecision, { kind: "run" }> = { kind: "run" };

/** A call that passed the turn's limits and validation, with its occurrence among the turn's calls. */
interface ValidCall {
  index: number;
  call: TurnCall;
  prepared: Extract<ReturnType<typeof prepareToolCall>, { kind: "ready" }>;
  occurrence: number;
}

/**
 * The result of a call the turn's limits keep from running: past `maxToolCallsPerTurn` (validation_error
 * TOO_MANY_TOOL_CALLS, retryable next turn) or past the run's `maxToolCallsPerRun` counting the calls
 * `startedSoFar` (fatal_error BUDGET_EXCEEDED); undefined when it may run.
 */
function limitRefusal(
  call: TurnCall,
  index: number,
  startedSoFar: number,
  limits: RunLimits,
): ToolResult | undefined {
  if (index >= limits.maxToolCallsPerTurn) {
    return notStartedResult(call, "validation_error", {
      code: "TOO_MANY_TOOL_CALLS",
      message: `At most ${limits.maxToolCallsPerTurn} tool calls run per turn; this one did not run. Ask for it again in the next turn.`,
      details: { maxToolCallsPerTurn: limits.maxToolCallsPerTurn },
      retryable: true,
    });
  }
  if (startedSoFar < limits.maxToolCallsPerRun) return undefined;
  return notStartedResult(call, "fatal_error", {
    code: "BUDGET_EXCEEDED",
    message: `The run reached its limit of ${limits.maxToolCallsPerRun} tool calls; this one did not run.`,
    details: { maxToolCallsPerRun: limits.maxToolCallsPerRun },
    retryable: false,
  });
}

/**
 * A valid call's policy decision (shared/agent/decision.ts), then what it says: refused → its result
 * (POLICY_DENIED, or POLICY_CHECK_FAILED), approval → pending with the policy's preview, run → the tool's
 * own approval policy when it declares one, else the call runs.
 */
function decidedJob(job: ValidCall, context: ToolTurnContext, pending: PendingApproval[]): Job {
  const { call, prepared, index, occurrence } = job;
  // No policy service: every valid call runs, without building a decision request per call.
  if (!context.decide) {
    return prepared.tool.needsApproval
      ? approvalJob(job, context, pending, RUN)
      : () => runJob(job, context, RUN);
  }
  return async () => {
    const decision = await decideCall(context.decide, {
      prepared,
      security: context.security,
      runId: context.runId,
      operationKey: operationKeyOf(job, context),
      approved: false,
      signal: context.deadline.signal,
    });
    if (decision.kind === "refused") return toolSpan(call, () => Promise.resolve(decision.result));
    if (decision.kind === "approval") {
      const { preview, audit } = decision;
      pending.push({ index, call, occurrence, args: prepared.args, preview, policy: audit });
      return withPolicy(pendingPlaceholder(call), audit);
    }
    return prepared.tool.needsApproval
      ? approvalJob(job, context, pending, decision)()
      : runJob(job, context, decision);
  };
}

/** The call's operation key, computed when asked (the key a decision reserves under). */
function operationKeyOf({ prepared, occurrence }: ValidCall, context: ToolTurnContext): () => string {
  return () =>
    toolIdempotencyKey({
      tenantId: context.security.tenantId,
      userId: context.security.userId,
      runScope: context.runScope,
      toolName: prepared.tool.name,
      args: prepared.args,
      occurrence,
    });
}

/** Runs a valid call the decision let run, under the run's deadline, in its `execute_tool` span. */
function runJob(
  { call, prepared, occurrence }: ValidCall,
  context: ToolTurnContext,
  decision: Extract<CallDecision, { kind: "run" }> = { kind: "run" },
): Promise<ToolResult> {
  const { deadline } = context;
  return toolSpan(call, () =>
    runDecided(decision, prepared, context.security, {
      runId: context.runId,
      runScope: context.runScope,
      occurrence,
      signal: deadline.signal,
      remainingMs: remainingOf(deadline),
      onInternalFailure: context.hooks?.onInternalFailure,
    }),
  );
}

/** What the deadline leaves, read when asked (a closure made here is unnamed: no per-call name definition). */
function remainingOf(deadline: Deadline): () => number {
  return () => deadline.remainingMs();
}

/** The placeholder business_error APPROVAL_PENDING of a call waiting for a decision. */
function pendingPlaceholder(call: TurnCall): ToolResult {
  return notStartedResult(call, "business_error", {
    code: "APPROVAL_PENDING",
    message: `${call.name} waits for a person's approval.`,
    retryable: false,
  });
}

/**
 * A valid call whose tool has an approval policy: asks the policy first; a call it gives a preview is
 * added to `pending` and settles to the placeholder business_error APPROVAL_PENDING; one it clears runs;
 * a policy that throws gives fatal_error APPROVAL_CHECK_FAILED (retryable; the call did not run).
 */
function approvalJob(
  job: ValidCall,
  context: ToolTurnContext,
  pending: PendingApproval[],
  decision: Extract<CallDecision, { kind: "run" }>,
): Job {
  const { call, prepared, index, occurrence } = job;
  return async () => {
    let preview: ApprovalPreview | null;
    try {
      preview =
        (await prepared.tool.needsApproval?.(prepared.args as never, context.security, {
          signal: context.deadline.signal,
        })) ?? null;
    } catch (error) {
      reportInternalFailure(context.hooks?.onInternalFailure, {
        source: "approval_check",
        name: call.name,
        code: "APPROVAL_CHECK_FAILED",
        detail: describeThrown(error),
      });
      const failed = notStartedResult(call, "fatal_error", {
        code: "APPROVAL_CHECK_FAILED",
        message: `${call.name} did not run: whether it needs approval could not be checked. The same call can be made again.`,
        retryable: true,
      });
      await decision.settle?.(failed);
      return failed;
    }
    if (!preview) return runJob(job, context, decision);
    // Waiting releases the decision's reservation: the approved call is decided (and reserved) again.
    await decision.settle?.(pendingPlaceholder(call));
    pending.push({ index, call, occurrence, args: prepared.args, preview });
    return pendingPlaceholder(call);
  };
}

/** The result of a call that was not run because the model call that asked for it spent the token budget. */
function tokenBudgetResult(call: TurnCall): ToolResult {
  return notStartedResult(call, "fatal_error", {
    code: "BUDGET_EXCEEDED",
    message:
      "The run's token budget was spent by the model call that asked for this tool call; it did not run.",
    retryable: false,
  });
}

/**
 * Runs `jobs` with at most `limit` at a time; results in job order. When every job fits under the limit
 * they all start at once, in order, as the workers below would start them.
 */
async function mapConcurrent<T>(jobs: Array<() => Promise<T>>, limit: number): Promise<T[]> {
  if (jobs.length <= limit) return Promise.all(jobs.map((job) => job()));
  const results = new Array<T>(jobs.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.max(1, Math.min(limit, jobs.length)) }, async () => {
      while (next < jobs.length) {
        const index = next++;
        results[index] = await (jobs[index] as () => Promise<T>)();
      }
    }),
  );
  return results;
}
