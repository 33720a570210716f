import { aguiRoute } from "../contract/agui.js";
import { ProblemError } from "../problem-details.js";
import { type GetDeps, routeGroup } from "./deps.js";
import { resumeAfter, streamEndsAt } from "./events.js";

/**
 * `POST /v1/agui` (docs/ag-ui.md), a route group the app mounts after its identity and body
 * middlewares. The route only moves HTTP: a body that is not a RunAgentInput is 400 INVALID_REQUEST;
 * the protocol is shared/agui/, loaded on the first AG-UI request (not at cold start).
 */
export function aguiRoutes(getDeps: GetDeps) {
  return routeGroup().openapi(aguiRoute, async (c) => {
    const deps = getDeps();
    const { parseAguiInput, serveAgui } = await import("../../../shared/agui/serve.js");
    const parsed = parseAguiInput(c.req.valid("json"));
    if ("problem" in parsed) {
      throw new ProblemError("INVALID_REQUEST", parsed.problem.message, {
        extensions: { errors: parsed.problem.errors },
      });
    }
    const call = {
      deps,
      security: c.get("security"),
      lambdaRemainingMs: c.env?.lambdaContext?.getRemainingTimeInMillis(),
      endsAt: streamEndsAt(c, deps),
      after: resumeAfter(c.req.header("last-event-id"), undefined),
    };
    return (await serveAgui(call, parsed.input)) as never;
  });
}
