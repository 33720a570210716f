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

/** The permission of policy administrators: reading and changing the tenant's policies (docs/policies.md). */
export const POLICY_ADMIN = "policy:admin";
