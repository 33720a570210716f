import { sha256Hex } from "../hash.js";
import type { SecurityContext } from "../identity.js";
import type { ApprovalDecision, ApprovalRequest } from "./approval-gate.js";
import type { Deadline } from "./deadline.js";
import { decideCall, runDecided, type ToolCallDecider, withPolicy } from "./decision.js";
import { type InternalFailure, notStartedResult, prepareToolCall } from "./dispatcher.js";
import { toolIdempotencyKey } from "./idempotency-key.js";
import type { ApprovalAudit, ToolResult } from "./result.js";
import { runInline, steps } from "./step.js";
import type { ToolCallRequest } from "./tool.js";
import type { PendingApproval, ToolTurnResult } from "./tool-turn.js";
import { toolSpan } from "./trace-spans.js";
import type { RunInput } from "./types.js";

export type {
  ApprovalDecision,
  ApprovalGate,
  ApprovalPause,
  ApprovalRequest,
  PausingApprovalGate,
} from "./approval-gate.js";

/** The turn of a run whose gate answered {@link ApprovalPause}: the approvals it stopped at, in call order. */
export interface PausedTurn {
  paused: ApprovalRequest[];
}

/**
 * The id of the approval of one call: `apr_` + the first 32 hex digits of SHA-256 over tenant, run,
 * cycle and tool call id, so every replay (and the synchronous path that hands a run over) names the
 * same approval.
 */
export function approvalIdFor(tenantId: string, runId: string, cycle: number, toolCallId: string): string {
  return `apr_${sha256Hex(`${tenantId}\n${runId}\n${cycle}\n${toolCallId}`).slice(0, 32)}`;
}

/** The {@link ApprovalRequest} of a pending call of cycle `cycle`. */
export function approvalRequestOf(
  input: Pick<RunInput, "security" | "runId">,
  cycle: number,
  pending: PendingApproval,
): ApprovalRequest {
  return {
    name: `cycle-${cycle}:approval:${pending.call.id}`,
    approvalId: approvalIdFor(input.security.tenantId, input.runId, cycle, pending.call.id),
    cycle,
    toolCallId: pending.call.id,
    toolName: pending.call.name,
    arguments: pending.args,
    preview: pending.preview,
  };
}

/**
 * Settles the calls of a turn that wait for approval: asks `input.approve` for every pending call at
 * once (in call order), then, in call order, runs each approved call in its own step
 * (`cycle-<n>:approved:<toolCallId>`, with the occurrence it had in the turn, hence its usual idempotency
 * key), and answers a rejected one with business_error APPROVAL_REJECTED (the reason, for the model), an
 * expired one with business_error APPROVAL_EXPIRED, and, without a gate, APPROVAL_UNAVAILABLE (in its
 * `execute_tool` span). Each decided result carries `metadata.approval` (who, when, why); each that did
 * not run carries the policy decision that asked (`metadata.policy`, decision "approval"), the approved
 * one the decision it ran under (decision "permit", `approved`). Returns the turn with its placeholders
 * replaced and `pending` removed; `deadlinePassed` is re-read after the approved calls. When the gate
 * answers {@link ApprovalPause} for any call, nothing of the turn is settled: the {@link PausedTurn}
 * lists every request of the turn.
 * @throws whatever the gate throws
 */
export async function settleApprovals(
  turn: ToolTurnResult,
  cycle: number,
  input: RunInput,
): Promise<ToolTurnResult | PausedTurn> {
  const { pending, ...rest } = turn;
  if (!pending || pending.length === 0) return turn;
  const step = input.step ?? runInline;
  const approve = input.approve;
  const requests = pending.map((item) => approvalRequestOf(input, cycle, item));
  const answers = approve ? await Promise.all(requests.map((request) => approve(request))) : [];
  if (answers.some((answer) => answer.decision === "paused")) return { paused: requests };
  const decisions = answers as ApprovalDecision[];
  const results = [...rest.results];
  let deadlinePassed = rest.deadlinePassed;
  for (const [i, item] of pending.entries()) {
    const request = requests[i] as ApprovalRequest;
    const decision = decisions[i];
    if (!decision) {
      // Its only result, so its only execute_tool span (as a refusal by a policy has).
      results[item.index] = await toolSpan(item.call, async () => approvalUnavailable(item));
      continue;
    }
    const audit = approvalAuditOf(request.approvalId, decision);
    if (decision.decision === "approved") {
      const settled = await step(steps.approved(cycle, item.call.id), async () => {
        const result = await toolSpan(item.call, () => runApproved(item, input));
        return { result, deadlinePassed: input.deadline.expired };
      });
      deadlinePassed = settled.deadlinePassed;
      results[item.index] = withAudit(settled.result, audit);
      continue;
    }
    const failed = withPolicy(refusedByDecision(item.call, request.approvalId, decision), item.policy);
    results[item.index] = withAudit(failed, audit);
  }
  return { ...rest, results, deadlinePassed };
}

/**
 * business_error APPROVAL_UNAVAILABLE: the call needs a person's approval and the run has no gate to wait
 * at (a synchronous run without a durable runner); it did not run. `details.preview` is the backend's
 * numbers, `metadata.policy` the decision that asked (decision "approval"), when policies asked.
 */
function approvalUnavailable(item: PendingApproval): ToolResult {
  const result = notStartedResult(item.call, "business_error", {
    code: "APPROVAL_UNAVAILABLE",
    message: `${item.call.name} needs a person's approval, which this deployment cannot wait for; it did not run.`,
    details: { preview: item.preview },
    retryable: false,
  });
  return withPolicy(result, item.policy);
}

/** Runs an approved call of the loop: see {@link runApprovedCall}, with the occurrence it had in its turn. */
function runApproved(item: PendingApproval, input: RunInput): Promise<ToolResult> {
  const prepared = prepareToolCall(item.call, input.tools, input.security);
  if (prepared.kind === "failed") return Promise.resolve(prepared.result);
  return runApprovedCall(prepared, {
    security: input.security,
    decide: input.decide,
    runId: input.runId,
    runScope: input.runScope,
    occurrence: item.occurrence,
    deadline: input.deadline,
    onInternalFailure: input.hooks?.onInternalFailure,
  });
}

/**
 * Runs a call a person approved (the loop's, and an MCP call's repeat): decided again by the tenant's
 * policies with `approved` (an approval policy then permits; a forbid that holds now still refuses, and
 * the call is reserved in the running totals now), then run with `occurrence` under `runScope`, hence
 * the idempotency key it had when it was asked for. Never throws.
 */
export async function runApprovedCall(
  prepared: Extract<ReturnType<typeof prepareToolCall>, { kind: "ready" }>,
  at: {
    security: SecurityContext;
    decide: ToolCallDecider | undefined;
    runId: string;
    runScope: string;
    occurrence: number;
    deadline: Deadline;
    onInternalFailure?: ((failure: InternalFailure) => void) | undefined;
  },
): Promise<ToolResult> {
  const context = {
    runId: at.runId,
    runScope: at.runScope,
    occurrence: at.occurrence,
    signal: at.deadline.signal,
    remainingMs: () => at.deadline.remainingMs(),
    onInternalFailure: at.onInternalFailure,
  };
  const decision = await decideCall(at.decide, {
    prepared,
    security: at.security,
    runId: at.runId,
    operationKey: () =>
      toolIdempotencyKey({
        tenantId: at.security.tenantId,
        userId: at.security.userId,
        runScope: at.runScope,
        toolName: prepared.tool.name,
        args: prepared.args,
        occurrence: at.occurrence,
      }),
    approved: true,
    signal: at.deadline.signal,
  });
  if (decision.kind === "refused") return decision.result;
  // An approval policy that still asks (it cannot with `approved`) runs as approved: a person decided.
  const run = decision.kind === "run" ? decision : { kind: "run" as const, audit: decision.audit };
  return runDecided(run, prepared, at.security, context);
}

/** The approval audit a decided result carries (who, when, why), on every surface. */
export function approvalAuditOf(approvalId: string, decision: ApprovalDecision): ApprovalAudit {
  return {
    approvalId,
    decision: decision.decision,
    decidedBy: decision.decidedBy,
    decidedAt: decision.decidedAt,
    reason: decision.reason,
  };
}

/**
 * The result of a call a person's decision keeps from running: business_error APPROVAL_REJECTED (with the
 * approver's reason, for the model) or APPROVAL_EXPIRED, `details` naming the approval and the reason.
 * The one decision → tool error mapping of the loop's gate and of MCP's calls.
 */
export function refusedByDecision(
  call: ToolCallRequest,
  approvalId: string,
  decision: Pick<ApprovalDecision, "decision" | "decidedAt" | "reason">,
): ToolResult {
  const rejected = decision.decision === "rejected";
  return notStartedResult(call, "business_error", {
    code: rejected ? "APPROVAL_REJECTED" : "APPROVAL_EXPIRED",
    message: rejected
      ? `A person rejected this ${call.name} call; it did not run. Reason: ${decision.reason ?? "none given"}.`
      : `Nobody approved this ${call.name} call before its approval expired at ${decision.decidedAt}; it did not run.`,
    details: { approvalId, reason: decision.reason },
    retryable: false,
  });
}

/** `result` with its approval audit in the metadata. */
export function withAudit(result: ToolResult, approval: ApprovalAudit): ToolResult {
  return { ...result, metadata: { ...result.metadata, approval } };
}
