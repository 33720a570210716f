import type { OpenAPIHono } from "@hono/zod-openapi";
import type { Config } from "../../shared/config.js";
import type { ApiDeps } from "../../shared/deps.js";
import type { BearerVerifier } from "../../shared/mcp/auth.js";
import { resourceMetadata, resourceUrlOf, wwwAuthenticate } from "../../shared/mcp/resource.js";
import { mcpGetRoute, mcpRoute, resourceMetadataRoutes } from "./contract/mcp.js";
import type { AppEnv } from "./routes/deps.js";

/**
 * Mounts the MCP endpoint on the API (docs/mcp.md): `POST /mcp` (the MCP server, shared/mcp/server.ts,
 * loaded on the first MCP request), `GET /mcp` (405: no SSE stream) and the RFC 9728 metadata routes.
 * The routes only map HTTP: the token check is shared/mcp/auth.ts, the protocol the SDK's transport,
 * tool calls shared/mcp/call.ts.
 * @param getDeps the app's dependencies, loaded on first use
 */
export function mountMcp(app: OpenAPIHono<AppEnv>, getDeps: () => ApiDeps, config: Config): void {
  const verify = lazyVerifier(config);
  for (const route of resourceMetadataRoutes) {
    app.openapi(route, (c) => c.json(resourceMetadata(resourceUrlOf(c.req.raw, config), config), 200));
  }

  app.openapi(mcpGetRoute, async (c) => {
    const resourceUrl = resourceUrlOf(c.req.raw, config);
    const verdict = await verify(c.req.header("authorization"), resourceUrl);
    if (!verdict.ok) {
      return c.body(null, 401, { "WWW-Authenticate": wwwAuthenticate(resourceUrl, verdict) }) as never;
    }
    return c.json(jsonRpcError("Method not allowed."), 405, { Allow: "POST" });
  });

  app.openapi(mcpRoute, async (c) => {
    const resourceUrl = resourceUrlOf(c.req.raw, config);
    // DNS rebinding (MCP transport spec: servers must validate Origin): a browser page of another
    // origin is refused before anything else.
    const origin = c.req.header("origin");
    if (origin !== undefined && origin !== new URL(resourceUrl).origin) {
      return c.json(jsonRpcError(`Origin ${origin} is not allowed.`), 403);
    }
    const verdict = await verify(c.req.header("authorization"), resourceUrl);
    if (!verdict.ok) {
      return c.body(null, 401, { "WWW-Authenticate": wwwAuthenticate(resourceUrl, verdict) }) as never;
    }
    const { serveMcp } = await import("../../shared/mcp/server.js");
    const remainingMs = c.env?.lambdaContext?.getRemainingTimeInMillis();
    return (await serveMcp(c.req.raw, getDeps(), verdict.security, remainingMs)) as never;
  });
}

/** The token check of `/mcp`; the JOSE code is loaded by the first /mcp request, not with the app. */
function lazyVerifier(config: Config): BearerVerifier {
  let verifier: BearerVerifier | undefined;
  return async (authorization, resourceUrl) => {
    verifier ??= (await import("../../shared/mcp/auth.js")).createBearerVerifier(config);
    return verifier(authorization, resourceUrl);
  };
}

/** A JSON-RPC error answer without a request id (the transport spec's shape for refused HTTP requests). */
function jsonRpcError(message: string) {
  return { jsonrpc: "2.0" as const, id: null, error: { code: -32000, message } };
}
