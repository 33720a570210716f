import { sha256Hex } from "../hash.js";
import { decideCall, runDecided } from "./decision.js";
import { notStartedResult, prepareToolCall } from "./dispatcher.js";
import { toolIdempotencyKey } from "./idempotency-key.js";
import type { ApprovalAudit, ToolResult } from "./result.js";
import { runInline } from "./step.js";
import type { ApprovalPreview } from "./tool.js";
import type { PendingApproval, ToolTurnResult } from "./tool-turn.js";
import { toolSpan } from "./trace-spans.js";
import type { RunInput } from "./types.js";

/**
 * What the loop asks a person to decide on (docs/approvals.md), handed to {@link ApprovalGate}.
 * - `name`: the stable name of the wait, `cycle-<n>:approval:<toolCallId>` (a durable runner names its
 *   `waitForCallback` with it)
 * - `approvalId`: `apr_` + 32 hex digits, see {@link approvalIdFor}
 * - `arguments`: the call's validated arguments (zod's output, not the model's raw text)
 * - `preview`: the backend's numbers the decision is about
 */
export interface ApprovalRequest {
  name: string;
  approvalId: string;
  cycle: number;
  toolCallId: string;
  toolName: string;
  arguments: unknown;
  preview: ApprovalPreview;
}

/**
 * A decision on an {@link ApprovalRequest}: approved or rejected by `decidedBy` (a user id) at
 * `decidedAt` (ISO 8601) with an optional `reason`, or expired (nobody decided before the approval's
 * expiry; `decidedBy` null). `requestedAt` (ISO 8601) is when the approval was asked for: the time between
 * the two does not count against the run's deadline.
 */
export interface ApprovalDecision {
  decision: "approved" | "rejected" | "expired";
  decidedBy: string | null;
  decidedAt: string;
  reason: string | null;
  requestedAt: string;
}

/**
 * What a gate answers instead of a decision when the run cannot wait where it is (a synchronous request
 * cannot wait for a person): the run pauses at this turn, and {@link settleApprovals} reports the
 * requests so the caller can continue the run elsewhere (the runs layer hands it over to a durable
 * execution, shared/runs/handover.ts).
 */
export interface ApprovalPause {
  decision: "paused";
}

/**
 * Where a run waits for a decision; an optional part of {@link RunInput} like `step`, so the loop knows
 * no engine. The durable runner implements it with `ctx.waitForCallback` (shared/durable/runner.ts).
 * Without a gate, a call that needs approval does not run: business_error APPROVAL_UNAVAILABLE.
 */
export type ApprovalGate = (request: ApprovalRequest) => Promise<ApprovalDecision>;

/**
 * A gate that may also answer {@link ApprovalPause}: the synchronous path's, whose run then ends the loop
 * as a {@link RunPaused} value (no exception).
 */
export type PausingApprovalGate = (request: ApprovalRequest) => Promise<ApprovalDecision | ApprovalPause>;

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
    const audit: ApprovalAudit = {
      approvalId: request.approvalId,
      decision: decision.decision,
      decidedBy: decision.decidedBy,
      decidedAt: decision.decidedAt,
      reason: decision.reason,
    };
    if (decision.decision === "approved") {
      const settled = await step(`cycle-${cycle}:approved:${item.call.id}`, async () => {
        const result = await toolSpan(item.call, () => runApproved(item, input));
        return { result, deadlinePassed: input.deadline.expired };
      });
      deadlinePassed = settled.deadlinePassed;
      results[item.index] = withAudit(settled.result, audit);
      continue;
    }
    const rejected = decision.decision === "rejected";
    const failed = notStartedResult(item.call, "business_error", {
      code: rejected ? "APPROVAL_REJECTED" : "APPROVAL_EXPIRED",
      message: rejected
        ? `A person rejected this ${item.call.name} call; it did not run. Reason: ${decision.reason ?? "none given"}.`
        : `Nobody approved this ${item.call.name} call before its approval expired at ${decision.decidedAt}; it did not run.`,
      details: { approvalId: request.approvalId, reason: decision.reason },
      retryable: false,
    });
    results[item.index] = withAudit(failed, audit);
  }
  return { ...rest, results, deadlinePassed };
}

/**
 * Runs an approved call: validated again, decided again by the tenant's policies with `approved` (an
 * approval policy then permits; a forbid that holds now still refuses, and the call is reserved in the
 * running totals now), then run with the occurrence it had in its turn.
 */
async function runApproved(item: PendingApproval, input: RunInput): Promise<ToolResult> {
  const prepared = prepareToolCall(item.call, input.tools, input.security);
  if (prepared.kind === "failed") return prepared.result;
  const context = {
    runId: input.runId,
    runScope: input.runScope,
    occurrence: item.occurrence,
    signal: input.deadline.signal,
    remainingMs: () => input.deadline.remainingMs(),
    onInternalFailure: input.hooks?.onInternalFailure,
  };
  const decision = await decideCall(input.decide, {
    prepared,
    security: input.security,
    runId: input.runId,
    operationKey: () =>
      toolIdempotencyKey({
        tenantId: input.security.tenantId,
        userId: input.security.userId,
        runScope: input.runScope,
        toolName: prepared.tool.name,
        args: prepared.args,
        occurrence: item.occurrence,
      }),
    approved: true,
    signal: input.deadline.signal,
  });
  if (decision.kind === "refused") return decision.result;
  // An approval policy that still asks (it cannot with `approved`) runs as approved: a person decided.
  const run = decision.kind === "run" ? decision : { kind: "run" as const, audit: decision.audit };
  return runDecided(run, prepared, input.security, context);
}

/** `result` with its approval audit in the metadata. */
function withAudit(result: ToolResult, approval: ApprovalAudit): ToolResult {
  return { ...result, metadata: { ...result.metadata, approval } };
}
