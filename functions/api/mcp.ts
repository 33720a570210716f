import type { OpenAPIHono } from "@hono/zod-openapi";
import { refusalDetail, type TokenVerdict } from "../../shared/auth/bearer.js";
import type { Config } from "../../shared/config.js";
import type { ApiDeps } from "../../shared/deps.js";
import type { McpAuthenticator } from "../../shared/mcp/auth.js";
import { resourceMetadata, resourceUrlOf, wwwAuthenticate } from "../../shared/mcp/resource.js";
import { mcpGetRoute, mcpRoute, resourceMetadataRoutes } from "./contract/mcp.js";
import { addInvocationContext } from "./invocation-context.js";
import { ProblemError } from "./problem-details.js";
import type { AppEnv } from "./routes/deps.js";

/**
 * Mounts the MCP endpoint on the API (docs/mcp.md): `POST /mcp` (the MCP server, shared/mcp/server.ts,
 * loaded on the first MCP request), `GET /mcp` (405: no SSE stream) and the RFC 9728 metadata routes.
 * The routes only map HTTP: the token check is shared/mcp/auth.ts, the protocol the SDK's transport,
 * tool calls shared/mcp/mapping.ts (a one-cycle run of shared/runs/tool-call-run.ts). The resource is MCP_RESOURCE_URL; without it the metadata is 404 and
 * every token is refused.
 * @param getDeps the app's dependencies, loaded on first use
 */
export function mountMcp(app: OpenAPIHono<AppEnv>, getDeps: () => ApiDeps, config: Config): void {
  const authenticate = lazyAuthenticator(config);
  const resourceUrl = resourceUrlOf(config);
  for (const route of resourceMetadataRoutes) {
    app.openapi(route, (c) => {
      if (!resourceUrl) {
        throw new ProblemError(
          "NOT_FOUND",
          "This deployment serves no MCP resource (MCP_RESOURCE_URL unset).",
        );
      }
      return c.json(resourceMetadata(resourceUrl, config), 200);
    });
  }

  app.openapi(mcpGetRoute, async (c) => {
    const verdict = await authenticate(c.req.header("authorization"));
    if (!verdict.ok) throw unauthenticated(resourceUrl, verdict);
    return c.json(jsonRpcError("Method not allowed."), 405, { Allow: "POST" });
  });

  app.openapi(mcpRoute, async (c) => {
    // DNS rebinding (MCP transport spec: servers must validate Origin): a browser page of another
    // origin is refused before anything else.
    const origin = c.req.header("origin");
    if (origin !== undefined && origin !== (resourceUrl && new URL(resourceUrl).origin)) {
      return c.json(jsonRpcError(`Origin ${origin} is not allowed.`), 403);
    }
    const verdict = await authenticate(c.req.header("authorization"));
    if (!verdict.ok) throw unauthenticated(resourceUrl, verdict);
    const { serveMcp } = await import("../../shared/mcp/server.js");
    const deps = getDeps();
    // The first verified request of a container loads the dependencies here, after the request's
    // middleware ran: its lines get this invocation's context too.
    addInvocationContext(deps.logger, c.env?.lambdaContext);
    const remainingMs = c.env?.lambdaContext?.getRemainingTimeInMillis();
    return (await serveMcp(c.req.raw, deps, verdict.security, remainingMs)) as never;
  });
}

/**
 * The 401 of `/mcp`: problem+json UNAUTHENTICATED whose `WWW-Authenticate` points at the RFC 9728
 * metadata (`resource_metadata`) and says what was wrong with the token.
 */
function unauthenticated(
  resourceUrl: string | undefined,
  verdict: Extract<TokenVerdict, { ok: false }>,
): ProblemError {
  return new ProblemError("UNAUTHENTICATED", refusalDetail(verdict), {
    headers: { "www-authenticate": wwwAuthenticate(resourceUrl, verdict) },
  });
}

/** The token check of `/mcp`; the JOSE code is loaded by the first /mcp request, not with the app. */
function lazyAuthenticator(config: Config): McpAuthenticator {
  let authenticate: McpAuthenticator | undefined;
  return async (authorization) => {
    authenticate ??= (await import("../../shared/mcp/auth.js")).createMcpAuthenticator(config);
    return authenticate(authorization);
  };
}

/** A JSON-RPC error answer without a request id (the transport spec's shape for refused HTTP requests). */
function jsonRpcError(message: string) {
  return { jsonrpc: "2.0" as const, id: null, error: { code: -32000, message } };
}
