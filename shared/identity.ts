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

/**
 * The identity settings of {@link Config} (TENANT_CLAIMS, PERMISSION_CLAIMS, PERMISSION_LIST_CLAIMS,
 * IAM_PRINCIPAL_TENANTS).
 */
export type IdentityConfig = Config["identity"];

/**
 * The defaults of {@link IdentityConfig} (those of TENANT_CLAIMS, PERMISSION_CLAIMS,
 * PERMISSION_LIST_CLAIMS and IAM_PRINCIPAL_TENANTS in shared/config.ts), for callers without a Config (scripts, unit tests).
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
 * How the claims reached the function, which decides how a list claim's string is read:
 * - `verified`: as issued, JSON types kept (a token the function verified itself: `/mcp`);
 * - `http-api`: rendered by API Gateway's HTTP API JWT authorizer (`requestContext.authorizer.jwt`),
 *   every claim a string, an array as "[a b]" (shared/auth/gateway-claims.ts `claimAsString`);
 * - `rest-api`: rendered by a REST API Cognito or JWT authorizer (`requestContext.authorizer.claims`),
 *   an array as "a,b".
 */
export type ClaimRendering = "verified" | "http-api" | "rest-api";

/** Space-delimited tokens (RFC 6749 section 3.3: `scope-token *( SP scope-token )`), empties dropped. */
const spaceDelimited = (text: string) => text.split(" ");

/**
 * The permissions one claim grants.
 * - An array: its items, each one whole permission.
 * - A string of a claim that is not a list claim (`scope`, or any claim PERMISSION_LIST_CLAIMS leaves
 *   out): split on spaces only, so `"openid,billing:approve"` or `"[billing:approve]"` is one token that
 *   names no permission.
 * - A string of a list claim: decoded from the rendering of its authorizer only, "[a b]" from the HTTP
 *   API, "a,b" from the REST API; verified claims keep arrays as arrays, so their strings split on spaces.
 */
export function permissionsOfClaim(
  value: string | readonly string[],
  options: { listClaim: boolean; rendering: ClaimRendering },
): string[] {
  let items: readonly string[];
  if (typeof value !== "string") items = value;
  else if (!options.listClaim || options.rendering === "verified") items = spaceDelimited(value);
  else if (options.rendering === "rest-api") items = value.split(",");
  else items = spaceDelimited(/^\[(.*)\]$/s.exec(value.trim())?.[1] ?? value);
  return [...new Set(items.map((item) => item.trim()).filter((item) => item.length > 0))];
}

/**
 * True when a claim carries no value: absent, empty, JSON null, or the text "null" — authorizers render
 * every claim as a string (see shared/auth/gateway-claims.ts `claimAsString`), so a JSON null arrives as "null".
 * Such a claim is treated exactly like a missing one, never as the id "null".
 */
function isEmptyClaim(value: unknown): boolean {
  return value === undefined || value === null || value === "" || value === "null";
}

function unauthenticated(detail: string): DomainError {
  return new DomainError("UNAUTHENTICATED", detail);
}

/**
 * Builds the security context from token claims (verified by the function itself, or rendered by an
 * HTTP API v2 JWT authorizer or a REST v1 Cognito/JWT authorizer, as `rendering` says): `sub` → userId;
 * the first of `config.tenantClaims` present → tenantId; every claim of `config.permissionClaims` →
 * permissions (merged, deduplicated; each read by {@link permissionsOfClaim}).
 * A claim that is empty, JSON null or the text "null" counts as missing.
 * @throws DomainError UNAUTHENTICATED when `sub` or the tenant is missing or malformed
 */
export function securityContextFromClaims(
  claims: Record<string, unknown>,
  config: IdentityConfig = DEFAULT_IDENTITY_CONFIG,
  rendering: ClaimRendering = "verified",
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
  return { userId: sub.data, tenantId: tenant.data, permissions: permissionsOf(claims, config, rendering) };
}

/**
 * Every permission the claims of `config.permissionClaims` grant, merged and deduplicated.
 * @throws DomainError UNAUTHENTICATED when such a claim is neither a string nor an array of strings
 */
function permissionsOf(
  claims: Record<string, unknown>,
  config: IdentityConfig,
  rendering: ClaimRendering,
): string[] {
  const permissions = new Set<string>();
  for (const name of config.permissionClaims) {
    if (claims[name] === undefined) continue;
    const value = ClaimValue.safeParse(claims[name]);
    if (!value.success) {
      throw unauthenticated(`The permission claim \`${name}\` is neither a string nor an array of strings.`);
    }
    const listClaim = config.permissionListClaims.includes(name);
    for (const permission of permissionsOfClaim(value.data, { listClaim, rendering })) {
      permissions.add(permission);
    }
  }
  return [...permissions];
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
  if (jwt.success) return securityContextFromClaims(jwt.data.jwt.claims, config, "http-api");
  const rest = RestClaimsAuthorizer.safeParse(authorizer);
  if (rest.success) return securityContextFromClaims(rest.data.claims, config, "rest-api");
  const iam = IamAuthorizer.safeParse(authorizer);
  if (iam.success) return securityContextFromIam(iam.data.iam, config);
  throw unauthenticated("No verified identity: the request carried no authorizer claims or IAM principal.");
}
