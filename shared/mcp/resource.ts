/**
 * Where `/mcp` is and how it describes itself as an OAuth 2.1 protected resource (RFC 9728): its
 * canonical URL (the audience its tokens carry), the metadata document and the 401 challenge. No token
 * code here (shared/mcp/auth.ts verifies tokens), so the metadata routes load no JOSE library.
 */
import type { Config } from "../config.js";
import type { BearerVerdict } from "./auth.js";

/** The path the MCP endpoint is served at. */
export const MCP_PATH = "/mcp";

/** RFC 9728 well-known path of protected-resource metadata (section 3). */
export const RESOURCE_METADATA_PATH = "/.well-known/oauth-protected-resource";

/**
 * The canonical URL of the MCP endpoint, the audience tokens must carry: MCP_RESOURCE_URL when set,
 * else the origin the request arrived at (scheme from `x-forwarded-proto`, which API Gateway sets,
 * host from the request URL, which hono/aws-lambda builds from the event's `requestContext.domainName`)
 * + `/mcp`.
 */
export function resourceUrlOf(request: Request, config: Pick<Config, "mcp">): string {
  if (config.mcp.resourceUrl) return config.mcp.resourceUrl;
  const url = new URL(request.url);
  const proto = request.headers.get("x-forwarded-proto")?.split(",")[0]?.trim();
  const scheme = proto === "http" || proto === "https" ? proto : url.protocol.replace(":", "");
  return `${scheme}://${url.host}${MCP_PATH}`;
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
export function resourceMetadata(resourceUrl: string, config: Pick<Config, "mcp">) {
  return {
    resource: resourceUrl,
    authorization_servers: config.mcp.issuer ? [config.mcp.issuer] : [],
    bearer_methods_supported: ["header" as const],
    resource_name: "boundloop accounting tools (MCP)",
  };
}

/** The `WWW-Authenticate` value of a 401 from `/mcp` (RFC 6750 section 3, RFC 9728 section 5.1). */
export function wwwAuthenticate(resourceUrl: string, verdict: Extract<BearerVerdict, { ok: false }>): string {
  const quoted = (text: string) => text.replaceAll("\\", "\\\\").replaceAll('"', '\\"');
  const parts = [`resource_metadata="${quoted(resourceMetadataUrlOf(resourceUrl))}"`];
  // RFC 6750: a request without any token gets no error code.
  if (verdict.description !== "no bearer token") {
    parts.push(`error="${verdict.error}"`, `error_description="${quoted(verdict.description)}"`);
  }
  return `Bearer ${parts.join(", ")}`;
}
