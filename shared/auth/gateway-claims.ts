/**
 * Verified claims as API Gateway's HTTP API JWT authorizer hands them to the function
 * (`requestContext.authorizer.jwt`): every claim rendered as a string, and the token's scopes. The dev
 * server's event builder (local/dev-event.ts) and the streaming entry (functions/stream/entry.ts) render
 * claims this way, so shared/identity.ts reads them exactly as behind the HTTP API.
 */

/**
 * A claim value as API Gateway renders it for the function: strings as they are, numbers and booleans
 * as text, arrays as "[a b]", objects as "map[k:v]" (the authorizer's Go-style rendering).
 */
export function claimAsString(value: unknown): string {
  if (typeof value === "string") return value;
  if (Array.isArray(value)) return `[${value.map(claimAsString).join(" ")}]`;
  if (value !== null && typeof value === "object") {
    return `map[${Object.entries(value)
      .map(([key, item]) => `${key}:${claimAsString(item)}`)
      .join(" ")}]`;
  }
  return String(value);
}

/** All claims rendered with {@link claimAsString}. */
export function claimsAsStrings(payload: Record<string, unknown>): Record<string, string> {
  return Object.fromEntries(Object.entries(payload).map(([key, value]) => [key, claimAsString(value)]));
}

/**
 * The token's scopes: the `scope` claim split on spaces, or an `scp` array; null when it has none
 * (API Gateway sends `"scopes": null` then).
 */
export function scopesOf(payload: Record<string, unknown>): string[] | null {
  const raw = payload.scope ?? payload.scp;
  const scopes = (typeof raw === "string" ? raw.split(" ") : Array.isArray(raw) ? raw.map(String) : [])
    .map((scope) => scope.trim())
    .filter((scope) => scope.length > 0);
  return scopes.length > 0 ? scopes : null;
}

/**
 * The authorizer data of an HTTP API v2 event for verified `claims`, as the JWT authorizer builds it:
 * `{ jwt: { claims: <every claim a string>, scopes } }`.
 */
export function jwtAuthorizerOf(claims: Record<string, unknown>) {
  return { jwt: { claims: claimsAsStrings(claims), scopes: scopesOf(claims) } };
}
