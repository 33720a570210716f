/**
 * `/mcp` as an OAuth 2.1 resource server (MCP authorization spec, RFC 9728, RFC 8707): the endpoint
 * verifies the bearer token itself, because API Gateway's JWT authorizer answers a missing or bad token
 * with a bare 401 that cannot carry the `resource_metadata` an MCP client discovers its authorization
 * server from. The token is the API's JWT (same issuer, same claims → tenant, user, permissions through
 * shared/identity.ts), except that its audience must be this endpoint's canonical URL: a token minted for
 * another resource (the REST API's audience, another MCP server) is refused. Tokens are never passed on.
 */
import {
  createLocalJWKSet,
  createRemoteJWKSet,
  errors,
  type JSONWebKeySet,
  type JWTVerifyGetKey,
  jwtVerify,
} from "jose";
import type { Config } from "../config.js";
import { DomainError } from "../domain-errors.js";
import { type SecurityContext, securityContextFromClaims } from "../identity.js";

/** Signature algorithms accepted (asymmetric only: RS256 as API Gateway's JWT authorizer, and ES256). */
const ALGORITHMS = ["RS256", "ES256"];

/**
 * The outcome of checking a request's bearer token: the caller's security context, or why it gets 401
 * (`error` as RFC 6750 section 3.1 names it; `description` says what to fix, never token contents).
 */
export type BearerVerdict =
  | { ok: true; security: SecurityContext }
  | { ok: false; error: "invalid_request" | "invalid_token"; description: string };

/** Verifies a bearer token for one resource URL; see {@link createBearerVerifier}. */
export type BearerVerifier = (
  authorization: string | undefined,
  resourceUrl: string,
) => Promise<BearerVerdict>;

/**
 * Builds the token check of `/mcp` from config (JWT_ISSUER, JWT_JWKS_URL or JWT_JWKS, identity claims):
 * the `Authorization: Bearer` token must be a JWS signed by a key of the issuer's key set (RS256/ES256),
 * with `iss` = JWT_ISSUER, `aud` naming `resourceUrl`, `exp` in the future (and `nbf` passed), and claims
 * that give a security context (shared/identity.ts `securityContextFromClaims`). Remote keys are fetched
 * once and cached by jose (refetched for an unknown `kid`). Never throws.
 */
export function createBearerVerifier(config: Pick<Config, "mcp" | "identity">): BearerVerifier {
  const { issuer } = config.mcp;
  let keys: JWTVerifyGetKey | undefined;
  const keySet = (): JWTVerifyGetKey => {
    keys ??= config.mcp.jwks
      ? createLocalJWKSet(config.mcp.jwks as unknown as JSONWebKeySet)
      : createRemoteJWKSet(
          new URL(config.mcp.jwksUrl ?? `${String(issuer).replace(/\/$/, "")}/.well-known/jwks.json`),
        );
    return keys;
  };
  return async (authorization, resourceUrl) => {
    const match = /^Bearer[ ]+([A-Za-z0-9._~+/-]+=*)$/i.exec(authorization?.trim() ?? "");
    if (!authorization) return { ok: false, error: "invalid_request", description: "no bearer token" };
    if (!match?.[1]) {
      return { ok: false, error: "invalid_request", description: "Authorization must be `Bearer <token>`" };
    }
    if (!issuer) {
      return {
        ok: false,
        error: "invalid_token",
        description: "this deployment accepts no tokens (JWT_ISSUER unset)",
      };
    }
    try {
      const { payload } = await jwtVerify(match[1], keySet(), {
        issuer,
        audience: resourceUrl,
        algorithms: ALGORITHMS,
        requiredClaims: ["exp"],
      });
      return { ok: true, security: securityContextFromClaims(payload, config.identity) };
    } catch (error) {
      return { ok: false, error: "invalid_token", description: reasonOf(error, resourceUrl) };
    }
  };
}

/** Why a token was refused, in words a client can act on. */
function reasonOf(error: unknown, resourceUrl: string): string {
  if (error instanceof errors.JWTExpired) return "the token has expired";
  if (error instanceof errors.JWTClaimValidationFailed) {
    return error.claim === "aud"
      ? `the token's audience is not this resource (${resourceUrl})`
      : `the "${error.claim}" claim is invalid`;
  }
  if (error instanceof errors.JWSSignatureVerificationFailed) return "the signature does not verify";
  if (error instanceof errors.JWKSNoMatchingKey) return "no key of the issuer matches the token's kid";
  if (error instanceof errors.JOSEAlgNotAllowed) return "the token's algorithm is not allowed";
  if (error instanceof DomainError) return error.message;
  if (error instanceof errors.JOSEError) return "the token is malformed";
  return "the token could not be verified";
}
