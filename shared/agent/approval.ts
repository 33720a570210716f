import { sha256Hex } from "../hash.js";
import type { ApprovalDecision, ApprovalRequest } from "./approval-gate.js";
import { notStartedResult, prepareToolCall, runPreparedCall } from "./dispatcher.js";
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
 * expired one with business_error APPROVAL_EXPIRED, and, without a gate, APPROVAL_UNAVAILABLE. Each
 * decided result carries `metadata.approval` (who, when, why). Returns the turn with its placeholders
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
      results[item.index] = notStartedResult(item.call, "business_error", {
        code: "APPROVAL_UNAVAILABLE",
        message: `${item.call.name} needs a person's approval, which this deployment cannot wait for; it did not run.`,
        details: { preview: item.preview },
        retryable: false,
      });
      continue;
    }
    const audit = approvalAuditOf(request.approvalId, decision);
    if (decision.decision === "approved") {
      const settled = await step(steps.approved(cycle, item.call.id), async () => {
        const prepared = prepareToolCall(item.call, input.tools, input.security);
        const result = await toolSpan(item.call, async () =>
          prepared.kind === "failed"
            ? prepared.result
            : runPreparedCall(prepared, input.security, {
                runId: input.runId,
                runScope: input.runScope,
                occurrence: item.occurrence,
                signal: input.deadline.signal,
                remainingMs: () => input.deadline.remainingMs(),
                onInternalFailure: input.hooks?.onInternalFailure,
              }),
        );
        return { result, deadlinePassed: input.deadline.expired };
      });
      deadlinePassed = settled.deadlinePassed;
      results[item.index] = withAudit(settled.result, audit);
      continue;
    }
    const failed = refusedByDecision(item.call, request.approvalId, decision);
    results[item.index] = withAudit(failed, audit);
  }
  return { ...rest, results, deadlinePassed };
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
