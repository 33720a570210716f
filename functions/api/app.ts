import { randomUUID } from "node:crypto";
import type { Context as LambdaContext } from "aws-lambda";
import { Hono, type Context as HonoContext } from "hono";
import * as z from "zod";
import { Deadline } from "../../shared/agent/deadline.js";
import { runAgent } from "../../shared/agent/loop.js";
import type { AppDeps } from "../../shared/deps.js";
import { PROBLEM_CONTENT_TYPE, ProblemError, toProblem } from "../../shared/errors.js";
import { securityContextFromEvent } from "../../shared/identity.js";

/** What hono/aws-lambda puts in `c.env`: the raw event and the Lambda context. */
export interface LambdaBindings {
  event?: unknown;
  lambdaContext?: Pick<LambdaContext, "getRemainingTimeInMillis" | "awsRequestId">;
}

/** Body of `POST /v1/runs`: a prompt of 1 to 8000 characters. */
export const CreateRunBody = z.object({ prompt: z.string().trim().min(1).max(8000) }).strict();

/**
 * Builds the HTTP API. `deps` may be a factory, called once on the first request that needs it, so a
 * cold start that only serves /healthz builds no clients.
 * Routes: `GET /healthz`; `POST /v1/runs` → 200 `{runId, status, answer, reason, cycles, toolResults,
 * usage, durationMs}`. Errors are `application/problem+json` from one `onError`.
 */
export function createApp(deps: AppDeps | (() => AppDeps)) {
  let resolved: AppDeps | undefined = typeof deps === "function" ? undefined : deps;
  const getDeps = (): AppDeps => {
    resolved ??= (deps as () => AppDeps)();
    return resolved;
  };
  const app = new Hono<{ Bindings: LambdaBindings }>();

  app.get("/healthz", (c) => c.json({ status: "ok" }));

  app.post("/v1/runs", async (c) => {
    const security = securityContextFromEvent(c.env?.event);
    const body = CreateRunBody.safeParse(await readJson(c.req.raw));
    if (!body.success) {
      throw new ProblemError("INVALID_REQUEST", "The request body is invalid.", {
        extensions: {
          errors: body.error.issues.map((issue) => ({
            path: issue.path.join(".") || "(root)",
            message: issue.message,
          })),
        },
      });
    }
    const { config, openai, tools } = getDeps();
    const deadline = new Deadline(
      Deadline.budgetMs(
        config.limits.runTimeoutMs,
        c.env?.lambdaContext?.getRemainingTimeInMillis(),
        config.limits.deadlineReserveMs,
      ),
    );
    const runId = `run_${randomUUID()}`;
    try {
      // Idempotency-Key (issue 4): replay / 409 / 422, or run once and store; see run-idempotency.ts.
      const idempotency = { deps: getDeps(), headers: c.req.raw.headers, tenantId: security.tenantId };
      // Loaded on the first run, not at cold start: it brings the AWS SDK (see functions/api/handler.ts).
      const { withRunIdempotency } = await import("./run-idempotency.js");
      return await withRunIdempotency(
        { ...idempotency, body: body.data, leaseExpiresAt: deadline.at },
        async (key) => {
          const outcome = await runAgent({
            client: openai,
            model: config.model.name,
            tools,
            security,
            prompt: body.data.prompt,
            runId,
            runScope: key ?? runId,
            limits: config.limits,
            deadline,
          });
          const { messages: _transcript, ...response } = outcome;
          return c.json(response, 200);
        },
      );
    } finally {
      deadline.dispose();
    }
  });

  app.notFound((c) => problemResponse(c, new ProblemError("NOT_FOUND", "No such route.")));
  app.onError((error, c) => problemResponse(c, error));

  return app;
}

/** The one place an error becomes an HTTP response (`application/problem+json`). */
function problemResponse(c: HonoContext, error: unknown): Response {
  const problem = toProblem(error);
  if (problem.status >= 500) console.error(JSON.stringify({ level: "ERROR", message: String(error) }));
  return c.body(JSON.stringify(problem.body), problem.status as 500, {
    ...problem.headers,
    "content-type": PROBLEM_CONTENT_TYPE,
  });
}

/**
 * Reads a JSON request body.
 * @throws ProblemError UNSUPPORTED_MEDIA_TYPE (415) when the content type is not JSON,
 *   INVALID_REQUEST (400) when the body is not valid JSON
 */
async function readJson(request: Request): Promise<unknown> {
  const contentType = request.headers.get("content-type") ?? "";
  if (!/^application\/(.+\+)?json\b/i.test(contentType)) {
    throw new ProblemError("UNSUPPORTED_MEDIA_TYPE", "Send the body as application/json.");
  }
  const text = await request.text();
  try {
    return JSON.parse(text);
  } catch {
    throw new ProblemError("INVALID_REQUEST", "The body is not valid JSON.");
  }
}
