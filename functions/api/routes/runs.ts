import { randomUUID } from "node:crypto";
import type { Context } from "hono";
import type { RunOutcome } from "../../../shared/agent/loop.js";
import type { ConversationHistory } from "../../../shared/runs/conversation.js";
import { listRuns, readRun } from "../../../shared/runs/queries.js";
import { type PreparedRun, prepareRun, type RunBody, type RunStart } from "../../../shared/runs/start.js";
import { POLL_AFTER_SECONDS, prefersAsync } from "../async-preference.js";
import { listRunsRoute } from "../contract/run-list.js";
import { cancelRunRoute, createRunRoute, getRunRoute } from "../contract/runs.js";
import { ProblemError } from "../problem-details.js";
import { type AppEnv, type GetDeps, routeGroup } from "./deps.js";
import { streamRun, wantsEventStream } from "./events.js";

/**
 * `POST /v1/runs`, `GET /v1/runs` (the runs the caller may see, filtered), `GET /v1/runs/{runId}` and `POST /v1/runs/{runId}/cancel`. The POST maps HTTP to the
 * runs layer (shared/runs/start.ts) and its {@link RunStart} back to HTTP; the Idempotency-Key
 * (run-idempotency.ts: replay / 409 / 422, or run once and store) is loaded on the first run, not at cold
 * start (it brings the AWS SDK, see functions/api/handler.ts).
 */
export function runRoutes(deps: GetDeps) {
  return routeGroup()
    .openapi(createRunRoute, async (c) => {
      const body = c.req.valid("json");
      const async = prefersAsync(c.req.header("prefer")) && deps().executions !== undefined;
      // Accept: text/event-stream streams a synchronous run's events, then this same answer.
      const stream = !async && wantsEventStream(c.req.header("accept"));
      const runId = `run_${randomUUID()}`;
      const prepared = await prepareRun(deps(), {
        security: c.get("security"),
        body,
        prefersAsync: async,
        lambdaRemainingMs: c.env?.lambdaContext?.getRemainingTimeInMillis(),
        runId,
      });
      const respond = () => respondOnce(c, deps, prepared, body);
      if (!stream) return (await respond()) as never;
      return (await streamRun(c, deps(), { tenantId: c.get("security").tenantId, runId, respond })) as never;
    })
    .openapi(listRunsRoute, async (c) => {
      return c.json(await listRuns(deps().runs, c.get("security"), c.req.valid("query")), 200);
    })
    .openapi(getRunRoute, async (c) => {
      const view = await readRun(deps(), c.get("security"), c.req.valid("param").runId);
      // A run still going (a durable run between polls) says when to look again.
      if (view.run.status === "running") c.header("Retry-After", String(POLL_AFTER_SECONDS));
      const { run, steps, pendingApprovals } = view;
      return c.json({ ...run, steps, ...(pendingApprovals ? { pendingApprovals } : {}) }, 200);
    })
    .openapi(cancelRunRoute, async (c) => {
      const { cancelRun } = await import("../../../shared/runs/cancel.js");
      const after = await cancelRun(deps(), c.get("security"), c.req.valid("param").runId);
      return c.json({ ...after.run, steps: after.steps }, 200);
    });
}

/**
 * The POST's JSON path: the Idempotency-Key (replay / 409 / 422, or run once and store), then the run's
 * start as HTTP ({@link runStartResponse}).
 */
async function respondOnce(
  c: Context<AppEnv>,
  deps: GetDeps,
  prepared: PreparedRun,
  body: RunBody,
): Promise<Response> {
  try {
    const { RUN_ROUTE, requestFingerprint, withRunIdempotency } = await import("../run-idempotency.js");
    const input = { deps: deps(), headers: c.req.raw.headers, event: c.env?.event, body };
    const idempotent = {
      ...input,
      tenantId: c.get("security").tenantId,
      userId: c.get("security").userId,
      leaseExpiresAt: prepared.leaseExpiresAt,
    };
    // A replay is a stored response of this same route.
    return await withRunIdempotency(idempotent, async (key) =>
      runStartResponse(
        c,
        await prepared.start(key ? { key, fingerprint: requestFingerprint(RUN_ROUTE, body) } : undefined),
      ),
    );
  } finally {
    prepared.dispose();
  }
}

/**
 * A run's start as HTTP: a completed synchronous run is 200 with its outcome (without the transcript),
 * except context_length_exceeded (422 CONTEXT_LENGTH_EXCEEDED) and model_error (502 MODEL_UNAVAILABLE),
 * which are problems carrying the partial outcome; an accepted durable run is 202 with `Location`,
 * `Retry-After` and `Preference-Applied: respond-async`; a handed-over run is 202 with `Location` and
 * `Retry-After`, its steps and pending approvals.
 * @throws ProblemError CONTEXT_LENGTH_EXCEEDED, MODEL_UNAVAILABLE
 */
function runStartResponse(c: Context<AppEnv>, start: RunStart): Response {
  const poll = { location: "", "retry-after": String(POLL_AFTER_SECONDS) };
  switch (start.kind) {
    case "completed":
      return c.json(completedBody(start.outcome, start.conversation), 200);
    case "accepted":
      poll.location = `/v1/runs/${start.run.runId}`;
      return c.json({ ...start.run, steps: [] }, 202, { ...poll, "preference-applied": "respond-async" });
    case "handed_over":
      poll.location = `/v1/runs/${start.run.runId}`;
      return c.json(
        { ...start.run, steps: start.steps, pendingApprovals: start.pendingApprovals },
        202,
        poll,
      );
  }
}

/** The 200 body of a completed synchronous run; a status the API answers as a problem is thrown as one. */
function completedBody(outcome: RunOutcome, conversation: ConversationHistory | undefined) {
  const { messages: _transcript, ...rest } = outcome;
  const body = {
    ...rest,
    previousRunId: conversation?.previousRunId ?? null,
    history: conversation?.summary ?? null,
  };
  const { runId, status: runStatus, cycles, toolResults, usage, durationMs } = body;
  if (body.status === "context_length_exceeded") {
    throw new ProblemError(
      "CONTEXT_LENGTH_EXCEEDED",
      `The model's context window could not hold the request; the run stopped after ${body.cycles} cycle(s). Continue with less history (a new conversation, or a lower HISTORY_MAX_TOKENS).`,
      {
        extensions: {
          runId,
          runStatus,
          previousRunId: body.previousRunId,
          history: body.history,
          contextLength: body.details.contextLength ?? null,
          cycles,
          toolResults,
          usage,
          durationMs,
        },
      },
    );
  }
  if (body.status === "model_error") {
    // A failure the adapter recognised (Bedrock's) has a stable code and a fixed sentence saying what to do.
    const known = body.details.modelError?.code ? body.details.modelError : undefined;
    throw new ProblemError(
      "MODEL_UNAVAILABLE",
      known
        ? `${known.message} The run stopped after ${body.cycles} cycle(s).`
        : `The model provider kept failing after retries; the run stopped after ${body.cycles} cycle(s).`,
      {
        extensions: {
          runId,
          runStatus,
          providerStatus: body.modelErrorStatus ?? null,
          modelErrorCode: known?.code ?? null,
          cycles,
          toolResults,
          usage,
          durationMs,
        },
      },
    );
  }
  return body;
}
