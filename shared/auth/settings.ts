/**
 * The token settings every verifier of the service reads (Config `auth`, from JWT_ISSUER, JWT_AUDIENCE,
 * JWT_ALGORITHMS, JWT_JWKS_URL, JWT_JWKS and MCP_RESOURCE_URL in shared/config.ts) and the signature
 * algorithms they may name. Free of JOSE code, so the configuration and the MCP metadata routes load none.
 */

/**
 * The signature algorithms JWT_ALGORITHMS may pin (RFC 7518 section 3.1, RFC 8037): asymmetric only, so a
 * public key from the issuer's key set can never be used as an HMAC secret (`HS256` forged with the
 * public key) and an unsigned token (`none`) is never accepted.
 */
export const SIGNING_ALGORITHMS = [
  "RS256",
  "RS384",
  "RS512",
  "PS256",
  "PS384",
  "PS512",
  "ES256",
  "ES384",
  "ES512",
  "EdDSA",
] as const;

/** One of {@link SIGNING_ALGORITHMS}. */
export type SigningAlgorithm = (typeof SIGNING_ALGORITHMS)[number];

/**
 * The algorithms API Gateway's HTTP API JWT authorizer verifies: RSA-based only
 * (https://docs.aws.amazon.com/apigateway/latest/developerguide/http-api-jwt-authorizer.html, "Currently,
 * only RSA-based algorithms are supported"). The dev gateway accepts the configured algorithms among these.
 */
export const GATEWAY_ALGORITHMS: readonly SigningAlgorithm[] = ["RS256", "RS384", "RS512"];

/**
 * How bearer tokens are verified, one section for every verifier (shared/auth/token-verifier.ts):
 * - `issuer`: JWT_ISSUER, the `iss` every token must carry; undefined: no token is accepted anywhere.
 * - `audiences`: JWT_AUDIENCE, the API's audiences (the HTTP API authorizer's `jwtAudience`): a token's
 *   `aud`, or its `client_id` when it has no `aud`, must be one of them. Empty: no API token is accepted.
 * - `algorithms`: JWT_ALGORITHMS, the signature algorithms accepted (default RS256).
 * - `jwksUrl`: JWT_JWKS_URL, where the issuer's key set is (undefined: `<issuer>/.well-known/jwks.json`).
 * - `jwks`: JWT_JWKS, inline keys used instead of fetching the URL (the dev server's, tests').
 * - `mcpResourceUrl`: MCP_RESOURCE_URL, the canonical URL of `/mcp` and the only audience its tokens may
 *   carry (RFC 8707); the stack sets it to its own API URL + `/mcp`. Undefined: `/mcp` accepts no token.
 */
export interface AuthSettings {
  issuer: string | undefined;
  audiences: readonly string[];
  algorithms: readonly SigningAlgorithm[];
  jwksUrl: string | undefined;
  jwks: { keys: Record<string, unknown>[] } | undefined;
  mcpResourceUrl: string | undefined;
}
