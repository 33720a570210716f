/**
 * The service's one bearer-token verifier (jose). Every token a boundloop function or local gateway
 * checks goes through {@link createTokenVerifier}: the streaming entry (functions/stream/entry.ts), `/mcp`
 * (shared/mcp/auth.ts) and the dev server's stand-in for API Gateway's JWT authorizer (local/dev-server.ts).
 * They share the issuer, the key set (fetched once and cached), the pinned algorithms and the checks;
 * they differ only in whose audience a token must name and in what the gateway itself does not ask
 * (see {@link TokenVerifier}). Turning the verified claims into a security context is shared/identity.ts's.
 */
import {
  createLocalJWKSet,
  createRemoteJWKSet,
  errors,
  type JSONWebKeySet,
  type JWTPayload,
  type JWTVerifyGetKey,
  jwtVerify,
} from "jose";
import { bearerToken, type TokenVerdict } from "./bearer.js";
import { type AuthSettings, GATEWAY_ALGORITHMS } from "./settings.js";

/** The checks of one kind of token, besides the signature, `iss`, `exp` and `nbf` every token gets. */
interface TokenRules {
  /** The audiences accepted in `aud`; empty: every token is refused with {@link TokenRules.unconfigured}. */
  audiences: readonly string[];
  /** Whether `client_id` names the audience of a token without `aud` (API Gateway's rule). */
  clientIdAudience: boolean;
  algorithms: readonly string[];
  requiredClaims: readonly string[];
  /** How the `Authorization` header is read (shared/auth/bearer.ts `bearerToken`). */
  syntax: "strict" | "lenient";
  /** Why a token is refused when no audience is configured. */
  unconfigured: string;
  /** Why a token for another audience is refused. */
  foreign: string;
}

/**
 * Checks an `Authorization` header's bearer token; never throws (every failure is a refusal).
 * Every kind checks: a compact JWS signed by a key of the issuer's key set (`kid`), under one of
 * JWT_ALGORITHMS, `iss` = JWT_ISSUER, `exp` present and in the future, `nbf` and `iat` not in the future
 * (no clock tolerance), then the audience:
 * - `api`: the API's own tokens in a function (the streaming entry): `aud` one of JWT_AUDIENCE, or, only
 *   when there is no `aud`, `client_id` one of them (a Cognito access token); `sub` required; header
 *   `Bearer <token>` (RFC 6750).
 * - `mcp`: tokens of `/mcp`: `aud` must name MCP_RESOURCE_URL (RFC 8707; no `client_id` stand-in);
 *   `sub` required; header `Bearer <token>`.
 * - `gateway`: what API Gateway's HTTP API JWT authorizer checks, for the dev server that stands in for
 *   it: the `api` audience rule, RSA algorithms only ({@link GATEWAY_ALGORITHMS} among JWT_ALGORITHMS),
 *   the token with or without `Bearer `, no `sub` required (the function then answers a token without one
 *   with its own 401).
 */
export interface TokenVerifier {
  api(authorization: string | undefined): Promise<TokenVerdict>;
  mcp(authorization: string | undefined): Promise<TokenVerdict>;
  gateway(authorization: string | undefined): Promise<TokenVerdict>;
}

/**
 * Builds the verifier of `settings` (Config `auth`). The key set is JWT_JWKS when given (jose's local
 * set), else fetched from JWT_JWKS_URL (default `<issuer>/.well-known/jwks.json`) by jose's remote set on
 * first use, kept for 10 minutes and refetched at most every 30 s when a token names an unknown `kid`
 * (key rotation). Build one per process: the cache lives in it.
 * @param keys a key set to use instead of the settings' (tests of key handling)
 */
export function createTokenVerifier(settings: AuthSettings, keys?: JWTVerifyGetKey): TokenVerifier {
  let keySet = keys;
  const keysOf = (issuer: string): JWTVerifyGetKey => {
    keySet ??= settings.jwks
      ? createLocalJWKSet(settings.jwks as unknown as JSONWebKeySet)
      : createRemoteJWKSet(new URL(settings.jwksUrl ?? `${issuer.replace(/\/$/, "")}/.well-known/jwks.json`));
    return keySet;
  };
  const check = async (authorization: string | undefined, rules: TokenRules): Promise<TokenVerdict> => {
    const token = bearerToken(authorization, rules.syntax);
    if (typeof token !== "string") return token;
    const { issuer } = settings;
    if (!issuer) return refused("this deployment accepts no tokens (JWT_ISSUER unset)");
    if (rules.audiences.length === 0) return refused(rules.unconfigured);
    try {
      const { payload } = await jwtVerify(token, keysOf(issuer), {
        issuer,
        algorithms: [...rules.algorithms],
        requiredClaims: [...rules.requiredClaims],
      });
      return audienceRefusal(payload, rules) ?? { ok: true, claims: payload };
    } catch (error) {
      return refused(reasonOf(error));
    }
  };
  const api: TokenRules = {
    audiences: settings.audiences,
    clientIdAudience: true,
    algorithms: settings.algorithms,
    requiredClaims: ["exp", "sub"],
    syntax: "strict",
    unconfigured: "this deployment names no API audience (JWT_AUDIENCE unset)",
    foreign: "the token's audience is not this API",
  };
  const mcp: TokenRules = {
    ...api,
    audiences: settings.mcpResourceUrl ? [settings.mcpResourceUrl] : [],
    clientIdAudience: false,
    unconfigured: "this deployment names no MCP resource (MCP_RESOURCE_URL unset)",
    foreign: `the token's audience is not this resource (${settings.mcpResourceUrl})`,
  };
  const gateway: TokenRules = {
    ...api,
    algorithms: settings.algorithms.filter((alg) => GATEWAY_ALGORITHMS.includes(alg)),
    requiredClaims: ["exp"],
    syntax: "lenient",
    foreign: "the token does not have a valid audience",
  };
  return {
    api: (authorization) => check(authorization, api),
    mcp: (authorization) => check(authorization, mcp),
    gateway: (authorization) => check(authorization, gateway),
  };
}

const refused = (description: string): TokenVerdict => ({ ok: false, error: "invalid_token", description });

/**
 * The refusal of verified claims by the audience and issue-time rules, or undefined when they pass:
 * `aud` (a string or an array) must name one of the audiences; without `aud`, `client_id` must when the
 * rules allow it (API Gateway: "validates client_id only if aud is not present"); `iat` must not be in
 * the future (API Gateway: "must be before the current time").
 */
function audienceRefusal(payload: JWTPayload, rules: TokenRules): TokenVerdict | undefined {
  const named = payload.aud === undefined ? [] : [payload.aud].flat();
  const candidates =
    payload.aud === undefined && rules.clientIdAudience && typeof payload.client_id === "string"
      ? [payload.client_id]
      : named;
  if (!candidates.some((audience) => rules.audiences.includes(audience))) return refused(rules.foreign);
  if (typeof payload.iat === "number" && payload.iat > Math.floor(Date.now() / 1000)) {
    return refused('the "iat" claim is in the future');
  }
  return undefined;
}

/** Why jose refused a token, in words a client can act on (never the token or its contents). */
function reasonOf(error: unknown): string {
  if (error instanceof errors.JWTExpired) return "the token has expired";
  if (error instanceof errors.JWTClaimValidationFailed) {
    return error.reason === "missing"
      ? `the "${error.claim}" claim is missing`
      : `the "${error.claim}" claim is invalid`;
  }
  if (error instanceof errors.JWSSignatureVerificationFailed) return "the signature does not verify";
  if (error instanceof errors.JWKSNoMatchingKey) return "no key matches the token's kid";
  if (error instanceof errors.JOSEAlgNotAllowed) return "the token's algorithm is not allowed";
  if (error instanceof errors.JWKSTimeout || error instanceof errors.JWKSInvalid) {
    return "the issuer's key set could not be read";
  }
  if (error instanceof errors.JOSEError) return "the token is malformed";
  return "the token could not be verified";
}
