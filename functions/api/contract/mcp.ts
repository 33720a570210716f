/** The HTTP contract of `/mcp` (docs/mcp.md) and its RFC 9728 protected-resource metadata. */

import { createRoute, z } from "@hono/zod-openapi";
import { RESPONSE_HEADERS } from "./common.js";
import { problem } from "./problems.js";

/** A JSON-RPC 2.0 response (MCP Streamable HTTP, JSON mode): a result or an error, or a batch of them. */
const JsonRpcResponseSchema = z
  .object({
    jsonrpc: z.literal("2.0"),
    id: z.union([z.string(), z.number(), z.null()]),
    result: z.record(z.string(), z.unknown()).optional(),
    error: z.object({ code: z.number().int(), message: z.string(), data: z.unknown().optional() }).optional(),
  })
  .openapi("JsonRpcResponse");

const jsonRpc = (description: string, headers?: z.ZodObject) => ({
  description,
  content: {
    "application/json": { schema: z.union([JsonRpcResponseSchema, z.array(JsonRpcResponseSchema)]) },
  },
  ...(headers ? { headers } : {}),
});

/** RFC 9728 protected-resource metadata of `/mcp`. */
export const ResourceMetadataSchema = z
  .object({
    resource: z.string().openapi({ description: "The audience a token must carry (the endpoint's URL)." }),
    authorization_servers: z.array(z.string()),
    bearer_methods_supported: z.array(z.literal("header")),
    resource_name: z.string(),
  })
  .strict()
  .openapi("ProtectedResourceMetadata");

/** Security of `/mcp`: a bearer JWT verified by the function itself, audience = the endpoint's URL. */
const mcpSecurity: Array<Record<string, string[]>> = [{ mcp: [] }];

const mcpUnauthorized = problem(
  'UNAUTHENTICATED: no token, or one the function refuses (signature, algorithm, issuer, expiry, audience other than MCP_RESOURCE_URL, claims). `WWW-Authenticate: Bearer resource_metadata="…"` points at the RFC 9728 metadata.',
  RESPONSE_HEADERS.wwwAuthenticate,
);

/** `POST /mcp`: one JSON-RPC message (or batch) of the MCP Streamable HTTP transport, stateless, JSON. */
export const mcpRoute = createRoute({
  method: "post",
  path: "/mcp",
  summary: "MCP endpoint (Streamable HTTP, stateless, JSON responses)",
  description:
    'Model Context Protocol over Streamable HTTP (docs/mcp.md): `initialize`, `tools/list` (the tools the token\'s permissions allow), `tools/call` (through the same dispatcher as the loop; idempotency key in `_meta["io.boundloop/idempotency-key"]`). Send `Accept: application/json, text/event-stream` and `Content-Type: application/json`. Tool failures are results with `isError: true`; protocol failures are JSON-RPC errors.',
  security: mcpSecurity,
  responses: {
    200: jsonRpc("The JSON-RPC response(s)."),
    202: { description: "Only notifications or responses were sent: accepted, no body." },
    400: jsonRpc(
      "Malformed JSON (-32700), not a JSON-RPC message (-32700/-32600), or an unsupported MCP-Protocol-Version (-32000).",
    ),
    401: mcpUnauthorized,
    403: jsonRpc(
      "An `Origin` header other than the endpoint's own origin (DNS-rebinding protection, -32000).",
    ),
    406: jsonRpc("The Accept header does not list both application/json and text/event-stream (-32000)."),
    413: jsonRpc("The body is over MAX_BODY_BYTES (-32000)."),
    415: jsonRpc("The Content-Type is not application/json (-32000)."),
    500: problem("INTERNAL: nothing about the failure is disclosed."),
    503: problem(
      "STORE_UNAVAILABLE: the service's dependencies could not be loaded or reached; retry after `Retry-After` seconds.",
      RESPONSE_HEADERS.retryAfter,
    ),
  },
});

/** `GET /mcp`: this server offers no server-initiated SSE stream (stateless), so 405 as the transport says. */
export const mcpGetRoute = createRoute({
  method: "get",
  path: "/mcp",
  summary: "No SSE stream on GET (stateless server)",
  security: mcpSecurity,
  responses: {
    401: mcpUnauthorized,
    405: jsonRpc("Method not allowed: this server answers POST only (-32000); `Allow: POST`."),
    503: problem("STORE_UNAVAILABLE.", RESPONSE_HEADERS.retryAfter),
  },
});

/** Paths of the RFC 9728 metadata: the well-known root and its `/mcp`-suffixed form (section 3.1). */
export const RESOURCE_METADATA_PATHS = [
  "/.well-known/oauth-protected-resource",
  "/.well-known/oauth-protected-resource/mcp",
] as const;

/** `GET` of the protected-resource metadata (no auth): where an MCP client learns the resource and issuer. */
export const resourceMetadataRoutes = RESOURCE_METADATA_PATHS.map((path) =>
  createRoute({
    method: "get",
    path,
    summary: "OAuth 2.0 protected-resource metadata of /mcp (RFC 9728, no auth)",
    responses: {
      200: {
        description: "The metadata.",
        content: { "application/json": { schema: ResourceMetadataSchema } },
      },
      404: problem("NOT_FOUND: this deployment names no MCP resource (MCP_RESOURCE_URL unset)."),
    },
  }),
);
