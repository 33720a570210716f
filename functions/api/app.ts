import { randomUUID } from "node:crypto";
import { OpenAPIHono } from "@hono/zod-openapi";
import type { Context as LambdaContext } from "aws-lambda";
import type { Context as HonoContext, MiddlewareHandler } from "hono";
import { bodyLimit } from "hono/body-limit";
import { HTTPException } from "hono/http-exception";
import type { ZodError } from "zod";
import { Deadline } from "../../shared/agent/deadline.js";
import { loadConversation } from "../../shared/conversation.js";
import type { AppDeps } from "../../shared/deps.js";
import { PROBLEM_CONTENT_TYPE, ProblemError, toProblem } from "../../shared/errors.js";
import { type SecurityContext, securityContextFromEvent } from "../../shared/identity.js";
import { flushMetrics, recordProblemMetric } from "../../shared/observability.js";
import {
  createRunRoute,
  getInvoiceRoute,
  getRunRoute,
  healthRoute,
  listInvoicesRoute,
  OPENAPI_INFO,
  SECURITY_SCHEMES,
} from "./contract.js";
import { healthResponse } from "./health.js";
import { listInvoicePage } from "./pagination.js";
import { executeRun, runBudgetMs } from "./run-service.js";

/** What hono/aws-lambda puts in `c.env`: the raw event and the Lambda context. */
export interface LambdaBindings {
  event?: unknown;
  lambdaContext?: LambdaContext;
}

/** Hono environment of the app: Lambda bindings, and the caller's security context once verified. */
export interface AppEnv {
  Bindings: LambdaBindings;
  Variables: { security: SecurityContext; problemCode: string };
}

/** The permission the read-only billing routes (`/v1/invoices…`) need. */
export const BILLING_READ = "billing:read";

/** Where a validation issue was found, as the problem's `errors[].in` says it. */
const TARGET_NAMES: Record<string, string> = {
  json: "body",
  query: "query",
  param: "path",
  header: "header",
};

/**
 * Builds the HTTP API (routes and schemas in ./contract.ts, served as OpenAPI 3.1 at /openapi.json).
 * `deps` may be a factory, called once on the first request that needs it, so a cold start that only
 * serves /healthz or /openapi.json builds no clients and reads no secret.
 *
 * Every `/v1/*` request passes, in order: request log line + per-invocation metrics flush → identity
 * from the event's authorizer (401) → body size cap (413) → the route's content type (415) and zod
 * validation (400) → the handler. Every error becomes `application/problem+json` in one `onError`.
 */
export function createApp(deps: AppDeps | (() => AppDeps)) {
  let resolved: AppDeps | undefined = typeof deps === "function" ? undefined : deps;
  const getDeps = (): AppDeps => {
    resolved ??= (deps as () => AppDeps)();
    return resolved;
  };
  const app = new OpenAPIHono<AppEnv>({
    defaultHook: (result) => {
      if (!result.success) throw invalidRequest(result.target, result.error);
    },
  });

  app.openapi(healthRoute, healthResponse);
  for (const [name, scheme] of Object.entries(SECURITY_SCHEMES)) {
    app.openAPIRegistry.registerComponent("securitySchemes", name, scheme);
  }
  app.doc31("/openapi.json", OPENAPI_INFO);

  app.use("/v1/*", observeRequest(getDeps));
  app.use("/v1/*", async (c, next) => {
    const security = securityContextFromEvent(c.env?.event, getDeps().config.identity);
    c.set("security", security);
    getDeps().logger.appendKeys({ tenantId: security.tenantId });
    await next();
  });
  app.use("/v1/*", (c, next) =>
    bodyLimit({
      maxSize: getDeps().config.http.maxBodyBytes,
      onError: () => {
        throw new ProblemError(
          "PAYLOAD_TOO_LARGE",
          `The body is over ${getDeps().config.http.maxBodyBytes} bytes.`,
        );
      },
    })(c, next),
  );

  app.openapi(createRunRoute, async (c) => {
    const deps = getDeps();
    const security = c.get("security");
    const body = c.req.valid("json");
    const runId = `run_${randomUUID()}`;
    // A continuation is checked before anything is claimed or written: 404 / 409 leave no trace.
    const conversation =
      body.previousRunId === undefined
        ? undefined
        : await loadConversation(deps.runs, security, {
            previousRunId: body.previousRunId,
            prompt: body.prompt,
            historyMaxTokens: deps.config.history.maxTokens,
            maxTotalTokens: deps.config.limits.maxTotalTokens,
            runTtlSeconds: deps.config.runs.ttlSeconds,
          });
    const deadline = new Deadline(
      runBudgetMs(deps.config, body, c.env?.lambdaContext?.getRemainingTimeInMillis()),
    );
    try {
      // Idempotency-Key: replay / 409 / 422, or run once and store; the key is the run scope of the
      // tool idempotency keys. See run-idempotency.ts. A replay is a stored Response of this same route
      // (its body was produced by the typed branch below), hence the cast to the route's typed response.
      // Loaded on the first run, not at cold start: it brings the AWS SDK (see functions/api/handler.ts).
      const { withRunIdempotency } = await import("./run-idempotency.js");
      const response = await withRunIdempotency(
        {
          deps,
          headers: c.req.raw.headers,
          event: c.env?.event,
          tenantId: security.tenantId,
          body,
          leaseExpiresAt: deadline.at,
        },
        async (clientKey) => {
          const outcome = await executeRun(deps, {
            security,
            prompt: body.prompt,
            maxCycles: body.maxCycles,
            timeoutMs: body.timeoutMs,
            runId,
            runScope: clientKey ?? runId,
            deadline,
            conversation,
          });
          const { messages: _transcript, ...rest } = outcome;
          const response = {
            ...rest,
            previousRunId: conversation?.previousRunId ?? null,
            history: conversation?.summary ?? null,
          };
          if (response.status === "context_length_exceeded") {
            throw new ProblemError(
              "CONTEXT_LENGTH_EXCEEDED",
              `The model's context window could not hold the request; the run stopped after ${response.cycles} cycle(s). Continue with less history (a new conversation, or a lower HISTORY_MAX_TOKENS).`,
              {
                extensions: {
                  runId: response.runId,
                  runStatus: response.status,
                  previousRunId: response.previousRunId,
                  history: response.history,
                  contextLength: response.details.contextLength ?? null,
                  cycles: response.cycles,
                  toolResults: response.toolResults,
                  usage: response.usage,
                  durationMs: response.durationMs,
                },
              },
            );
          }
          if (response.status === "model_error") {
            throw new ProblemError(
              "MODEL_UNAVAILABLE",
              `The model provider kept failing after retries; the run stopped after ${response.cycles} cycle(s).`,
              {
                extensions: {
                  runId: response.runId,
                  runStatus: response.status,
                  providerStatus: response.modelErrorStatus ?? null,
                  cycles: response.cycles,
                  toolResults: response.toolResults,
                  usage: response.usage,
                  durationMs: response.durationMs,
                },
              },
            );
          }
          return c.json(response, 200);
        },
      );
      return response as never;
    } finally {
      deadline.dispose();
    }
  });

  app.openapi(getRunRoute, async (c) => {
    const security = c.get("security");
    const { runId } = c.req.valid("param");
    const found = await getDeps().runs.get(security.tenantId, runId);
    // A run is visible to the user who started it, and to billing readers of the same tenant.
    const visible =
      found && (found.run.userId === security.userId || security.permissions.includes(BILLING_READ));
    if (!found || !visible) throw new ProblemError("NOT_FOUND", `There is no run ${runId}.`);
    return c.json({ ...found.run, steps: found.steps }, 200);
  });

  app.openapi(listInvoicesRoute, async (c) => {
    const security = requirePermission(c.get("security"), BILLING_READ);
    const { limit, cursor } = c.req.valid("query");
    return c.json(await listInvoicePage(getDeps().ledger, security.tenantId, { limit, cursor }), 200);
  });

  app.openapi(getInvoiceRoute, async (c) => {
    const security = requirePermission(c.get("security"), BILLING_READ);
    const { invoiceId } = c.req.valid("param");
    const invoice = await getDeps().ledger.get(security.tenantId, invoiceId);
    if (!invoice) throw new ProblemError("NOT_FOUND", `There is no invoice ${invoiceId}.`);
    return c.json(invoice, 200);
  });

  app.notFound(() => {
    throw new ProblemError("NOT_FOUND", "No such route.");
  });
  app.onError((error, c) => problemResponse(c, error, resolved));

  return app;
}

/**
 * Request log line and metrics flush around every `/v1/*` request: after the response is settled, logs
 * INFO "request" (method, path, HTTP status, problem code, latencyMs), clears the request's log keys
 * and publishes the invocation's metrics.
 */
function observeRequest(getDeps: () => AppDeps): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    const { logger, metrics } = getDeps();
    const started = performance.now();
    if (c.env?.lambdaContext) logger.addContext(c.env.lambdaContext);
    try {
      await next();
    } finally {
      logger.info("request", {
        method: c.req.method,
        path: c.req.path,
        httpStatus: c.res.status,
        code: c.get("problemCode") ?? null,
        latencyMs: Math.round(performance.now() - started),
      });
      logger.resetKeys();
      flushMetrics(metrics);
    }
  };
}

/** Throws FORBIDDEN unless the caller holds `permission`; returns the security context otherwise. */
function requirePermission(security: SecurityContext, permission: string): SecurityContext {
  if (!security.permissions.includes(permission)) {
    throw new ProblemError(
      "FORBIDDEN",
      `This needs the "${permission}" permission, which the caller lacks.`,
      {
        extensions: { requiredPermission: permission },
      },
    );
  }
  return security;
}

/** A zod failure of one request part as INVALID_REQUEST, with each issue's location and field path. */
function invalidRequest(target: string, error: ZodError): ProblemError {
  return new ProblemError("INVALID_REQUEST", "The request is invalid.", {
    extensions: {
      errors: error.issues.map((issue) => ({
        in: TARGET_NAMES[target] ?? target,
        path: issue.path.map(String).join(".") || "(root)",
        message: issue.message,
      })),
    },
  });
}

/** Hono's own HTTP errors (malformed JSON, media type gate) in the problem vocabulary. */
function fromHttpException(error: HTTPException): ProblemError {
  switch (error.status) {
    case 400:
      return new ProblemError("INVALID_REQUEST", "The body is not valid JSON.", {
        extensions: { errors: [{ in: "body", path: "(root)", message: "malformed JSON" }] },
      });
    case 413:
      return new ProblemError("PAYLOAD_TOO_LARGE", "The body is too large.");
    case 415:
      return new ProblemError("UNSUPPORTED_MEDIA_TYPE", "Send the body as application/json.");
    default:
      return new ProblemError("INTERNAL", "The server could not complete the request.");
  }
}

/**
 * The one place an error becomes an HTTP response (`application/problem+json`, mapping in
 * shared/errors.ts). Server-side failures (5xx) are logged at ERROR with the error; the response
 * carries only the problem's generic detail.
 */
function problemResponse(c: HonoContext<AppEnv>, error: unknown, deps: AppDeps | undefined): Response {
  const problem = toProblem(error instanceof HTTPException ? fromHttpException(error) : error);
  c.set("problemCode", problem.body.code);
  if (deps) {
    if (problem.status >= 500)
      deps.logger.error("request failed", { code: problem.body.code, error: error as Error });
    recordProblemMetric(deps.metrics, problem.body.code);
  } else if (problem.status >= 500) {
    console.error(JSON.stringify({ level: "ERROR", message: "request failed", code: problem.body.code }));
  }
  return c.body(JSON.stringify(problem.body), problem.status as 500, {
    ...problem.headers,
    "content-type": PROBLEM_CONTENT_TYPE,
  });
}
