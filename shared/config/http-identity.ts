/**
 * Configuration section: the HTTP edge and the caller's identity.
 * - MAX_BODY_BYTES (default 65536): request body cap; a prompt of 8000 characters is at most 48 KB of
 *   JSON even with every character \u-escaped.
 * - TENANT_CLAIMS / PERMISSION_CLAIMS: which authorizer claims carry the tenant (first present wins)
 *   and the permissions (all are merged).
 * - PERMISSION_LIST_CLAIMS (default `permissions,cognito:groups`): which permission claims are read in an
 *   authorizer's rendering of a list, see {@link PermissionListClaims}; every other one (`scope`) splits
 *   on spaces only (RFC 6749 section 3.3).
 * - IAM_PRINCIPAL_TENANTS: see {@link IamPrincipalTenants}.
 * - CONSOLE_CLIENT_ID: the OAuth client id the operator console (/console, functions/api/console.ts) signs
 *   in with at JWT_ISSUER (authorization code with PKCE); unset: the console asks for a pasted token.
 * - CONSOLE_STREAM_URL: the streaming function URL the console follows run events on (the API
 *   function's page names it; the stack sets it); unset: the console reads them from its own origin.
 * - CONSOLE_ORIGINS (comma separated origins, default none): the origins whose pages may call the
 *   streaming function from a browser (CORS, functions/stream/entry.ts): the console's (the stack sets it
 *   to the HTTP API's origin and those of `consoleCallbackUrls`).
 */
import * as z from "zod/mini";
import { claimList, envInt, jsonEnv, optionalString } from "./env.js";
import { configSection, type SectionDocs } from "./section.js";
import { tokenIssuerFields } from "./token-issuer.js";

/** Whether `text` is a web origin (`https://host[:port]`, or http): what a browser sends as `Origin`. */
function isOrigin(text: string): boolean {
  try {
    const url = new URL(text);
    return /^https?:$/.test(url.protocol) && url.origin === text;
  } catch {
    return false;
  }
}

/** CONSOLE_ORIGINS: comma separated web origins, trimmed; unset or empty gives none. */
const ConsoleOrigins = z.pipe(
  z.pipe(
    optionalString,
    z.transform((value: string | undefined) =>
      (value ?? "")
        .split(",")
        .map((item) => item.trim())
        .filter((item) => item.length > 0),
    ),
  ),
  z.array(z.string().check(z.refine(isOrigin, "must be origins: scheme://host[:port], no path"))),
);

/**
 * IAM_PRINCIPAL_TENANTS: JSON object from an IAM principal ARN (a user ARN, or an assumed-role ARN
 * without its session name) to the tenant and permissions that principal acts with.
 */
const IamPrincipalTenants = z.pipe(
  jsonEnv,
  z.record(
    z
      .string()
      .check(z.regex(/^arn:aws[a-z-]*:(iam|sts)::\d{12}:/, "keys must be IAM user or assumed-role ARNs")),
    z.strictObject({
      tenantId: z.string().check(z.regex(/^[A-Za-z0-9_-]{1,64}$/)),
      permissions: z._default(z.array(z.string().check(z.minLength(1), z.maxLength(128))), []),
    }),
  ),
);

/**
 * PERMISSION_LIST_CLAIMS: which permission claims hold a list (groups, roles) that an API Gateway
 * authorizer renders as one string, "[a b]" (HTTP API JWT authorizer) or "a,b" (REST API Cognito
 * authorizer); `none` for no claim. `scope` can never be one: it is space-delimited (RFC 6749 section 3.3),
 * and a comma or a bracket is part of a scope token.
 */
const PermissionListClaims = z.pipe(
  z.pipe(
    claimList("permissions,cognito:groups"),
    z.transform((names) => (names.length === 1 && names[0] === "none" ? [] : names)),
  ),
  z.array(z.string()).check(
    z.refine((names) => !names.includes("scope"), {
      message: "scope is split on spaces only (RFC 6749 section 3.3), never read as a rendered list",
    }),
  ),
);

/** The HTTP and identity section's variables, see the module comment. */
export const httpIdentityFields = {
  TENANT_CLAIMS: claimList("tenant_id,custom:tenant_id"),
  PERMISSION_CLAIMS: claimList("scope,permissions,cognito:groups"),
  PERMISSION_LIST_CLAIMS: PermissionListClaims,
  IAM_PRINCIPAL_TENANTS: IamPrincipalTenants,
  MAX_BODY_BYTES: envInt(65_536, 1_024, 6 * 1024 * 1024),
  CONSOLE_CLIENT_ID: optionalString,
  CONSOLE_STREAM_URL: z.pipe(optionalString, z.optional(z.url({ protocol: /^https?$/ }))),
  CONSOLE_ORIGINS: ConsoleOrigins,
};

/** How a caller's identity is read (see shared/identity.ts). */
export interface IdentityConfig {
  tenantClaims: string[];
  permissionClaims: string[];
  /** The permission claims read in an authorizer's rendering of a list (PERMISSION_LIST_CLAIMS). */
  permissionListClaims: string[];
  iamPrincipals: Record<string, { tenantId: string; permissions: string[] }>;
}

/**
 * The HTTP and identity section: `identity` (claim names and the IAM principal → tenant mapping),
 * `http` (the request body cap in bytes) and `console` (the console's OIDC sign-in: issuer, JWT_ISSUER,
 * and client id, both set or it takes a pasted token; `streamUrl`, the streaming function URL it follows
 * events on, undefined: its own origin; `origins`, the origins whose pages may call the streaming
 * function, CORS).
 */
export const httpIdentitySection = configSection({
  fields: httpIdentityFields,
  reads: { JWT_ISSUER: tokenIssuerFields.JWT_ISSUER },
  config: (
    env,
  ): {
    identity: IdentityConfig;
    http: { maxBodyBytes: number };
    console: {
      issuer: string | undefined;
      clientId: string | undefined;
      streamUrl: string | undefined;
      origins: string[];
    };
  } => ({
    identity: {
      tenantClaims: env.TENANT_CLAIMS,
      permissionClaims: env.PERMISSION_CLAIMS,
      permissionListClaims: env.PERMISSION_LIST_CLAIMS,
      iamPrincipals: env.IAM_PRINCIPAL_TENANTS,
    },
    http: { maxBodyBytes: env.MAX_BODY_BYTES },
    console: {
      issuer: env.JWT_ISSUER,
      clientId: env.CONSOLE_CLIENT_ID,
      streamUrl: env.CONSOLE_STREAM_URL?.replace(/\/$/, ""),
      origins: env.CONSOLE_ORIGINS,
    },
  }),
});

/** The prose of the HTTP and identity section's variables (docs/configuration.md). */
export const httpIdentityDocs: SectionDocs<typeof httpIdentityFields> = {
  TENANT_CLAIMS: {
    group: "HTTP and identity",
    description: "Authorizer claims carrying the tenant, comma separated; the first one present wins.",
  },
  PERMISSION_CLAIMS: {
    group: "HTTP and identity",
    description:
      "Authorizer claims carrying permissions, comma separated; all of them are merged. A string claim splits on spaces only (RFC 6749 section 3.3), unless PERMISSION_LIST_CLAIMS names it; an array claim gives its items.",
  },
  PERMISSION_LIST_CLAIMS: {
    group: "HTTP and identity",
    description:
      'Which permission claims hold lists (groups, roles) that an API Gateway authorizer renders as one string: read as `"[a b]"` from the HTTP API JWT authorizer and as `"a,b"` from a REST API Cognito authorizer, each only from its own authorizer. `none` for no claim; `scope` is refused (a comma or bracket is part of a scope token). Deploy setting `permissionListClaims`.',
  },
  IAM_PRINCIPAL_TENANTS: {
    group: "HTTP and identity",
    description:
      'Function URL (`AWS_IAM`) callers: JSON from an IAM user ARN, or an assumed-role ARN without its session name, to `{"tenantId", "permissions"}`. An unlisted principal is 401.',
  },
  MAX_BODY_BYTES: {
    group: "HTTP and identity",
    unit: "bytes",
    description:
      "Request body cap; above it 413 `PAYLOAD_TOO_LARGE`. A prompt of 8000 characters is at most 48 KB of JSON even with every character `\\u`-escaped.",
  },
  CONSOLE_CLIENT_ID: {
    group: "HTTP and identity",
    description:
      "OAuth client id the operator console (`/console`) signs in with at `JWT_ISSUER` (authorization code with PKCE); unset: the console takes a pasted token. Deploy setting `consoleClientId` (the built-in pool's app client by default).",
  },
  CONSOLE_STREAM_URL: {
    group: "HTTP and identity",
    description:
      "The streaming function URL the operator console follows run events on, named on its page (docs/console.md); unset, the console reads them from its own origin (behind the HTTP API: short, buffered streams). The stack sets it to the `StreamUrl` output; `npm run dev` to its local stand-in.",
  },
  CONSOLE_ORIGINS: {
    group: "HTTP and identity",
    description:
      "Comma-separated origins (`https://host[:port]`) whose pages may call the streaming function from a browser: its CORS answers them (and no other origin) on every route, preflights included. The stack sets it to the HTTP API's origin and those of `consoleCallbackUrls`.",
  },
};
