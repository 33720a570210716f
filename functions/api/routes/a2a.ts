import type { OpenAPIHono } from "@hono/zod-openapi";
import type { Context } from "hono";
import { a2aRoute, agentCardRoute } from "../contract/a2a.js";
import { type AppEnv, type GetDeps, routeGroup } from "./deps.js";
import { streamEndsAt } from "./events.js";

/**
 * Mounts A2A (docs/a2a.md): the public Agent Card on `app` itself (before the `/v1/*` middleware), and
 * returns the route group of `POST /v1/a2a`, which the app mounts after its identity and body
 * middlewares. The routes only move HTTP: the protocol is the SDK's transport over shared/a2a/, loaded
 * on the first A2A request.
 */
export function a2aRoutes(app: OpenAPIHono<AppEnv>, getDeps: GetDeps) {
  app.openapi(agentCardRoute, async (c) => {
    const { agentCardOf } = await import("../../../shared/a2a/card.js");
    const { agentCardJson } = await import("../../../shared/a2a/serve.js");
    const deps = getDeps();
    return c.json(
      (await agentCardJson(agentCardOf(deps.config, deps.tools, originOf(c)))) as Record<string, unknown>,
      200,
    );
  });
  const routes = routeGroup();
  routes.openapi(a2aRoute, async (c) => {
    const deps = getDeps();
    const [{ agentCardOf }, { serveA2A }] = await Promise.all([
      import("../../../shared/a2a/card.js"),
      import("../../../shared/a2a/serve.js"),
    ]);
    const call = {
      deps,
      security: c.get("security"),
      card: agentCardOf(deps.config, deps.tools, originOf(c)),
      lambdaRemainingMs: c.env?.lambdaContext?.getRemainingTimeInMillis(),
      stream: { endsAt: streamEndsAt(c, deps) },
    };
    const headers = Object.fromEntries(c.req.raw.headers.entries());
    return (await serveA2A(call, { body: JSON.stringify(c.req.valid("json")), headers })) as never;
  });
  return routes;
}

/** The API's origin as the client reached it (scheme, host, port). */
function originOf(c: Context<AppEnv>): string {
  const url = new URL(c.req.url);
  const forwarded = c.req.header("x-forwarded-proto");
  return `${forwarded ?? url.protocol.replace(":", "")}://${c.req.header("host") ?? url.host}`;
}
