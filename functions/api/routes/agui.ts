import { aguiRoute } from "../contract/agui.js";
import { type GetDeps, routeGroup } from "./deps.js";
import { resumeAfter, streamEndsAt } from "./events.js";

/**
 * `POST /v1/agui` (docs/ag-ui.md), a route group the app mounts after its identity and body
 * middlewares. The route only moves HTTP: the protocol is shared/agui/, loaded on the first AG-UI request.
 */
export function aguiRoutes(getDeps: GetDeps) {
  return routeGroup().openapi(aguiRoute, async (c) => {
    const deps = getDeps();
    const { serveAgui } = await import("../../../shared/agui/serve.js");
    const call = {
      deps,
      security: c.get("security"),
      lambdaRemainingMs: c.env?.lambdaContext?.getRemainingTimeInMillis(),
      endsAt: streamEndsAt(c, deps),
      after: resumeAfter(c.req.header("last-event-id"), undefined),
    };
    return (await serveAgui(call, c.req.valid("json"))) as never;
  });
}
