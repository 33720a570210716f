import type { ApiDeps } from "../deps.js";
import { DomainError } from "../domain-errors.js";
import type { SecurityContext } from "../identity.js";
import type { ApprovalRecord, ApprovalStore } from "../store/approvals.js";
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
    throw conflictProblem(approval, runId);
  }
  // An approval asked for over MCP has no waiting execution (empty callback id): the caller's next
  // call with its idempotency key reads the decision (shared/mcp/call.ts).
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
 * `approvalId` and `approvalStatus`.
 */
function conflictProblem(approval: ApprovalRecord, runId: string): DomainError {
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
    approval.status === "expired" ||
    (approval.status === "pending" && Date.parse(approval.expiresAt) <= Date.now());
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
