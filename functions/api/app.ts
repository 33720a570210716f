import { randomUUID } from "node:crypto";
import type { Logger } from "@aws-lambda-powertools/logger";
import { OpenAPIHono } from "@hono/zod-openapi";
import type { Context as LambdaContext } from "aws-lambda";
import type { Context as HonoContext, MiddlewareHandler } from "hono";
import { bodyLimit } from "hono/body-limit";
import { HTTPException } from "hono/http-exception";
import type { ZodError } from "zod";
import { Deadline } from "../../shared/agent/deadline.js";
import type { Config } from "../../shared/config.js";
import { loadConversation } from "../../shared/conversation.js";
import type { AppDeps } from "../../shared/deps.js";
import { ProblemError, problemCodeOf, toProblem } from "../../shared/errors.js";
import { type SecurityContext, securityContextFromEvent } from "../../shared/identity.js";
import { createLogger, flushMetrics, recordProblemMetric } from "../../shared/observability.js";
import { POLL_AFTER_SECONDS, prefersAsync } from "./async-preference.js";
import {
  cancelRunRoute,
  createRunRoute,
  decideApprovalRoute,
  getInvoiceRoute,
  getRunRoute,
  healthRoute,
  listApprovalsRoute,
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

/**
 * Dependencies built on first use: `load` is called once, on the first request that needs them; `config`
 * is what they are built from, so a failure (of `load` itself, or of a route that needs none) is still
 * logged by the service's logger.
 */
export interface LazyDeps {
  config: Config;
  load: () => AppDeps;
}

/** The permission the read-only billing routes (`/v1/invoices…`) need. */
export const BILLING_READ = "billing:read";

/** The permission of billing writers; with it a caller may cancel any run of the tenant. */
export const BILLING_WRITE = "billing:write";

/** True when APPROVAL_RULES names at least one threshold (docs/approvals.md). */
function approvalsConfigured(config: Config): boolean {
  return Object.values(config.approvals.rules).some((rule) => rule && Object.keys(rule).length > 0);
}

/** Where a validation issue was found, as the problem's `errors[].in` says it. */
const TARGET_NAMES: Record<string, string> = {
  json: "body",
  query: "query",
  param: "path",
  header: "header",
};

/**
 * Builds the HTTP API (routes and schemas in ./contract.ts, served as OpenAPI 3.1 at /openapi.json).
 * `deps` may be {@link LazyDeps}, loaded on the first request that needs them, so a cold start that only
 * serves /healthz or /openapi.json builds no clients and reads no secret.
 *
 * Every `/v1/*` request passes, in order: request log line + per-invocation metrics flush → identity
 * from the event's authorizer (401) → body size cap (413) → the route's content type (415) and zod
 * validation (400) → the handler. Every error becomes `application/problem+json` in one `onError`.
 */
export function createApp(deps: AppDeps | LazyDeps) {
  let resolved: AppDeps | undefined = "load" in deps ? undefined : deps;
  const getDeps = (): AppDeps => {
    resolved ??= (deps as LazyDeps).load();
    return resolved;
  };
  let bootLogger: Logger | undefined;
  const failureLogger = (): Logger => {
    if (resolved) return resolved.logger;
    bootLogger ??= createLogger(deps.config.observability);
    return bootLogger;
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
    // A continuation is checked before anything is claimed or written, for a
    // synchronous and a durable run alike: 404 / 409 leave no trace.
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
    // Prefer: respond-async starts a durable run and answers 202 (run-async.ts); without a runner the
    // preference is ignored (RFC 7240 lets a server do so) and the run is synchronous.
    if (deps.executions && prefersAsync(c.req.header("prefer"))) {
      const { startAsyncRun } = await import("./run-async.js");
      const { executions } = deps;
      const response = await startAsyncRun({
        deps: { ...deps, executions },
        security,
        body,
        headers: c.req.raw.headers,
        event: c.env?.event,
        conversation,
      });
      return response as never;
    }
    const runId = `run_${randomUUID()}`;
    // With approval rules and a runner, a run that reaches an approval is handed over to a durable
    // execution and answered 202 (approval-handoff.ts); loaded only then.
    const handoff =
      deps.executions && approvalsConfigured(deps.config)
        ? { module: await import("./approval-handoff.js"), executions: deps.executions }
        : undefined;
    const parts = handoff?.module.handoffParts();
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
          const request = {
            security,
            prompt: body.prompt,
            maxCycles: body.maxCycles,
            timeoutMs: body.timeoutMs,
            runId,
            runScope: clientKey ?? runId,
            deadline,
            conversation,
          };
          let outcome: Awaited<ReturnType<typeof executeRun>>;
          try {
            outcome = await executeRun(deps, {
              ...request,
              ...(parts && handoff
                ? {
                    step: parts.step,
                    approve: parts.approve,
                    isHandoff: (error) => error instanceof handoff.module.RunHandedOver,
                  }
                : {}),
            });
          } catch (error) {
            if (!(handoff && parts && error instanceof handoff.module.RunHandedOver)) throw error;
            return handoff.module.handOver(
              { ...deps, executions: handoff.executions },
              { ...request, body, carried: parts.carried },
            );
          }
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
            // A failure the adapter knows (Bedrock's) carries a fixed sentence saying what to do.
            const known = response.details.modelError?.code ? response.details.modelError : undefined;
            throw new ProblemError(
              "MODEL_UNAVAILABLE",
              known
                ? `${known.message} The run stopped after ${response.cycles} cycle(s).`
                : `The model provider kept failing after retries; the run stopped after ${response.cycles} cycle(s).`,
              {
                extensions: {
                  runId: response.runId,
                  runStatus: response.status,
                  providerStatus: response.modelErrorStatus ?? null,
                  modelErrorCode: known?.code ?? null,
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
    // A run still going (a durable run between polls) says when to look again.
    if (found.run.status === "running") c.header("Retry-After", String(POLL_AFTER_SECONDS));
    if (found.run.status === "awaiting_approval") {
      const { pendingApprovalsOf } = await import("./approvals.js");
      const pendingApprovals = await pendingApprovalsOf(getDeps(), security.tenantId, runId);
      return c.json({ ...found.run, steps: found.steps, pendingApprovals }, 200);
    }
    return c.json({ ...found.run, steps: found.steps }, 200);
  });

  app.openapi(cancelRunRoute, async (c) => {
    const deps = getDeps();
    const security = c.get("security");
    const { runId } = c.req.valid("param");
    const found = await deps.runs.get(security.tenantId, runId);
    // The user who started a run may cancel it, and billing writers of the same tenant.
    const allowed =
      found && (found.run.userId === security.userId || security.permissions.includes(BILLING_WRITE));
    if (!found || !allowed) throw new ProblemError("NOT_FOUND", `There is no run ${runId}.`);
    const { cancelRun } = await import("./run-async.js");
    const after = await cancelRun(deps, security, found);
    return c.json({ ...after.run, steps: after.steps }, 200);
  });

  app.openapi(decideApprovalRoute, async (c) => {
    const { decideApproval } = await import("./approvals.js");
    const approval = await decideApproval(
      getDeps(),
      c.get("security"),
      c.req.valid("param"),
      c.req.valid("json"),
    );
    return c.json(approval, 200);
  });

  app.openapi(listApprovalsRoute, async (c) => {
    const { listApprovalPage } = await import("./approvals.js");
    const { limit, cursor } = c.req.valid("query");
    return c.json(await listApprovalPage(getDeps(), c.get("security"), { limit, cursor }), 200);
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
  app.onError((error, c) => problemResponse(c, error, resolved, failureLogger()));

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
  UNSUPPORTED_MEDIA_TYPE: "Send the body as application/json.",
  INTERNAL: "The server could not complete the request.",
};

/**
 * The one place an error becomes the app's HTTP response: {@link toProblem} picks the problem (status
 * table in shared/errors.ts) and the problem renders itself (`ProblemError.getResponse`). Server-side
 * failures (5xx) are logged at ERROR with the error by `logger` (the request's logger, with request id
 * and tenant); the response carries only the problem's generic detail. Problems are counted in
 * metrics once the dependencies exist.
 */
function problemResponse(
  c: HonoContext<AppEnv>,
  error: unknown,
  deps: AppDeps | undefined,
  logger: Logger,
): Response {
  const problem = toProblem(error instanceof HTTPException ? fromHttpException(error) : error);
  c.set("problemCode", problem.code);
  if (problem.status >= 500) {
    if (!deps && c.env?.lambdaContext) logger.addContext(c.env.lambdaContext);
    logger.error("request failed", { code: problem.code, error: error as Error });
  }
  if (deps) recordProblemMetric(deps.metrics, problem.code);
  return problem.getResponse();
}
