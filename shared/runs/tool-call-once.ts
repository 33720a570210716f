/**
 * The guarded part of a one-cycle tool-call run (shared/runs/tool-call-run.ts): the call as one tool
 * turn (the loop's approval check, span and internal-failure log, shared/agent/tool-turn.ts), exactly once
 * per caller's key through the one idempotency engine (shared/runs/exactly-once.ts), and a call that needs
 * a person through the one approval service (shared/runs/approval-service.ts): asked and announced with
 * the run's approval events, collected by the next call with the same key, the decision mapped to a tool
 * error by the loop's own mapping (shared/agent/approval.ts).
 */
import {
  approvalAuditOf,
  approvalIdFor,
  refusedByDecision,
  runApprovedCall,
  withAudit,
} from "../agent/approval.js";
import type { ApprovalPause, ApprovalRequest } from "../agent/approval-gate.js";
import type { Deadline } from "../agent/deadline.js";
import { withPolicy } from "../agent/decision.js";
import { notStartedResult, type PreparedToolCall } from "../agent/dispatcher.js";
import { canonicalJson } from "../agent/idempotency-key.js";
import type { PolicyAudit, ToolResult } from "../agent/result.js";
import { clampRunLimits } from "../agent/run-limits.js";
import { runInline, steps } from "../agent/step.js";
import { runToolTurn } from "../agent/tool-turn.js";
import { toolSpan } from "../agent/trace-spans.js";
import type { SharedDeps } from "../deps.js";
import { sha256Hex } from "../hash.js";
import type { SecurityContext } from "../identity.js";
import { logInternalFailure } from "../observability.js";
import type { ApprovalRecord } from "../store/approval-record.js";
import type { StoredOutcome } from "../store/idempotency.js";
import { approvalOutcomeOf, requestApproval } from "./approval-service.js";
import {
  isUsableKey,
  type KeepPolicy,
  MAX_KEY_LENGTH,
  PROTOCOL_KEY_SCOPES,
  runOnce,
} from "./exactly-once.js";
import type { RunLifecycle } from "./lifecycle.js";

/**
 * What a one-cycle tool-call run uses: the tools and config, the stores its guards and its record write
 * to (runs, idempotency, approvals), where approvals are announced, the lifecycle's observability, the
 * policy decision service and the quotas (both absent when the deployment has none), and the clock the run
 * keeps time by (its deadline and duration; `SharedDeps.clock`).
 */
export type ToolCallRunDeps = Pick<
  SharedDeps,
  | "config"
  | "tools"
  | "runs"
  | "idempotency"
  | "approvals"
  | "approvalEvents"
  | "logger"
  | "metrics"
  | "runObservers"
  | "policies"
  | "quotas"
  | "clock"
>;

/** A call the dispatcher validated (`prepareToolCall`'s ready outcome). */
type ReadyCall = { kind: "ready" } & PreparedToolCall;

/** The operation MCP's idempotency records are scoped by (one namespace beside the HTTP API's routes). */
export const MCP_CALL_ROUTE = "MCP tools/call";

/** The `kind` of a stored tool result, and of a stored pointer to the approval a call waits for. */
const TOOL_RESULT = "tool_result";
const APPROVAL_PENDING = "approval_pending";

/** What a guarded call needs: the run's deps, caller, validated call, deadline, lifecycle, id, key field. */
export interface CallInRun {
  deps: ToolCallRunDeps;
  security: SecurityContext;
  prepared: ReadyCall;
  deadline: Deadline;
  life: RunLifecycle;
  runId: string;
  keyField: { path: string; label: string };
}

/** What one execution of a keyed call gave: its result, and the approval it waits for (if it does). */
interface FirstCall {
  result: ToolResult;
  pending?: PendingPointer | undefined;
}

/**
 * What a record holds while its call waits for a person: the approval's run and id, and the policy
 * decision that asked for it (decision "approval"; absent in records written before it was kept), which
 * every result of the call that does not run carries.
 */
interface PendingPointer {
  runId: string;
  approvalId: string;
  policy?: PolicyAudit | undefined;
}

/**
 * The call as the one tool turn of its run (`cycle-1:tools`, through the lifecycle's step points): the
 * approval check (a policy that throws: fatal_error APPROVAL_CHECK_FAILED with a fixed sentence, the
 * detail logged as an internal failure), then the dispatcher in its `execute_tool` span. `pending`: the
 * call waits for a person (its preview), nothing ran.
 */
export async function runTurn(
  context: CallInRun,
  runScope: string,
): Promise<{ result: ToolResult; pending?: ApprovalRequest | undefined }> {
  const { deps, security, prepared, deadline, life } = context;
  const limits = clampRunLimits(deps.config.limits, { maxCycles: 1 });
  const turn = await life.steps(runInline)(steps.tools(1, [prepared.call]), () =>
    runToolTurn([prepared.call], {
      tools: deps.tools,
      security,
      runId: context.runId,
      runScope,
      limits,
      deadline,
      startedBefore: 0,
      overTokenBudget: false,
      hooks: { onInternalFailure: logInternalFailure(deps.logger) },
      decide: deps.policies?.decisions,
    }),
  );
  const result = turn.results[0] as ToolResult;
  const waiting = turn.pending?.[0];
  if (!waiting) return { result };
  const request: ApprovalRequest = {
    name: `cycle-1:approval:${prepared.call.id}`,
    approvalId: approvalIdFor(security.tenantId, context.runId, 1, prepared.call.id),
    cycle: 1,
    toolCallId: prepared.call.id,
    toolName: prepared.tool.name,
    arguments: waiting.args,
    preview: waiting.preview,
  };
  return { result, pending: request };
}

/**
 * A call with the caller's key, run at most once per (tenant, user, key) by the idempotency engine: the
 * fingerprint is (user, tool, validated arguments); a repeat replays the stored result (`replayed`),
 * other arguments are validation_error IDEMPOTENCY_KEY_REUSED, a call still running fatal_error
 * IDEMPOTENCY_KEY_IN_USE (retryable); the tool's own idempotency key derives from the caller's key
 * (run scope `mcp:<user>:<key>`), so its effect is once however many repeats race. A call that needs
 * approval is stored as a pointer to its approval: the repeat gets the decision (see
 * {@link followApproval}). A retryable fatal_error is not kept: the key is released, a retry runs again.
 * @throws the store's error (the caller answers STORE_UNAVAILABLE)
 */
export async function runKeyed(
  context: CallInRun,
  key: unknown,
): Promise<{ result: ToolResult; replayed?: boolean }> {
  const { deps, security, prepared } = context;
  if (!isUsableKey(key)) return { result: invalidKey(context) };
  const runScope = `${PROTOCOL_KEY_SCOPES.mcp}:${security.userId}:${key}`;
  const operation = {
    tenantId: security.tenantId,
    userId: security.userId,
    route: MCP_CALL_ROUTE,
    key,
    // The record is the caller's: another user's call under the same key is its own operation.
    fingerprint: sha256Hex(
      `${MCP_CALL_ROUTE}\n${canonicalJson([security.userId, prepared.tool.name, prepared.args])}`,
    ),
    // The idempotency store reads leases on the wall clock.
    leaseExpiresAt: context.deadline.wallClockAt(),
  };
  const once = await runOnce(deps, operation, KEEP_TOOL_OUTCOMES, () => firstCall(context, runScope));
  switch (once.kind) {
    case "executed":
      return { result: once.result.result };
    case "replayed":
      return replayOf(context, once.stored, runScope);
    case "reused":
      return { result: keyReused(context) };
    case "in_progress":
      return { result: keyInUse(context, once.retryAfterSeconds) };
  }
}

/**
 * What a keyed call keeps for its repeats: the pointer to the approval it waits for, or its result;
 * nothing (the key released) for a retryable fatal_error, as the HTTP adapter keeps no 5xx.
 */
const KEEP_TOOL_OUTCOMES: KeepPolicy<FirstCall> = {
  keep: ({ result, pending }) => {
    if (pending) return { kind: APPROVAL_PENDING, body: JSON.stringify(pending) };
    if (result.status === "fatal_error" && result.error?.retryable) return undefined;
    return { kind: TOOL_RESULT, body: JSON.stringify(result) };
  },
};

/** The first execution of a keyed call: its turn, and the approval asked for when it needs one. */
async function firstCall(context: CallInRun, runScope: string): Promise<FirstCall> {
  const turn = await runTurn(context, runScope);
  if (!turn.pending) return { result: turn.result };
  const approval = await askPerson(context, turn.pending);
  const pending = {
    runId: approval.runId,
    approvalId: approval.approvalId,
    policy: turn.result.metadata.policy,
  };
  return { result: pendingResult(context, approval, pending.policy), pending };
}

/**
 * Asks a person through the approval service, with the run's approval points (the `approval.requested`
 * event): no durable callback (the caller's next call collects the decision).
 */
async function askPerson(context: CallInRun, request: ApprovalRequest): Promise<ApprovalRecord> {
  const { deps, security, life, runId } = context;
  let approval: ApprovalRecord | undefined;
  const gate = life.approvals(async (asked): Promise<ApprovalPause> => {
    const service = { ...deps, timeoutSeconds: deps.config.approvals.timeoutSeconds };
    approval = await requestApproval(service, { security, runId, request: asked, callbackId: "" });
    return { decision: "paused" };
  });
  await gate(request);
  return approval as ApprovalRecord;
}

/**
 * A repeat's answer from the stored outcome: a result is replayed; a pointer is followed to the
 * approval. Records written before outcomes had a kind: status 202 is a pointer, anything else a result.
 */
async function replayOf(
  context: CallInRun,
  stored: StoredOutcome,
  runScope: string,
): Promise<{ result: ToolResult; replayed?: boolean }> {
  const pointer = stored.kind === APPROVAL_PENDING || (stored.kind === undefined && stored.status === 202);
  if (pointer) {
    return { result: await followApproval(context, JSON.parse(stored.body) as PendingPointer, runScope) };
  }
  return { result: JSON.parse(stored.body) as ToolResult, replayed: true };
}

/**
 * A repeat of a call that waited for a person: still pending → the pending result again; approved → the
 * call runs now (its own `cycle-1:approved` step, the key's run scope: the tool's idempotency key is the
 * same on every repeat and its conditional write makes the effect once; decided again by the tenant's
 * policies as approved, as the loop's approved calls are); rejected or expired → the loop's
 * refusal of a decided call; withdrawn (its run cancelled) → APPROVAL_CANCELLED; gone (past its
 * retention) → APPROVAL_EXPIRED. Every decided result carries the approval's audit; every result of a
 * call that did not run, the policy decision that asked for the approval (the pointer's `policy`).
 */
async function followApproval(
  context: CallInRun,
  pointer: PendingPointer,
  runScope: string,
): Promise<ToolResult> {
  const { deps, security, prepared } = context;
  const notRun = (result: ToolResult) => withPolicy(result, pointer.policy);
  const found = await deps.approvals.get(security.tenantId, pointer.runId, pointer.approvalId);
  if (!found) return notRun(approvalGone(context, pointer));
  const outcome = await approvalOutcomeOf(deps.approvals, found.approval);
  if (outcome.kind === "pending") return pendingResult(context, outcome.approval, pointer.policy);
  if (outcome.kind === "cancelled") return notRun(approvalCancelled(context, pointer));
  const audit = approvalAuditOf(pointer.approvalId, outcome.decision);
  if (outcome.decision.decision !== "approved") {
    return withAudit(notRun(refusedByDecision(prepared.call, pointer.approvalId, outcome.decision)), audit);
  }
  // The repeat's run has no tools step: its approved step announces the call, before the effect.
  const approved = steps.approved(1, prepared.call.id, [prepared.call]);
  const result = await context.life.steps(runInline)(approved, () =>
    toolSpan(prepared.call, () =>
      runApprovedCall(prepared, {
        security,
        decide: deps.policies?.decisions,
        runId: pointer.runId,
        runScope,
        occurrence: 0,
        deadline: context.deadline,
        onInternalFailure: logInternalFailure(deps.logger),
      }),
    ),
  );
  return withAudit(result, audit);
}

/**
 * business_error APPROVAL_PENDING naming the approval: id, run, the backend's preview, expiry; with the
 * policy decision that asked for it (`metadata.policy`, decision "approval") when policies asked.
 */
function pendingResult(
  context: CallInRun,
  approval: ApprovalRecord,
  policy: PolicyAudit | undefined,
): ToolResult {
  const result = notStartedResult(context.prepared.call, "business_error", {
    code: "APPROVAL_PENDING",
    message: `${approval.toolName} waits for a person's approval (${approval.approvalId}, expires ${approval.expiresAt}); it has not run. Once it is decided (POST /v1/runs/${approval.runId}/approvals/${approval.approvalId}), repeat this same call with the same idempotency key to get the outcome.`,
    details: {
      approvalId: approval.approvalId,
      runId: approval.runId,
      preview: approval.preview,
      expiresAt: approval.expiresAt,
    },
    retryable: true,
  });
  return withPolicy(result, policy);
}

/** business_error APPROVAL_CANCELLED: the approval was withdrawn with its run; nothing ran. */
function approvalCancelled(context: CallInRun, pointer: PendingPointer): ToolResult {
  return notStartedResult(context.prepared.call, "business_error", {
    code: "APPROVAL_CANCELLED",
    message: `${context.prepared.tool.name} did not run: its approval was withdrawn.`,
    details: { approvalId: pointer.approvalId, runId: pointer.runId },
    retryable: false,
  });
}

/** business_error APPROVAL_EXPIRED for an approval no longer stored; nothing ran. */
function approvalGone(context: CallInRun, pointer: PendingPointer): ToolResult {
  return notStartedResult(context.prepared.call, "business_error", {
    code: "APPROVAL_EXPIRED",
    message: `${context.prepared.tool.name} did not run: its approval no longer exists.`,
    details: { approvalId: pointer.approvalId, runId: pointer.runId },
    retryable: false,
  });
}

/** validation_error INVALID_IDEMPOTENCY_KEY naming the key's field; the tool did not run. */
function invalidKey(context: CallInRun): ToolResult {
  const { label, path } = context.keyField;
  return notStartedResult(context.prepared.call, "validation_error", {
    code: "INVALID_IDEMPOTENCY_KEY",
    message: `${label} must be a string of 1 to ${MAX_KEY_LENGTH} printable ASCII characters; the tool did not run.`,
    details: { path },
    retryable: true,
  });
}

/** validation_error IDEMPOTENCY_KEY_REUSED: the key was used for another call; nothing ran. */
function keyReused(context: CallInRun): ToolResult {
  return notStartedResult(context.prepared.call, "validation_error", {
    code: "IDEMPOTENCY_KEY_REUSED",
    message: `This idempotency key was already used for a different call (another tool, other arguments or another user); use a new key for a new call. ${context.prepared.tool.name} did not run.`,
    details: { path: context.keyField.path },
    retryable: false,
  });
}

/** fatal_error IDEMPOTENCY_KEY_IN_USE (retryable): a call with the key is still running. */
function keyInUse(context: CallInRun, retryAfterSeconds: number): ToolResult {
  return notStartedResult(context.prepared.call, "fatal_error", {
    code: "IDEMPOTENCY_KEY_IN_USE",
    message: `A call with this idempotency key is still running; repeat it after ${retryAfterSeconds} s to get its result.`,
    details: { retryAfterSeconds },
    retryable: true,
  });
}
