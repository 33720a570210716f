/**
 * The one approval service (docs/approvals.md), used by every path that asks a person: the durable
 * runner's gate (a run waits in `waitForCallback`), MCP's one-cycle runs (the caller's next call collects
 * the decision) and the approvals API: {@link requestApproval} (store and announce), {@link
 * decideApproval} (four eyes, one conditional write, the callback), {@link expireApproval} and
 * {@link approvalOutcomeOf} (what a stored approval decides), and the run's pending approvals.
 */
import type { Logger } from "@aws-lambda-powertools/logger";
import type { ApprovalDecision, ApprovalRequest } from "../agent/approval-gate.js";
import type { ApprovalEvents } from "../approval-events.js";
import type { ApiDeps } from "../deps.js";
import { DomainError } from "../domain-errors.js";
import type { SecurityContext } from "../identity.js";
import type { ApprovalRecord } from "../store/approval-record.js";
import type { ApprovalStore } from "../store/approvals.js";
import { BILLING_APPROVE, requireFourEyes, requirePermission } from "./access.js";

/**
 * `POST /v1/runs/{runId}/approvals/{approvalId}` (docs/approvals.md), in this order:
 * 1. the caller needs `billing:approve` (FORBIDDEN, `requiredPermission`);
 * 2. the approval must be the caller's tenant's (the key's partition is the tenant: another tenant's is NOT_FOUND);
 * 3. four eyes: the user who started the run may not decide (FORBIDDEN, `rule: "four_eyes"`);
 * 4. one conditional write records the decision while the approval is pending and unexpired: exactly
 *    one decision wins. The same decision again returns the stored approval; the opposite one is
 *    APPROVAL_DECIDED; an expired approval is APPROVAL_EXPIRED; one withdrawn because its run was
 *    cancelled is APPROVAL_CANCELLED (each with `approvalId`, `approvalStatus`); nothing is written;
 * 5. the run's waiting execution gets the decision as its callback result (SendDurableExecutionCallbackSuccess
 *    on AWS), also for a repeated same decision, so a decision whose callback was lost is delivered again.
 * @returns the approval as stored after the decision (never its callback id)
 * @throws DomainError as listed; the store's and the executions port's errors
 */
export async function decideApproval(
  deps: Pick<ApiDeps, "approvals" | "executions" | "logger">,
  security: SecurityContext,
  params: { runId: string; approvalId: string },
  body: { decision: "approve" | "reject"; reason?: string | undefined },
): Promise<ApprovalRecord> {
  requirePermission(security, BILLING_APPROVE);
  const { runId, approvalId } = params;
  const found = await deps.approvals.get(security.tenantId, runId, approvalId);
  if (!found) throw new DomainError("NOT_FOUND", `There is no approval ${approvalId} of run ${runId}.`);
  requireFourEyes(security, found.approval);
  const status = body.decision === "approve" ? "approved" : "rejected";
  const result = await deps.approvals.decide(security.tenantId, runId, approvalId, {
    status,
    decidedBy: security.userId,
    reason: body.reason ?? null,
  });
  if (result.kind === "missing") {
    throw new DomainError("NOT_FOUND", `There is no approval ${approvalId} of run ${runId}.`);
  }
  const { approval, callback } = result;
  if (result.kind === "conflict" && (approval.status === "cancelled" || approval.status !== status)) {
    throw conflictProblem(approval, runId, deps.approvals.now());
  }
  // An approval asked for over MCP has no waiting execution (empty callback id): the caller's next
  // call with its idempotency key reads the decision (shared/runs/tool-call-once.ts).
  const delivered =
    deps.executions && callback.callbackId
      ? await deps.executions.completeCallback(
          { callbackId: callback.callbackId, executionName: runId, waitName: callback.waitName },
          JSON.stringify({
            decision: approval.status,
            decidedBy: approval.decidedBy,
            decidedAt: approval.decidedAt,
            reason: approval.reason,
            requestedAt: approval.requestedAt,
          }),
        )
      : "not_waiting";
  deps.logger.info("approval decided", {
    runId,
    approvalId,
    decision: approval.status,
    repeated: result.kind === "conflict",
    delivered,
  });
  return approval;
}

/**
 * Why a decision on `approval` (stored otherwise) is refused: APPROVAL_CANCELLED (withdrawn with its
 * run), APPROVAL_EXPIRED (expired, or pending past its expiry) or APPROVAL_DECIDED, each with
 * `approvalId` and `approvalStatus`; `now` is the store's clock (epoch ms), which the decision's condition used.
 */
function conflictProblem(approval: ApprovalRecord, runId: string, now: number): DomainError {
  const { approvalId } = approval;
  const facts = { approvalId, approvalStatus: approval.status };
  if (approval.status === "cancelled") {
    return new DomainError(
      "APPROVAL_CANCELLED",
      `The approval ${approvalId} was cancelled with its run ${runId}; nothing can be decided on it any more.`,
      { facts },
    );
  }
  const expired =
    approval.status === "expired" || (approval.status === "pending" && Date.parse(approval.expiresAt) <= now);
  return expired
    ? new DomainError("APPROVAL_EXPIRED", `The approval ${approvalId} expired at ${approval.expiresAt}.`, {
        facts,
      })
    : new DomainError("APPROVAL_DECIDED", `The approval ${approvalId} was already ${approval.status}.`, {
        facts,
      });
}

/**
 * The run's pending approvals as `GET /v1/runs/{runId}` shows them (`pendingApprovals`): the fields a
 * person decides on, no callback id.
 */
export async function pendingApprovalsOf(
  approvals: Pick<ApprovalStore, "pendingForRun">,
  tenantId: string,
  runId: string,
): Promise<PendingApprovalView[]> {
  const pending = await approvals.pendingForRun(tenantId, runId);
  return pending.map(
    ({ approvalId, toolName, arguments: args, preview, requestedBy, requestedAt, expiresAt }) => ({
      approvalId,
      toolName,
      arguments: args,
      preview,
      requestedBy,
      requestedAt,
      expiresAt,
    }),
  );
}

/** A pending approval as a run's record shows it: what a person decides on, never its callback id. */
export type PendingApprovalView = Pick<
  ApprovalRecord,
  "approvalId" | "toolName" | "arguments" | "preview" | "requestedBy" | "requestedAt" | "expiresAt"
>;

/**
 * What {@link requestApproval} uses: the store (and its clock, the run's), where approvals are announced,
 * the logger, the timeout (s).
 */
export interface ApprovalRequestDeps {
  approvals: Pick<ApprovalStore, "request" | "now">;
  approvalEvents: ApprovalEvents;
  logger: Logger;
  timeoutSeconds: number;
}

/**
 * Asks a person: writes the approval of `request` (one conditional write; a repeat finds the one written
 * before), pending until `timeoutSeconds` from now, `requestedBy` the caller, then announces it (EventBridge
 * on AWS; a failed announcement is logged, never fatal: the approval is listed either way).
 * @param input.callbackId where the decision is delivered (a durable wait's callback id), or "" when the
 *   caller collects it (MCP); stored server-side only
 * @returns the approval as stored
 * @throws the store's error (nothing announced)
 */
export async function requestApproval(
  deps: ApprovalRequestDeps,
  input: { security: SecurityContext; runId: string; request: ApprovalRequest; callbackId: string },
): Promise<ApprovalRecord> {
  const { security, runId, request } = input;
  const now = deps.approvals.now();
  const approval = await deps.approvals.request({
    approvalId: request.approvalId,
    runId,
    tenantId: security.tenantId,
    toolName: request.toolName,
    toolCallId: request.toolCallId,
    arguments: request.arguments,
    preview: { ...request.preview },
    requestedBy: security.userId,
    requestedAt: new Date(now).toISOString(),
    expiresAt: new Date(now + deps.timeoutSeconds * 1000).toISOString(),
    callbackId: input.callbackId,
    waitName: request.name,
  });
  deps.logger.info("approval requested", { approvalId: approval.approvalId, toolName: request.toolName });
  const { approvalId, toolName, preview, requestedBy, requestedAt, expiresAt } = approval;
  await deps.approvalEvents
    .requested({
      tenantId: security.tenantId,
      runId,
      approvalId,
      toolName,
      preview,
      requestedBy,
      requestedAt,
      expiresAt,
    })
    .catch((error: unknown) =>
      deps.logger.warn("approval event not sent", { approvalId, error: error as Error }),
    );
  return approval;
}

/**
 * What a stored approval decides: `pending` while nobody decided and it has not expired, else the
 * decision (approved, rejected, expired; who, when, why) or `cancelled` (withdrawn with its run).
 */
export type ApprovalOutcome =
  | { kind: "pending"; approval: ApprovalRecord }
  | { kind: "decided"; approval: ApprovalRecord; decision: ApprovalDecision }
  | { kind: "cancelled"; approval: ApprovalRecord };

/**
 * The outcome of `approval` as stored ({@link ApprovalOutcome}); one past its expiry that nobody decided
 * is marked expired first (one conditional write; a decision that won the race is returned instead),
 * decided at its `expiresAt`: that is when it expired, however much later a call notices it (an MCP
 * call's repeat may come hours later), and what APPROVAL_EXPIRED and the decided listing show.
 * @param now the current time (epoch ms; default the store's clock)
 * @throws the store's error
 */
export async function approvalOutcomeOf(
  approvals: Pick<ApprovalStore, "expire" | "now">,
  approval: ApprovalRecord,
  now: number = approvals.now(),
): Promise<ApprovalOutcome> {
  let current = approval;
  const expiredAt = Date.parse(current.expiresAt);
  if (current.status === "pending" && expiredAt <= now) {
    current =
      (await approvals.expire(current.tenantId, current.runId, current.approvalId, expiredAt)) ?? current;
  }
  if (current.status === "pending") return { kind: "pending", approval: current };
  if (current.status === "cancelled") return { kind: "cancelled", approval: current };
  return { kind: "decided", approval: current, decision: decisionOf(current) };
}

/**
 * The decision an approval's wait ends with when its timeout passed: the approval is marked expired, or
 * the decision written first is returned (the durable runner's `<name>:expire` step).
 * @throws Error when the approval is missing; the store's error
 */
export async function expireApproval(
  approvals: Pick<ApprovalStore, "expire">,
  tenantId: string,
  runId: string,
  approvalId: string,
): Promise<ApprovalDecision> {
  const approval = await approvals.expire(tenantId, runId, approvalId);
  if (!approval) throw new Error(`The approval ${approvalId} is missing.`);
  return decisionOf(approval);
}

/** A decided (or expired, or withdrawn) approval as the gate's {@link ApprovalDecision}. */
function decisionOf(approval: ApprovalRecord): ApprovalDecision {
  return {
    decision: approval.status === "approved" || approval.status === "rejected" ? approval.status : "expired",
    decidedBy: approval.decidedBy,
    decidedAt: approval.decidedAt ?? approval.expiresAt,
    reason: approval.reason,
    requestedAt: approval.requestedAt,
  };
}
