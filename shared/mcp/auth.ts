/**
 * `/mcp` as an OAuth 2.1 resource server (MCP authorization spec, RFC 9728, RFC 8707): the endpoint
 * verifies the bearer token itself, because API Gateway's JWT authorizer answers a missing or bad token
 * with a bare 401 that cannot carry the `resource_metadata` an MCP client discovers its authorization
 * server from. The token is the API's JWT, checked by the service's one verifier
 * (shared/auth/token-verifier.ts `mcp`: same issuer, keys and algorithms), except that its audience must
 * be this endpoint's canonical URL, MCP_RESOURCE_URL: a token minted for another resource (the REST
 * API's audience, another MCP server) is refused, and the request's Host plays no part. Its claims give
 * tenant, user and permissions through shared/identity.ts. Tokens are never passed on.
 */
import type { TokenVerdict } from "../auth/bearer.js";
import { createTokenVerifier } from "../auth/token-verifier.js";
import type { Config } from "../config.js";
import { DomainError } from "../domain-errors.js";
import { type SecurityContext, securityContextFromClaims } from "../identity.js";

/**
 * The outcome of checking a request's bearer token: the caller's security context, or the refusal
 * (RFC 6750 `error` and a `description` saying what to fix, never token contents).
 */
export type McpAuthVerdict = { ok: true; security: SecurityContext } | Extract<TokenVerdict, { ok: false }>;

/** Checks the `Authorization` header of one `/mcp` request; see {@link createMcpAuthenticator}. */
export type McpAuthenticator = (authorization: string | undefined) => Promise<McpAuthVerdict>;

/**
 * Builds the token check of `/mcp` from config (`auth`: JWT_ISSUER, JWT_ALGORITHMS, the key set,
 * MCP_RESOURCE_URL; `identity`: the claims → tenant, user, permissions): the token must pass the one
 * verifier's `mcp` rules, then its claims must give a security context (shared/identity.ts, claims as
 * issued). The key set is fetched once per authenticator and cached. Never throws.
 */
export function createMcpAuthenticator(config: Pick<Config, "auth" | "identity">): McpAuthenticator {
  const verifier = createTokenVerifier(config.auth);
  return async (authorization) => {
    const verdict = await verifier.mcp(authorization);
    if (!verdict.ok) return verdict;
    try {
      return { ok: true, security: securityContextFromClaims(verdict.claims, config.identity, "verified") };
    } catch (error) {
      if (!(error instanceof DomainError)) throw error;
      const description = error.message.replace(/\.$/, "");
      return { ok: false, error: "invalid_token", description };
    }
  };
}
