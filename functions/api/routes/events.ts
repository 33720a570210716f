import type { Context } from "hono";
import { type SSEStreamingApi, streamSSE } from "hono/streaming";
import type { ApiDeps } from "../../../shared/deps.js";
import {
  type FeedItem,
  followRunEvents,
  LAST_EVENT_ID_RULE,
  LiveEvents,
  lastEventSequence,
  readerHasEnd,
} from "../../../shared/runs/event-feed.js";
import { readRunRecord } from "../../../shared/runs/queries.js";
import { IDEMPOTENT_REPLAYED_HEADER } from "../contract/common.js";
import { runEventsRoute } from "../contract/events.js";
import { ProblemError, toProblem } from "../problem-details.js";
import { type AppEnv, type GetDeps, routeGroup } from "./deps.js";

/** The SSE comment a `GET /v1/runs/{runId}/events` stream opens with (clients ignore comments). */
export const OPEN_COMMENT = "events follow";

/** The SSE event name of the last event of a `POST /v1/runs` stream: the JSON answer's body. */
export const OUTCOME_EVENT = "run.outcome";

/**
 * Whether a request's `Accept` asks for Server-Sent Events: `text/event-stream` listed with a q above 0
 * (RFC 9110 section 12.5.1). A wildcard alone does not: a client that takes anything gets JSON.
 */
export function wantsEventStream(accept: string | undefined): boolean {
  return (accept ?? "").split(",").some((range) => {
    const [type, ...params] = range.split(";").map((part) => part.trim().toLowerCase());
    if (type !== "text/event-stream") return false;
    const q = params.find((param) => param.startsWith("q="));
    return q === undefined || Number(q.slice(2)) > 0;
  });
}

/**
 * The sequence a stream resumes after: `Last-Event-ID` (what EventSource sends on reconnect) when
 * present, else `?after=`, else 0 (from the first event).
 * @throws ProblemError INVALID_REQUEST when Last-Event-ID is not a sequence (digits)
 */
export function resumeAfter(lastEventId: string | undefined, after: number | undefined): number {
  const sequence = lastEventSequence(lastEventId);
  if (sequence === null) {
    throw new ProblemError("INVALID_REQUEST", LAST_EVENT_ID_RULE, {
      extensions: { errors: [{ in: "header", path: "Last-Event-ID", message: LAST_EVENT_ID_RULE }] },
    });
  }
  return sequence ?? after ?? 0;
}

/**
 * The routes of the run event streams, a route group of the API (functions/api/app.ts mounts it after
 * its identity and body middlewares): `GET /v1/runs/{runId}/events`, 204 No Content when the reader
 * already has the run's final event ({@link readerHasEnd}).
 * @param getDeps the app's dependencies, loaded on first use
 */
export function runEventRoutes(getDeps: GetDeps) {
  const routes = routeGroup();
  routes.openapi(runEventsRoute, async (c) => {
    const deps = getDeps();
    const security = c.get("security");
    const { runId } = c.req.valid("param");
    const after = resumeAfter(c.req.header("last-event-id"), c.req.valid("query").after);
    // Who may watch a run is who may see it (shared/runs/access.ts).
    const run = await readRunRecord(deps.runs, security, runId);
    // The reader has the final event (an EventSource resumes once more when a stream closes): 204 tells
    // it to stop, and it is an answer with a status line, which a function URL sends only with a write.
    if (await readerHasEnd(deps, security.tenantId, run, after)) return c.body(null, 204) as never;
    return streamSSE(c, async (sse) => {
      // A first write at once: a function URL sends the status line and headers only with it, and a
      // quiet run's first event or heartbeat may be many seconds away.
      await sse.write(`: ${OPEN_COMMENT}\n\n`);
      await writeRunEvents(c, sse, deps, { tenantId: security.tenantId, runId, after });
    }) as never;
  });
  return routes;
}

/**
 * Writes a run's events to an SSE stream until the final one (then the stream closes), the reader
 * leaves, or the stream's time is up: `target.endsAt` (epoch ms of the deps' clock; default
 * {@link streamEndsAt}), after which it ends with a `retry:` hint so the client reconnects and resumes. A `: heartbeat` comment goes out whenever the stream has been quiet
 * for STREAM_HEARTBEAT_SECONDS. Every write is awaited (on Lambda nothing runs after the stream ends).
 * A store failure ends the stream with `event: error` and the problem body (never the error's text).
 * @returns true when the final event was written
 */
export async function writeRunEvents(
  c: Context<AppEnv>,
  sse: SSEStreamingApi,
  deps: ApiDeps,
  target: { tenantId: string; runId: string; after: number; live?: LiveEvents; endsAt?: number },
): Promise<boolean> {
  const { clock, config } = deps;
  const left = new AbortController();
  sse.onAbort(() => left.abort());
  const readerLeft = () => left.signal.aborted;
  c.req.raw.signal?.addEventListener("abort", () => left.abort(), { once: true });
  const endsAt = target.endsAt ?? streamEndsAt(c, deps);
  let lastWrite = clock.now();
  const feed = followRunEvents({
    deps,
    ...target,
    pollMs: Math.min(config.stream.pollMs, config.stream.heartbeatMs),
    clock,
    signal: left.signal,
  });
  try {
    for await (const item of feed as AsyncIterable<FeedItem>) {
      if (item.kind === "event") {
        const { event } = item;
        await sse.writeSSE({ id: String(event.seq), event: event.type, data: JSON.stringify(event) });
        lastWrite = clock.now();
        if (event.type === "run.finished") return true;
      } else if (clock.now() - lastWrite >= config.stream.heartbeatMs) {
        await sse.write(": heartbeat\n\n");
        lastWrite = clock.now();
      }
      if (clock.now() >= endsAt) {
        await sse.write(`retry: ${config.stream.retryMs}\n\n`);
        return false;
      }
    }
  } catch (error) {
    if (readerLeft()) return false;
    deps.logger.error("run event stream failed", { runId: target.runId, error: error as Error });
    await sse.writeSSE({ event: "error", data: JSON.stringify(toProblem(error).body) });
  }
  return false;
}

/**
 * When a stream must end (epoch ms of the deps' clock): STREAM_MAX_SECONDS from now, or earlier when
 * the Lambda has less time left (its remaining time less DEADLINE_RESERVE_MS), so the stream ends with
 * its `retry:` hint before the platform cuts it.
 */
export function streamEndsAt(c: Context<AppEnv>, deps: ApiDeps): number {
  const remaining = c.env?.lambdaContext?.getRemainingTimeInMillis?.();
  const budget =
    remaining === undefined
      ? deps.config.stream.maxMs
      : Math.min(deps.config.stream.maxMs, remaining - deps.config.limits.deadlineReserveMs);
  return deps.clock.now() + Math.max(0, budget);
}

/**
 * `POST /v1/runs` with `Accept: text/event-stream`: the run's events as it runs, then `event:
 * run.outcome` whose data is the body the JSON request would have got (its answer, its 202 of a
 * hand-over, or its problem), then the stream closes.
 * - `respond` is the route's JSON path (Idempotency-Key included). The stream begins with the run's
 *   first event ({@link LiveEvents.started}: its record is written, so the run was admitted and really
 *   started). Until then nothing is streamed: a refusal (400, 409 key in use, 422 key reused, 404
 *   previous run, 429 or 503 of the quotas, a store that fails before the run's record is written) is
 *   answered exactly as without the header, problem+json with its status and headers (Retry-After).
 * - A replay of a finished run (the Idempotency-Key's stored answer) streams the run's stored events,
 *   then that answer as the outcome.
 * - The stream lasts as long as the run, whatever STREAM_MAX_SECONDS (heartbeats keep it alive).
 * - The run does not depend on the stream: a reader that leaves stops the writing only; the handler
 *   still waits for the run (and registers it with `executionCtx.waitUntil` where there is one), so on
 *   Lambda the invocation ends after the run and its writes, never in the middle.
 * @throws whatever `respond` throws before the run started
 */
export async function streamRun(
  c: Context<AppEnv>,
  deps: ApiDeps,
  input: { tenantId: string; runId: string; respond: () => Promise<Response> },
): Promise<Response> {
  const live = new LiveEvents(deps.runEvents.hub, input.runId);
  const started = live.started.then(() => "started" as const);
  const settled = input.respond().then(
    (response) => ({ response }),
    (error: unknown) => ({ error }),
  );
  const first = await Promise.race([started, settled]);
  let runId = input.runId;
  if (first !== "started") {
    live.close();
    if ("error" in first) throw first.error;
    const { response } = first;
    if (response.headers.get(IDEMPOTENT_REPLAYED_HEADER) !== "true") return response;
    // A replay: the stored events of the run the stored answer names, then that answer.
    const body = (await response.clone().json()) as { runId?: unknown };
    if (typeof body.runId !== "string") return response;
    runId = body.runId;
    c.header(IDEMPOTENT_REPLAYED_HEADER, "true");
  }
  try {
    c.executionCtx.waitUntil(settled);
  } catch {
    // No execution context (hono/aws-lambda's buffered adapter, tests): the callback below waits.
  }
  return streamSSE(c, async (sse) => {
    // No time limit of its own: a POST cannot be resumed, and the run it carries ends by its deadline,
    // which already follows the invocation's remaining time (STREAM_MAX_SECONDS bounds a GET's stream).
    const target = { tenantId: input.tenantId, runId, after: 0, live, endsAt: Number.POSITIVE_INFINITY };
    const writing = writeRunEvents(c, sse, deps, target);
    const result = await settled;
    live.finish();
    await writing;
    live.close();
    const outcome =
      "error" in result ? JSON.stringify(toProblem(result.error).body) : await result.response.text();
    await sse.writeSSE({ event: OUTCOME_EVENT, data: outcome });
  }) as never;
}
