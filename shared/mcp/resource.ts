/**
 * Where `/mcp` is and how it describes itself as an OAuth 2.1 protected resource (RFC 9728): its
 * canonical URL (the audience its tokens carry, from configuration only), the metadata document and the
 * 401 challenge. No token code here (shared/mcp/auth.ts verifies tokens), so the metadata routes load no
 * JOSE library.
 */
import { bearerChallenge, type TokenVerdict } from "../auth/bearer.js";
import type { Config } from "../config.js";

/** The path the MCP endpoint is served at. */
export const MCP_PATH = "/mcp";

/** RFC 9728 well-known path of protected-resource metadata (section 3). */
export const RESOURCE_METADATA_PATH = "/.well-known/oauth-protected-resource";

/**
 * The canonical URL of the MCP endpoint, the one audience its tokens may carry: MCP_RESOURCE_URL (the
 * stack sets its API's own URL + `/mcp`; `npm run dev` its own). Never derived from a request: a Host or
 * `X-Forwarded-*` header is the client's to choose, so an audience taken from it would accept a token
 * minted for any server the client names.
 * @returns undefined when unset: `/mcp` then accepts no token and describes no resource
 */
export function resourceUrlOf(config: Pick<Config, "auth">): string | undefined {
  return config.auth.mcpResourceUrl;
}

/** The URL of the protected-resource metadata of `resourceUrl` (RFC 9728 section 3.1: path-suffixed). */
export function resourceMetadataUrlOf(resourceUrl: string): string {
  const url = new URL(resourceUrl);
  return `${url.origin}${RESOURCE_METADATA_PATH}${url.pathname === "/" ? "" : url.pathname}`;
}

/**
 * RFC 9728 protected-resource metadata of the MCP endpoint: `resource` (the audience tokens must
 * carry), `authorization_servers` (the issuer, when configured), bearer tokens in the header only.
 */
export function resourceMetadata(resourceUrl: string, config: Pick<Config, "auth">) {
  return {
    resource: resourceUrl,
    authorization_servers: config.auth.issuer ? [config.auth.issuer] : [],
    bearer_methods_supported: ["header" as const],
    resource_name: "boundloop accounting tools (MCP)",
  };
}

/**
 * The `WWW-Authenticate` value of a 401 from `/mcp` (RFC 6750 section 3, RFC 9728 section 5.1):
 * `resource_metadata` pointing at the metadata (when a resource is configured), then the error.
 */
export function wwwAuthenticate(
  resourceUrl: string | undefined,
  verdict: Extract<TokenVerdict, { ok: false }>,
): string {
  return bearerChallenge(
    verdict,
    resourceUrl ? { resource_metadata: resourceMetadataUrlOf(resourceUrl) } : {},
  );
}
