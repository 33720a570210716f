/**
 * The approval gate, the engine's port for a person's decision (docs/approvals.md): what the loop asks
 * ({@link ApprovalRequest}), what it gets back ({@link ApprovalDecision}, or {@link ApprovalPause} from a
 * gate that cannot wait), and the gate types a run is given. shared/agent/approval.ts settles a turn's
 * calls through it; the application layer implements it (shared/durable/runner.ts, shared/runs/handover.ts).
 */
import type { ApprovalPreview } from "./tool.js";

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
 * cannot wait for a person): the run pauses at this turn, and `settleApprovals` (shared/agent/approval.ts) reports
 * the requests so the caller can continue the run elsewhere (the runs layer hands it over to a durable
 * execution, shared/runs/handover.ts).
 */
export interface ApprovalPause {
  decision: "paused";
}

/**
 * Where a run waits for a decision; an optional part of `RunInput` like `step`, so the loop knows
 * no engine. The durable runner implements it with `ctx.waitForCallback` (shared/durable/runner.ts).
 * Without a gate, a call that needs approval does not run: business_error APPROVAL_UNAVAILABLE.
 */
export type ApprovalGate = (request: ApprovalRequest) => Promise<ApprovalDecision>;

/**
 * A gate that may also answer {@link ApprovalPause}: the synchronous path's, whose run then ends the loop
 * as a `RunPaused` value (no exception).
 */
export type PausingApprovalGate = (request: ApprovalRequest) => Promise<ApprovalDecision | ApprovalPause>;
