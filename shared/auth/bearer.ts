/**
 * Bearer tokens in HTTP (RFC 6750): reading one from the `Authorization` header, the verdict a verifier
 * gives, and the `WWW-Authenticate` challenge of a refusal. Free of JOSE code, so the routes that only
 * describe the resource (shared/mcp/resource.ts) load none.
 */
import type { JWTPayload } from "jose";

/** RFC 6750 section 3.1 error codes a refusal may carry. */
export type BearerError = "invalid_request" | "invalid_token";

/**
 * A verifier's answer: the verified claims (JSON types as issued), or why the token was refused —
 * `error` as RFC 6750 section 3.1 names it (absent when the request carried no credentials at all,
 * section 3.1's rule for that case) and `description`, what to fix in words, never token contents.
 */
export type TokenVerdict =
  | { ok: true; claims: JWTPayload }
  | { ok: false; error: BearerError | undefined; description: string };

/** The refusal of a request that carried no token. */
export const NO_TOKEN = { ok: false, error: undefined, description: "no bearer token" } as const;

/**
 * The token of an `Authorization` header.
 * - `strict` (RFC 6750 section 2.1, the functions' own checks): `Bearer` (any case), one or more spaces,
 *   a b64token; anything else is `invalid_request`.
 * - `lenient` (API Gateway's JWT authorizer: "the token, or the token prefixed with Bearer"): an optional
 *   `Bearer ` prefix, then whatever remains.
 * @returns the token, or the refusal ({@link NO_TOKEN} when there is no header)
 */
export function bearerToken(
  authorization: string | undefined,
  syntax: "strict" | "lenient",
): string | Extract<TokenVerdict, { ok: false }> {
  const header = authorization?.trim() ?? "";
  if (header === "") return NO_TOKEN;
  if (syntax === "lenient") return header.replace(/^Bearer\s+/i, "").trim() || NO_TOKEN;
  const token = /^Bearer +([A-Za-z0-9._~+/-]+=*)$/i.exec(header)?.[1];
  return (
    token ?? { ok: false, error: "invalid_request", description: "Authorization must be `Bearer <token>`" }
  );
}

/** A quoted-string of RFC 9110 section 5.6.4: `text` in double quotes, backslash and double quote escaped. */
export const quotedString = (text: string) => `"${text.replaceAll("\\", "\\\\").replaceAll('"', '\\"')}"`;

/**
 * The `WWW-Authenticate` value of a 401 (RFC 6750 section 3): `Bearer`, the given auth-params
 * (`realm`, or RFC 9728's `resource_metadata`), then `error` and `error_description` unless the request
 * carried no token.
 * @example bearerChallenge(verdict, { realm: "boundloop" })
 *   // Bearer realm="boundloop", error="invalid_token", error_description="the token has expired"
 */
export function bearerChallenge(
  verdict: Extract<TokenVerdict, { ok: false }>,
  params: Record<string, string>,
): string {
  const parts = Object.entries(params).map(([name, value]) => `${name}=${quotedString(value)}`);
  if (verdict.error) {
    parts.push(
      `error=${quotedString(verdict.error)}`,
      `error_description=${quotedString(verdict.description)}`,
    );
  }
  return `Bearer ${parts.join(", ")}`;
}

/** The `detail` of the 401 problem a refusal becomes: what to send, or why the token was refused. */
export function refusalDetail(verdict: Extract<TokenVerdict, { ok: false }>): string {
  return verdict.error
    ? `The bearer token was not accepted: ${verdict.description}.`
    : "Send a bearer token: Authorization: Bearer <JWT>.";
}
