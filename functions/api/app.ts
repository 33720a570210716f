import type { Logger } from "@aws-lambda-powertools/logger";
import type { Context as HonoContext, MiddlewareHandler } from "hono";
import { bodyLimit } from "hono/body-limit";
import { HTTPException } from "hono/http-exception";
import type { Config } from "../../shared/config.js";
import type { ApiDeps } from "../../shared/deps.js";
import { securityContextFromEvent } from "../../shared/identity.js";
import { createLogger, flushMetrics, recordProblemMetric } from "../../shared/observability.js";
import { OPENAPI_INFO, SECURITY_SCHEMES } from "./contract/common.js";
import { healthRoute } from "./contract/health.js";
import { healthResponse } from "./health.js";
import { addInvocationContext } from "./invocation-context.js";
import { UNSUPPORTED_MEDIA_TYPE_DETAIL } from "./json-media-type.js";
import { mountMcp } from "./mcp.js";
import { servedMethods, unmatchedRequest, withMethodNotAllowed } from "./method-not-allowed.js";
import { ProblemError, problemCodeOf, toProblem } from "./problem-details.js";
import { a2aRoutes } from "./routes/a2a.js";
import { aguiRoutes } from "./routes/agui.js";
import { approvalRoutes } from "./routes/approvals.js";
import { callerRoutes } from "./routes/caller.js";
import { type AppEnv, type GetDeps, routeGroup } from "./routes/deps.js";
import { runEventRoutes } from "./routes/events.js";
import { invoiceRoutes } from "./routes/invoices.js";
import { policyRoutes } from "./routes/policies.js";
import { quotaRoutes } from "./routes/quotas.js";
import { runRoutes } from "./routes/runs.js";
import { withUnreadableRequest } from "./unreadable-request.js";

export type { AppEnv, LambdaBindings } from "./routes/deps.js";

/**
 * Dependencies built on first use: `load` is called once, on the first request that needs them; `config`
 * is what they are built from, so a failure (of `load` itself, or of a route that needs none) is still
 * logged by the service's logger.
 */
export interface LazyDeps {
  config: Config;
  load: () => ApiDeps;
}

/**
 * Builds the HTTP API (routes and schemas in ./contract/, one module per resource, served as OpenAPI 3.1 at /openapi.json): the
 * route groups of ./routes/ (runs, approvals, invoices) under the `/v1/*` middleware. `deps` may be
 * {@link LazyDeps}, loaded on the first request that needs them, so a cold start that only serves
 * /healthz or /openapi.json builds no clients and reads no secret.
 *
 * Every `/v1/*` request passes, in order: request log line + per-invocation metrics flush → identity
 * from the event's authorizer (401) → body size cap (413) → the route's content type (415) and zod
 * validation (400) → the handler. `/mcp` (./mcp.ts, which checks its own token) gets the first of
 * these, the request log line and the metrics flush. Every error becomes `application/problem+json` in
 * one `onError`.
 */
export function createApp(deps: ApiDeps | LazyDeps) {
  let resolved: ApiDeps | undefined = "load" in deps ? undefined : deps;
  const getDeps: GetDeps = () => {
    resolved ??= (deps as LazyDeps).load();
    return resolved;
  };
  let bootLogger: Logger | undefined;
  const failureLogger = (): Logger => {
    if (resolved) return resolved.logger;
    bootLogger ??= createLogger(deps.config.observability);
    return bootLogger;
  };
  const app = routeGroup();
  app.use("*", headLikeGet());
  app.openapi(healthRoute, healthResponse);
  for (const [name, scheme] of Object.entries(SECURITY_SCHEMES)) {
    app.openAPIRegistry.registerComponent("securitySchemes", name, scheme);
  }
  // The document, with the 405 every path answers for a method it does not serve (./method-not-allowed.ts)
  // and the 400 of a request the Lambda edge could not read (./unreadable-request.ts).
  app.get("/openapi.json", (c) =>
    c.json(withUnreadableRequest(withMethodNotAllowed(app.getOpenAPI31Document(OPENAPI_INFO)))),
  );
  // /mcp is served outside /v1 but logged and measured as every request is: its own Lambda context on
  // every line (not the previous invocation's), its request line, its metrics flushed.
  app.use(
    "/mcp",
    observeRequest(() => resolved),
  );
  mountMcp(app, getDeps, deps.config);
  const a2a = a2aRoutes(app, getDeps);
  app.use("/v1/*", observeRequest(getDeps), verifyCaller(getDeps), limitBody(getDeps));
  app.route("/", runRoutes(getDeps));
  app.route("/", runEventRoutes(getDeps));
  app.route("/", approvalRoutes(getDeps));
  app.route("/", invoiceRoutes(getDeps));
  app.route("/", a2a);
  app.route("/", aguiRoutes(getDeps));
  app.route("/", policyRoutes(getDeps));
  app.route("/", quotaRoutes(getDeps));
  app.route("/", callerRoutes());
  let served: ReturnType<typeof servedMethods> | undefined;
  app.notFound((c) => {
    served ??= servedMethods(app.getOpenAPI31Document(OPENAPI_INFO), [
      { method: "GET", path: "/openapi.json" },
    ]);
    throw unmatchedRequest(c.req.method, c.req.path, served);
  });
  app.onError((error, c) => problemResponse(c, error, resolved, failureLogger()));
  return app;
}

/**
 * A HEAD's headers as the GET's (RFC 9110 §9.3.2), content-length included. Hono answers HEAD by
 * running the GET route and dropping the body, so the Lambda result's body is empty and whoever
 * measures it (the local dev server, local/dev-event.ts) would say content-length 0: the GET body's
 * length is set instead. Event streams are left as they are: their length is not known until they end.
 * Every other answer is a finite body the Lambda result buffers anyway.
 */
function headLikeGet(): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    await next();
    if (c.req.method !== "HEAD" || !c.res.body || c.res.headers.has("content-length")) return;
    if (c.res.headers.get("content-type")?.startsWith("text/event-stream")) return;
    c.header("content-length", String((await c.res.clone().arrayBuffer()).byteLength));
  };
}

/** The caller's security context from the event's authorizer (401 otherwise), kept in `c.var.security`. */
function verifyCaller(getDeps: GetDeps): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    const security = securityContextFromEvent(c.env?.event, getDeps().config.identity);
    c.set("security", security);
    getDeps().logger.appendKeys({ tenantId: security.tenantId });
    await next();
  };
}

/** The body size cap MAX_BODY_BYTES (413 PAYLOAD_TOO_LARGE). */
function limitBody(getDeps: GetDeps): MiddlewareHandler<AppEnv> {
  return (c, next) =>
    bodyLimit({
      maxSize: getDeps().config.http.maxBodyBytes,
      onError: () => {
        throw new ProblemError(
          "PAYLOAD_TOO_LARGE",
          `The body is over ${getDeps().config.http.maxBodyBytes} bytes.`,
        );
      },
    })(c, next);
}

/**
 * Request log line and metrics flush around every `/v1/*` and `/mcp` request: the invocation's Lambda
 * context on every log line of the request (a warm container's logger still holds the previous one's);
 * after the response is settled, logs INFO "request" (method, path, HTTP status, problem code,
 * latencyMs), clears the request's log keys and publishes the invocation's metrics.
 * @param loaded the dependencies to log with: `/v1` loads them for every request; `/mcp` passes the
 *   ones already loaded, as it loads them only for a verified token (functions/api/mcp.ts), so a
 *   request refused in a cold container loads nothing and logs no request line
 */
function observeRequest(loaded: () => ApiDeps | undefined): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    const started = performance.now();
    const observed = () => {
      const deps = loaded();
      if (deps) addInvocationContext(deps.logger, c.env?.lambdaContext);
      return deps;
    };
    observed();
    try {
      await next();
    } finally {
      const deps = observed();
      if (deps) {
        deps.logger.info("request", {
          method: c.req.method,
          path: c.req.path,
          httpStatus: c.res.status,
          code: c.get("problemCode") ?? null,
          latencyMs: Math.round(performance.now() - started),
        });
        deps.logger.resetKeys();
        flushMetrics(deps.metrics);
      }
    }
  };
}

/**
 * Hono's own HTTP errors (malformed JSON, body limit, media type gate) in the problem vocabulary: the
 * code is the one {@link problemCodeOf} gives their status.
 */
function fromHttpException(error: HTTPException): ProblemError {
  const code = problemCodeOf(error.status);
  if (code === "INVALID_REQUEST") {
    return new ProblemError(code, "The body is not valid JSON.", {
      extensions: { errors: [{ in: "body", path: "(root)", message: "malformed JSON" }] },
    });
  }
  return new ProblemError(code, HTTP_EXCEPTION_DETAIL[code] ?? "The request was refused.");
}

/** Details of the problems Hono's own HTTP errors become. */
const HTTP_EXCEPTION_DETAIL: Partial<Record<ProblemError["code"], string>> = {
  PAYLOAD_TOO_LARGE: "The body is too large.",
  UNSUPPORTED_MEDIA_TYPE: UNSUPPORTED_MEDIA_TYPE_DETAIL,
  INTERNAL: "The server could not complete the request.",
};

/**
 * The one place an error becomes the app's HTTP response: {@link toProblem} picks the problem (status
 * table in functions/api/problem-details.ts) and the problem renders itself (`ProblemError.getResponse`). Server-side
 * failures (5xx) are logged at ERROR with the error by `logger` (the request's logger, with request id
 * and tenant); the response carries only the problem's generic detail. Problems are counted in
 * metrics once the dependencies exist.
 */
function problemResponse(
  c: HonoContext<AppEnv>,
  error: unknown,
  deps: ApiDeps | undefined,
  logger: Logger,
): Response {
  const problem = toProblem(error instanceof HTTPException ? fromHttpException(error) : error);
  c.set("problemCode", problem.code);
  if (problem.status >= 500) {
    if (!deps) addInvocationContext(logger, c.env?.lambdaContext);
    logger.error("request failed", { code: problem.code, error: error as Error });
  }
  if (deps) recordProblemMetric(deps.metrics, problem.code);
  return problem.getResponse();
}
