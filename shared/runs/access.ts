/**
 * Who may do what, the one access rule of every surface (REST, the event streams, MCP, later A2A and
 * AG-UI): the billing permissions, and who may see, cancel, decide on and list runs, approvals and
 * invoices. Everything is scoped to the caller's tenant by the stores' keys; these rules decide within
 * it. A refusal is a {@link DomainError}: FORBIDDEN where the caller may know the thing exists, NOT_FOUND
 * where it may not (another user's run looks like no run at all).
 */
import { DomainError } from "../domain-errors.js";
import type { SecurityContext } from "../identity.js";

/** The permission of readers of the ledger (`/v1/invoices…`); with it a caller sees any run of the tenant. */
export const BILLING_READ = "billing:read";

/** The permission of billing writers; with it a caller may cancel any run of the tenant. */
export const BILLING_WRITE = "billing:write";

/** The permission of approvers: deciding on (and listing) approvals of the tenant. */
export const BILLING_APPROVE = "billing:approve";

/** The permission of policy administrators: reading and changing the tenant's policies (docs/policies.md). */
export const POLICY_ADMIN = "policy:admin";

/**
 * The caller's security context when it holds `permission`.
 * @throws DomainError FORBIDDEN (`requiredPermission`) otherwise
 */
export function requirePermission(security: SecurityContext, permission: string): SecurityContext {
  if (!security.permissions.includes(permission)) {
    throw new DomainError("FORBIDDEN", `This needs the "${permission}" permission, which the caller lacks.`, {
      facts: { requiredPermission: permission },
    });
  }
  return security;
}

/** A run as the access rules see it: who started it. */
export interface RunOwner {
  userId: string;
}

/**
 * Whether `security` may see a run of its tenant (its record, steps and events): the user who started
 * it, and every billing reader of the tenant.
 */
export function canSeeRun(security: SecurityContext, run: RunOwner): boolean {
  return run.userId === security.userId || security.permissions.includes(BILLING_READ);
}

/** Whether `security` may cancel a run of its tenant: the user who started it, and every billing writer. */
export function canCancelRun(security: SecurityContext, run: RunOwner): boolean {
  return run.userId === security.userId || security.permissions.includes(BILLING_WRITE);
}

/**
 * Whose runs a listing of `security`'s tenant holds, by {@link canSeeRun}: `scope` "own" (the default)
 * is the caller's; "tenant" is everyone's, narrowed to `userId` when given. Anyone may name themselves;
 * listing another user's runs, or everyone's, needs billing:read.
 * @returns the user the listing is of, or undefined for every user of the tenant
 * @throws DomainError FORBIDDEN (`requiredPermission: billing:read`) for a listing beyond the caller's
 *   own runs without it
 */
export function runListUser(
  security: SecurityContext,
  request: { scope: "own" | "tenant"; userId?: string | undefined },
): string | undefined {
  const userId = request.scope === "own" ? (request.userId ?? security.userId) : request.userId;
  if (userId === security.userId) return userId;
  requirePermission(security, BILLING_READ);
  return userId;
}

/**
 * `run` when `allowed`; else NOT_FOUND, the same answer as for a run that does not exist (another user's
 * run is not disclosed).
 * @throws DomainError NOT_FOUND
 */
export function runIfAllowed<R>(run: R | undefined, allowed: (run: R) => boolean, runId: string): R {
  if (run === undefined || !allowed(run)) throw new DomainError("NOT_FOUND", `There is no run ${runId}.`);
  return run;
}

/**
 * Who may decide on an approval, in the order its checks run: billing:approve first ({@link
 * requirePermission}, before the approval is even looked up), then this rule, four eyes: the user who
 * started the run (`requestedBy`) may not decide on its approvals.
 * @throws DomainError FORBIDDEN (`rule: "four_eyes"`)
 */
export function requireFourEyes(security: SecurityContext, approval: { requestedBy: string }): void {
  if (approval.requestedBy === security.userId) {
    throw new DomainError(
      "FORBIDDEN",
      "Four-eyes rule: the user who started the run may not decide on its approvals; another approver must.",
      { facts: { rule: "four_eyes" } },
    );
  }
}
