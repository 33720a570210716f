import { ProblemError } from "../errors.js";
import type { SecurityContext } from "../identity.js";

/** The permission the read-only billing routes (`/v1/invoices…`) need; with it a caller sees any run of the tenant. */
export const BILLING_READ = "billing:read";

/** The permission of billing writers; with it a caller may cancel any run of the tenant. */
export const BILLING_WRITE = "billing:write";

/** The permission of approvers: deciding on (and listing) approvals of the tenant. */
export const BILLING_APPROVE = "billing:approve";

/**
 * The caller's security context when it holds `permission`.
 * @throws ProblemError FORBIDDEN (403, `requiredPermission`) otherwise
 */
export function requirePermission(security: SecurityContext, permission: string): SecurityContext {
  if (!security.permissions.includes(permission)) {
    throw new ProblemError(
      "FORBIDDEN",
      `This needs the "${permission}" permission, which the caller lacks.`,
      {
        extensions: { requiredPermission: permission },
      },
    );
  }
  return security;
}

/**
 * Whether `security` may see a run of its tenant started by `userId`: its own runs, and every run of
 * the tenant with billing:read. The one rule of GET /v1/runs/{runId}, its events, and the runs listing.
 */
export function canSeeRun(security: SecurityContext, userId: string): boolean {
  return userId === security.userId || security.permissions.includes(BILLING_READ);
}

/**
 * Whether `security` may cancel a run of its tenant started by `userId`: its own runs, and every run of
 * the tenant with billing:write (POST /v1/runs/{runId}/cancel).
 */
export function canCancelRun(security: SecurityContext, userId: string): boolean {
  return userId === security.userId || security.permissions.includes(BILLING_WRITE);
}

/**
 * Whose runs a listing of `security`'s tenant holds, by {@link canSeeRun}: `scope` "own" (the default)
 * is the caller's; "tenant" is everyone's, narrowed to `userId` when given. Anyone may name themselves;
 * listing another user's runs, or everyone's, needs billing:read.
 * @returns the user the listing is of, or undefined for every user of the tenant
 * @throws ProblemError FORBIDDEN (403, `requiredPermission: billing:read`) for a listing beyond the caller's own runs without it
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
