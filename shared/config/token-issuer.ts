/**
 * Configuration section: bearer tokens, one section for every token check of the service (the one
 * verifier, shared/auth/token-verifier.ts: the streaming function, `/mcp`, the dev gateway).
 * - JWT_ISSUER: the `iss` every token must carry, the issuer the API's JWT authorizer trusts.
 * - JWT_AUDIENCE (comma separated): the API's audiences, as the HTTP API's JWT authorizer accepts them
 *   (infra/ sets both from one setting): `aud`, or `client_id` only in a token without `aud`.
 * - JWT_ALGORITHMS (default RS256, what Cognito signs with): the signature algorithms accepted, among the
 *   asymmetric ones of shared/auth/settings.ts.
 * - JWT_JWKS_URL, JWT_JWKS: the issuer's key set (a URL, default `<issuer>/.well-known/jwks.json`, or
 *   inline keys).
 * - MCP_RESOURCE_URL: the canonical URL of `/mcp` (an OAuth 2.1 resource server, docs/mcp.md), the only
 *   audience its tokens may carry (http or https, no fragment: RFC 8707 section 2). Never taken from a
 *   request; unset: `/mcp` accepts no token. The stack sets its API's URL + `/mcp`, `npm run dev` its own.
 */
import * as z from "zod/mini";
import { type AuthSettings, SIGNING_ALGORITHMS } from "../auth/settings.js";
import { jsonEnv, optionalString, optionalUrl } from "./env.js";
import { configSection, type SectionDocs } from "./section.js";

/** JWT_JWKS: an inline JSON Web Key Set (`{"keys":[…]}`, RFC 7517); unset or empty: none. */
const InlineJwks = z.pipe(
  jsonEnv,
  z.union([
    z.strictObject({}),
    z.object({ keys: z.array(z.record(z.string(), z.unknown())).check(z.minLength(1)) }),
  ]),
);

/** A comma separated list, trimmed, blanks dropped (unset or empty: `defaultValue`'s items). */
const commaList = (defaultValue: string) =>
  z.pipe(
    optionalString,
    z.transform((value) =>
      (value ?? defaultValue)
        .split(",")
        .map((item) => item.trim())
        .filter((item) => item.length > 0),
    ),
  );

/** JWT_ALGORITHMS: comma separated signature algorithms (asymmetric only), at least one. */
const SigningAlgorithms = z.pipe(
  commaList("RS256"),
  z.array(z.enum(SIGNING_ALGORITHMS)).check(z.minLength(1)),
);

/** MCP_RESOURCE_URL: an http(s) URL without a fragment (RFC 8707 section 2); unset or empty: none. */
const ResourceUrl = z.pipe(
  optionalString,
  z.optional(
    z
      .url({ protocol: /^https?$/ })
      .check(z.refine((url) => !url.includes("#"), "must not have a fragment (RFC 8707 section 2)")),
  ),
);

/** The bearer-token section's variables, see the module comment. */
export const tokenIssuerFields = {
  JWT_ISSUER: z.pipe(optionalString, z.optional(z.string().check(z.maxLength(2048)))),
  JWT_AUDIENCE: commaList(""),
  JWT_ALGORITHMS: SigningAlgorithms,
  JWT_JWKS_URL: optionalUrl,
  JWT_JWKS: InlineJwks,
  MCP_RESOURCE_URL: ResourceUrl,
};

/** The bearer-token section: `auth`, how every bearer token is verified (shared/auth/settings.ts). */
export const tokenIssuerSection = configSection({
  fields: tokenIssuerFields,
  config: (env): { auth: AuthSettings } => ({
    auth: {
      issuer: env.JWT_ISSUER,
      audiences: env.JWT_AUDIENCE,
      algorithms: env.JWT_ALGORITHMS,
      jwksUrl: env.JWT_JWKS_URL,
      jwks: "keys" in env.JWT_JWKS ? (env.JWT_JWKS as { keys: Record<string, unknown>[] }) : undefined,
      mcpResourceUrl: env.MCP_RESOURCE_URL,
    },
  }),
  problems: (env) => issuerKeyProblems(env),
});

/**
 * The section's rule: an issuer without a key set of its own (JWT_JWKS_URL, JWT_JWKS) has its keys read
 * from `<JWT_ISSUER>/.well-known/jwks.json`, so it must then be an http(s) URL; otherwise every token
 * would be refused with a URL parser's reason.
 */
function issuerKeyProblems(env: {
  JWT_ISSUER: string | undefined;
  JWT_JWKS_URL: string | undefined;
  JWT_JWKS: object;
}): string[] {
  const issuer = env.JWT_ISSUER;
  if (!issuer || env.JWT_JWKS_URL || "keys" in env.JWT_JWKS) return [];
  const url = URL.canParse(issuer) ? new URL(issuer) : undefined;
  if (url && (url.protocol === "https:" || url.protocol === "http:")) return [];
  return [
    `JWT_ISSUER (${issuer}) is not an http(s) URL, so its keys cannot be read from <JWT_ISSUER>/.well-known/jwks.json: set JWT_JWKS_URL or JWT_JWKS.`,
  ];
}

/** The prose of the bearer-token section's variables (docs/configuration.md). */
export const tokenIssuerDocs: SectionDocs<typeof tokenIssuerFields> = {
  JWT_ISSUER: {
    group: "Bearer tokens",
    description:
      "The token issuer (`iss`) every token check accepts: the streaming function's, `/mcp`'s and the dev gateway's, one verifier (shared/auth/token-verifier.ts); the one the API's JWT authorizer trusts (the stack sets it from `jwtIssuer` or its built-in pool; `npm run dev` from its local issuer, or, when given, trusts it instead, with JWT_JWKS_URL and JWT_AUDIENCE: docs/local-workflow.md). Unset: every token is refused with 401.",
  },
  JWT_AUDIENCE: {
    group: "Bearer tokens",
    description:
      "Comma-separated audiences of the API's own tokens, as the HTTP API's JWT authorizer accepts them (the stack sets them from `jwtAudience` or its pool's app client): a token's `aud` must name one, or, only when it has no `aud`, its `client_id` (a Cognito access token). Checked by the streaming function and the dev gateway; an MCP token (audience MCP_RESOURCE_URL) is not one.",
  },
  JWT_ALGORITHMS: {
    group: "Bearer tokens",
    description:
      "Comma-separated signature algorithms every token check accepts, asymmetric only (`RS256` … `PS512`, `ES256` … `ES512`, `EdDSA`; never `HS*` or `none`). API Gateway's HTTP API authorizer verifies RSA only, so an `ES256` issuer reaches `/mcp` and the streaming function but not the HTTP API's other routes. Deploy setting `jwtAlgorithms`.",
  },
  JWT_JWKS_URL: {
    group: "Bearer tokens",
    description:
      "Where the issuer's signing keys (JWKS) are read, once per function instance and cached (refetched for an unknown `kid`, at most every 30 s). Unset: `<JWT_ISSUER>/.well-known/jwks.json` (Cognito's and Auth0's location; Keycloak, Okta and Entra ID serve theirs elsewhere: their discovery document's `jwks_uri`). Deploy setting `jwtJwksUrl`, with your own issuer.",
  },
  JWT_JWKS: {
    group: "Bearer tokens",
    description:
      'Inline signing keys (`{"keys":[…]}`, RFC 7517) used instead of JWT_JWKS_URL; `npm run dev` sets its generated public key here.',
  },
  MCP_RESOURCE_URL: {
    group: "Bearer tokens",
    description:
      "The canonical URL of the MCP endpoint (http or https, no fragment): the only audience (`aud`) a token may carry on `/mcp` (RFC 8707), and the `resource` of its RFC 9728 metadata. Never taken from a request. The stack sets its HTTP API's URL + `/mcp`; deploy setting `mcpResourceUrl` for a custom domain or proxy. `npm run dev` sets its own URL + `/mcp`. Unset: `/mcp` refuses every token and its metadata is 404.",
  },
};
