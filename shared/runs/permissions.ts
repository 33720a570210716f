import { DomainError } from "../domain-errors.js";
import type { SecurityContext } from "../identity.js";

/** The permission the read-only billing routes (`/v1/invoices…`) need; with it a caller sees any run of the tenant. */
export const BILLING_READ = "billing:read";

/** The permission of billing writers; with it a caller may cancel any run of the tenant. */
export const BILLING_WRITE = "billing:write";

/** The permission of approvers: deciding on (and listing) approvals of the tenant. */
export const BILLING_APPROVE = "billing:approve";

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
