/**
 * The built-in user pool's vocabulary (infra/user-pool.ts), shared by the stack, its pre token
 * generation trigger (functions/pre-token/handler.ts) and the user command (local/user.ts), so a role,
 * its permissions and the tenant attribute are spelt once. Free of AWS and CDK imports.
 */

/** A tenant id as it may appear in a key: 1-64 characters of A-Z a-z 0-9 _ - (shared/identity.ts TenantId). */
export const TENANT_ID_PATTERN = /^[A-Za-z0-9_-]{1,64}$/;

/**
 * The roles a user of the built-in pool can have, each a Cognito group of the same name, and the
 * permissions (access token scopes) each gives. The permission names are the ones the tools and routes
 * require (shared/tools `requiredPermission`, functions/api/approvals.ts BILLING_APPROVE). A writer does
 * not approve and an approver does not write: the four-eyes rule of approvals needs two people anyway.
 */
export const ROLE_PERMISSIONS = {
  reader: ["billing:read"],
  writer: ["billing:read", "billing:write"],
  approver: ["billing:read", "billing:approve"],
} as const satisfies Record<string, readonly string[]>;

/** A role name: a key of {@link ROLE_PERMISSIONS} and the name of its Cognito group. */
export type Role = keyof typeof ROLE_PERMISSIONS;

/** The role names, in the order of {@link ROLE_PERMISSIONS}. */
export const ROLES = Object.keys(ROLE_PERMISSIONS) as Role[];

/** True when `name` is one of {@link ROLES}. */
export function isRole(name: string): name is Role {
  return Object.hasOwn(ROLE_PERMISSIONS, name);
}

/** Every permission any role gives, deduplicated (what the trigger may add and suppresses otherwise). */
export const ALL_PERMISSIONS: readonly string[] = [...new Set(Object.values(ROLE_PERMISSIONS).flat())];

/**
 * The permissions of a set of groups: the union of their roles' permissions, sorted; groups that are
 * not roles add nothing.
 */
export function permissionsOfGroups(groups: readonly string[]): string[] {
  const permissions = new Set<string>();
  for (const group of groups) {
    if (isRole(group)) for (const permission of ROLE_PERMISSIONS[group]) permissions.add(permission);
  }
  return [...permissions].sort();
}

/**
 * The custom user attribute holding a user's tenant, without Cognito's `custom:` prefix (how CDK's
 * `customAttributes` names it). Only an administrator can set it: the app client may not write it.
 */
export const TENANT_ATTRIBUTE = "tenant_id";

/** The attribute as Cognito's APIs and trigger events name it. */
export const TENANT_USER_ATTRIBUTE = `custom:${TENANT_ATTRIBUTE}`;

/** The access token claim the trigger writes the tenant into. */
export const TENANT_CLAIM = "tenant_id";

/**
 * The identity settings (shared/config.ts TENANT_CLAIMS, PERMISSION_CLAIMS) of a stack with the
 * built-in pool: the tenant only from the trigger's `tenant_id` claim, the permissions only from the
 * access token's `scope`. Neither `cognito:groups` (role names, not permissions) nor the ID token's
 * `custom:tenant_id` counts, so only the access tokens the trigger shaped pass the handler.
 */
export const BUILT_IN_POOL_IDENTITY = { TENANT_CLAIMS: TENANT_CLAIM, PERMISSION_CLAIMS: "scope" } as const;

/**
 * The built-in pool's password policy and token lifetimes.
 * - Passwords: 12 characters with lower and upper case, digits and symbols (above cdk-nag COG1's 8);
 *   a temporary password from `npm run user -- add` (local/user.ts) is valid 3 days.
 * - Access and ID tokens: 1 hour (Cognito's default); refresh tokens 30 days (Cognito's default).
 */
export const USER_POOL_POLICY = {
  minPasswordLength: 12,
  temporaryPasswordDays: 3,
  accessTokenHours: 1,
  refreshTokenDays: 30,
} as const;
