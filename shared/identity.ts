import * as z from "zod";
import { CONFIG_DEFAULTS, type Config } from "./config.js";
import { DomainError } from "./domain-errors.js";
import { TENANT_ID_PATTERN } from "./user-roles.js";

/**
 * Who is calling, taken only from the verified identity API Gateway or Lambda attaches to the event
 * (never from the request body or a header the client controls).
 * - `userId`: the token's `sub`, or the IAM principal's user id for IAM-signed calls
 * - `tenantId`: from the configured tenant claim (or the IAM principal mapping); every DynamoDB key
 *   starts with it
 * - `permissions`: scopes or groups such as `billing:write`
 */
export interface SecurityContext {
  userId: string;
  tenantId: string;
  permissions: readonly string[];
}

/** The identity settings of {@link Config} (TENANT_CLAIMS, PERMISSION_CLAIMS, IAM_PRINCIPAL_TENANTS). */
export type IdentityConfig = Config["identity"];

/**
 * The defaults of {@link IdentityConfig} (those of TENANT_CLAIMS, PERMISSION_CLAIMS and
 * IAM_PRINCIPAL_TENANTS in shared/config.ts), for callers without a Config (scripts, unit tests).
 */
export const DEFAULT_IDENTITY_CONFIG: IdentityConfig = CONFIG_DEFAULTS.identity;

/** A tenant id as it may appear in a key: 1-64 characters of A-Z a-z 0-9 _ -. */
export const TenantId = z
  .string()
  .trim()
  .regex(TENANT_ID_PATTERN, "tenant must be 1-64 characters of A-Z a-z 0-9 _ -");

const Subject = z.string().trim().min(1).max(256);

/** A claim value as authorizers deliver it: a string, or (HTTP API JWT) an array of strings. */
const ClaimValue = z.union([z.string(), z.array(z.string())]);

/** The three authorizer shapes this service accepts, as zod schemas of the parts it reads. */
const JwtAuthorizer = z.object({ jwt: z.object({ claims: z.record(z.string(), z.unknown()) }) });
const RestClaimsAuthorizer = z.object({ claims: z.record(z.string(), z.unknown()) });
const IamAuthorizer = z.object({
  iam: z.object({
    userArn: z.string().min(1),
    userId: z.string().min(1).optional(),
    callerId: z.string().min(1).optional(),
    accountId: z.string().optional(),
  }),
});

/**
 * Splits a permission claim into distinct permissions: a space separated string ("a b"), API
 * Gateway's rendering of an array ("[a b]" from an HTTP API JWT authorizer), a comma separated string
 * ("a,b", how a REST API Cognito authorizer renders `cognito:groups`), or a real array.
 */
export function splitPermissions(value: string | readonly string[] | undefined): string[] {
  if (value === undefined) return [];
  const items =
    typeof value === "string"
      ? value
          .trim()
          .replace(/^\[(.*)\]$/s, "$1")
          .split(/[\s,]+/)
      : value;
  return [...new Set(items.map((item) => item.trim()).filter((item) => item.length > 0))];
}

/**
 * True when a claim carries no value: absent, empty, JSON null, or the text "null" — authorizers render
 * every claim as a string (see local/dev-event.ts `claimAsString`), so a JSON null arrives as "null".
 * Such a claim is treated exactly like a missing one, never as the id "null".
 */
function isEmptyClaim(value: unknown): boolean {
  return value === undefined || value === null || value === "" || value === "null";
}

function unauthenticated(detail: string): DomainError {
  return new DomainError("UNAUTHENTICATED", detail);
}

/**
 * Builds the security context from token claims (HTTP API v2 JWT authorizer or REST v1 Cognito/JWT
 * authorizer): `sub` → userId; the first of `config.tenantClaims` present → tenantId; every claim of
 * `config.permissionClaims` → permissions (merged, deduplicated).
 * A claim that is empty, JSON null or the text "null" counts as missing.
 * @throws DomainError UNAUTHENTICATED when `sub` or the tenant is missing or malformed
 */
export function securityContextFromClaims(
  claims: Record<string, unknown>,
  config: IdentityConfig = DEFAULT_IDENTITY_CONFIG,
): SecurityContext {
  const sub = Subject.safeParse(claims.sub);
  if (!sub.success || isEmptyClaim(sub.data))
    throw unauthenticated("The verified identity has no usable `sub` claim.");
  const tenantClaim = config.tenantClaims.find((name) => !isEmptyClaim(claims[name]));
  if (tenantClaim === undefined) {
    throw unauthenticated(
      `The verified identity carries no tenant claim (looked for ${config.tenantClaims.join(", ")}).`,
    );
  }
  const tenant = TenantId.safeParse(claims[tenantClaim]);
  if (!tenant.success) {
    throw unauthenticated(
      `The tenant claim \`${tenantClaim}\` is malformed: ${tenant.error.issues[0]?.message}.`,
    );
  }
  const permissions = new Set<string>();
  for (const name of config.permissionClaims) {
    const value = ClaimValue.safeParse(claims[name]);
    if (claims[name] !== undefined && !value.success) {
      throw unauthenticated(`The permission claim \`${name}\` is neither a string nor an array of strings.`);
    }
    if (value.success) for (const permission of splitPermissions(value.data)) permissions.add(permission);
  }
  return { userId: sub.data, tenantId: tenant.data, permissions: [...permissions] };
}

/**
 * The IAM principal's ARN in the form IAM_PRINCIPAL_TENANTS is keyed by: a user ARN as it is, an
 * assumed-role ARN (`arn:aws:sts::<account>:assumed-role/<role>/<session>`) without its session name.
 */
export function principalKeys(userArn: string): string[] {
  const assumed = /^(arn:aws[a-z-]*:sts::\d{12}:assumed-role\/[^/]+)\/.+$/.exec(userArn);
  return assumed?.[1] ? [userArn, assumed[1]] : [userArn];
}

/**
 * Builds the security context of an IAM-signed call (Lambda function URL with AuthType AWS_IAM, or an
 * HTTP API IAM route): the event says who signed (`requestContext.authorizer.iam`), but nothing in it
 * says which tenant the principal acts for. The tenant and permissions therefore come from the
 * IAM_PRINCIPAL_TENANTS mapping in config, keyed by user ARN or assumed-role ARN; an unmapped
 * principal is rejected. userId is the IAM unique id (`userId`, else `callerId`).
 * @throws DomainError UNAUTHENTICATED when the principal is not in the mapping
 */
export function securityContextFromIam(
  iam: z.infer<typeof IamAuthorizer>["iam"],
  config: IdentityConfig = DEFAULT_IDENTITY_CONFIG,
): SecurityContext {
  const mapping = principalKeys(iam.userArn)
    .map((key) => config.iamPrincipals[key])
    .find((entry) => entry !== undefined);
  if (!mapping) {
    throw unauthenticated(
      `The IAM principal ${iam.userArn} is not mapped to a tenant; add it to IAM_PRINCIPAL_TENANTS.`,
    );
  }
  const userId = Subject.safeParse(iam.userId ?? iam.callerId ?? iam.userArn);
  if (!userId.success) throw unauthenticated("The IAM principal has no usable user id.");
  return { userId: userId.data, tenantId: mapping.tenantId, permissions: [...new Set(mapping.permissions)] };
}

/**
 * Builds the security context from the authorizer data in a Lambda event, in this order:
 * 1. HTTP API (v2) JWT authorizer: `requestContext.authorizer.jwt.claims`
 * 2. REST API (v1) Cognito user pool or JWT authorizer: `requestContext.authorizer.claims`
 * 3. IAM (Lambda function URL with AWS_IAM, HTTP API IAM): `requestContext.authorizer.iam`
 * Nothing else in the event (body, headers, query) is read.
 * @throws DomainError UNAUTHENTICATED when there is no authorizer data, or it is incomplete
 */
export function securityContextFromEvent(
  event: unknown,
  config: IdentityConfig = DEFAULT_IDENTITY_CONFIG,
): SecurityContext {
  const authorizer = (event as { requestContext?: { authorizer?: unknown } } | undefined)?.requestContext
    ?.authorizer;
  const jwt = JwtAuthorizer.safeParse(authorizer);
  if (jwt.success) return securityContextFromClaims(jwt.data.jwt.claims, config);
  const rest = RestClaimsAuthorizer.safeParse(authorizer);
  if (rest.success) return securityContextFromClaims(rest.data.claims, config);
  const iam = IamAuthorizer.safeParse(authorizer);
  if (iam.success) return securityContextFromIam(iam.data.iam, config);
  throw unauthenticated("No verified identity: the request carried no authorizer claims or IAM principal.");
}
