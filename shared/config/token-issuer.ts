/**
 * Configuration section: the token issuer and its keys, and the audience of `/mcp`.
 * - JWT_ISSUER, JWT_JWKS_URL, JWT_JWKS, MCP_RESOURCE_URL: how `/mcp` verifies bearer tokens itself (it
 *   is an OAuth 2.1 resource server, docs/mcp.md): the issuer the API's JWT authorizer trusts, its key
 *   set (a URL, default `<issuer>/.well-known/jwks.json`, or inline keys), and the canonical URL of the
 *   endpoint that tokens must name as their audience (unset: this request's own origin + `/mcp`).
 */
import * as z from "zod/mini";
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

/** The token issuer section's variables, see the module comment. */
export const tokenIssuerFields = {
  JWT_ISSUER: z.pipe(optionalString, z.optional(z.string().check(z.maxLength(2048)))),
  JWT_JWKS_URL: optionalUrl,
  JWT_JWKS: InlineJwks,
  MCP_RESOURCE_URL: optionalUrl,
};

/**
 * The token issuer section: `mcp`, how `/mcp` verifies bearer tokens (docs/mcp.md): `issuer` (undefined:
 * /mcp refuses every token), `jwksUrl` (undefined: `<issuer>/.well-known/jwks.json`), `jwks` (inline keys;
 * used instead of the URL when set), `resourceUrl` (the audience tokens must carry; undefined: the
 * request's origin + `/mcp`).
 */
export const tokenIssuerSection = configSection({
  fields: tokenIssuerFields,
  config: (
    env,
  ): {
    mcp: {
      issuer: string | undefined;
      jwksUrl: string | undefined;
      jwks: { keys: Record<string, unknown>[] } | undefined;
      resourceUrl: string | undefined;
    };
  } => ({
    mcp: {
      issuer: env.JWT_ISSUER,
      jwksUrl: env.JWT_JWKS_URL,
      jwks: "keys" in env.JWT_JWKS ? (env.JWT_JWKS as { keys: Record<string, unknown>[] }) : undefined,
      resourceUrl: env.MCP_RESOURCE_URL,
    },
  }),
});

/** The prose of the token issuer section's variables (docs/configuration.md). */
export const tokenIssuerDocs: SectionDocs<typeof tokenIssuerFields> = {
  JWT_ISSUER: {
    group: "MCP",
    description:
      "The token issuer (`iss`) `/mcp` and the streaming function accept: the one the API's JWT authorizer trusts (the stack sets it from `jwtIssuer`; `npm run dev` from its local issuer, or, when given, trusts it instead, with JWT_JWKS_URL and JWT_AUDIENCE: docs/local-workflow.md). Unset: `/mcp` answers 401 to every token (docs/mcp.md).",
  },
  JWT_JWKS_URL: {
    group: "MCP",
    description:
      "Where `/mcp` reads the issuer's signing keys (JWKS, cached). Unset: `<JWT_ISSUER>/.well-known/jwks.json` (Cognito's and most issuers' location).",
  },
  JWT_JWKS: {
    group: "MCP",
    description:
      'Inline signing keys (`{"keys":[…]}`, RFC 7517) used instead of JWT_JWKS_URL; `npm run dev` sets its generated public key here.',
  },
  MCP_RESOURCE_URL: {
    group: "MCP",
    description:
      "The canonical URL of the MCP endpoint: the audience (`aud`) a token must carry to be accepted on `/mcp` (RFC 8707 / RFC 9728 `resource`). Unset: the request's own origin + `/mcp`, as API Gateway received it.",
  },
};
