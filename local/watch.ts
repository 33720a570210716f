/**
 * `npm start -- --watch`: runs and their events (docs/run-events.md) through the streaming entry the
 * stack deploys behind its function URL (functions/stream/, local/stream-handler.ts), as the seed event's
 * user with a token from a local issuer; every event is printed as it arrives, read with eventsource-parser.
 */
import type { APIGatewayProxyEventV2 } from "aws-lambda";
import { createParser } from "eventsource-parser";
import { createTokenVerifier } from "../shared/auth/token-verifier.js";
import { loadConfig } from "../shared/config.js";
import type { DurableExecutions } from "../shared/durable/executions.js";
import { createDevIssuer, devAuthSettings, mintToken } from "./dev-auth.js";
import { createLambdaContext } from "./lambda-context.js";
import { invokeStreaming } from "./lambda-streaming.js";
import { formatRunEvent } from "./run-report.js";
import { localStreamHandler } from "./stream-handler.js";

/** An answer as the JSON path gives it: the HTTP status and the body; the id of the last event printed. */
export interface WatchedAnswer {
  statusCode: number;
  body: string;
  lastEventId: string | undefined;
}

/** What {@link startWatcher} gives `npm start`. */
export interface Watcher {
  /**
   * `POST /v1/runs` with `Accept: text/event-stream`: prints the run's events as they arrive and resolves
   * with the answer the stream ends with (`run.outcome`), as status and body like the JSON path's; a
   * refusal before the run (problem+json) is returned as it came.
   */
  send(event: APIGatewayProxyEventV2): Promise<WatchedAnswer>;
  /**
   * `GET /v1/runs/{runId}/events`: prints the run's events from the first (or after `lastEventId`, those
   * {@link send} printed already), then live ones until `run.finished`, reconnecting with `Last-Event-ID`
   * whenever a stream ends before it (its time limit). With `stopAtPause`, it stops at the end of the
   * stream that brought an `approval.requested` (a pause nobody here decides) instead.
   * @throws Error when a stream answers other than 200
   */
  follow(
    event: APIGatewayProxyEventV2,
    runId: string,
    lastEventId?: string,
    options?: { stopAtPause?: boolean },
  ): Promise<void>;
}

/** What one streamed response brought: its status, whole text, last event id and the outcome event. */
interface StreamRead {
  statusCode: number;
  text: string;
  lastEventId: string | undefined;
  finished: boolean;
  paused: boolean;
  outcome: string | undefined;
}

/**
 * Starts the local streaming entry for the seed event's user (its JWT claims, a token from a fresh local
 * issuer), on the table and model server in `process.env`; a run handed over (an approval pause) goes to
 * `executions` (the local durable runner `npm start -- --approval` polls) when given.
 */
export async function startWatcher(
  seed: APIGatewayProxyEventV2,
  executions?: DurableExecutions,
): Promise<Watcher> {
  const issuer = await createDevIssuer();
  const claims = (
    seed.requestContext as unknown as { authorizer: { jwt: { claims: Record<string, string> } } }
  ).authorizer.jwt.claims;
  const token = await mintToken(issuer, {
    sub: claims.sub,
    tenant_id: claims.tenant_id,
    scope: claims.scope,
  });
  const config = loadConfig(process.env);
  const handler = await localStreamHandler(config, createTokenVerifier(devAuthSettings(issuer)), executions);
  const context = () =>
    createLambdaContext(config.stream.runTimeoutMs + config.limits.deadlineReserveMs, "boundloop-stream");

  /** Invokes the entry with `event` as the seed user, printing each run event; reads to the end. */
  const read = async (event: APIGatewayProxyEventV2): Promise<StreamRead> => {
    const request = { ...event, headers: { ...event.headers, authorization: `Bearer ${token}` } };
    const { stream, done } = invokeStreaming(handler, request, context());
    const metadata = await Promise.race([stream.metadata, done.then(() => stream.metadata)]);
    const sse = metadata.headers?.["content-type"]?.startsWith("text/event-stream") === true;
    const got: StreamRead = {
      statusCode: metadata.statusCode ?? 200,
      text: "",
      lastEventId: undefined,
      finished: false,
      paused: false,
      outcome: undefined,
    };
    const parser = createParser({
      onEvent: (message) => {
        if (message.event === "run.outcome") {
          got.outcome = message.data;
          return;
        }
        got.lastEventId = message.id ?? got.lastEventId;
        got.finished ||= message.event === "run.finished";
        got.paused ||= message.event === "approval.requested";
        console.log(formatRunEvent(JSON.parse(message.data) as Record<string, unknown>));
      },
    });
    for await (const chunk of stream) {
      const part = (chunk as Buffer).toString("utf8");
      got.text += part;
      if (sse) parser.feed(part);
    }
    await done;
    return got;
  };

  return {
    async send(event) {
      console.log("\nWatching the run (POST /v1/runs, Accept: text/event-stream):");
      const got = await read({ ...event, headers: { ...event.headers, accept: "text/event-stream" } });
      const { lastEventId } = got;
      if (got.outcome === undefined) {
        return { statusCode: got.statusCode === 200 ? 500 : got.statusCode, body: got.text, lastEventId };
      }
      return { statusCode: outcomeStatus(got.outcome), body: got.outcome, lastEventId };
    },
    async follow(event, runId, after, options) {
      const { eventForRoute } = await import("./durable-runner.js");
      console.log(
        `\nWatching the run (GET /v1/runs/${runId}/events${after ? `, Last-Event-ID ${after}` : ""}):`,
      );
      let lastEventId = after;
      for (;;) {
        const request = eventForRoute(event, "GET", `/v1/runs/${runId}/events`);
        request.headers = {
          ...request.headers,
          accept: "text/event-stream",
          ...(lastEventId ? { "last-event-id": lastEventId } : {}),
        };
        const got = await read(request);
        if (got.statusCode !== 200) throw new Error(`GET …/events answered ${got.statusCode}: ${got.text}`);
        if (got.finished || (options?.stopAtPause && got.paused)) return;
        lastEventId = got.lastEventId ?? lastEventId;
      }
    },
  };
}

/**
 * The HTTP status the JSON path answers with for a stream's outcome body: a problem carries its own;
 * a run is 200, or 202 when handed over for approval (`awaiting_approval`, or still `running` on the
 * durable runner), or 502 for model_error.
 */
function outcomeStatus(outcome: string): number {
  const answer = JSON.parse(outcome) as { status?: unknown };
  if (typeof answer.status === "number") return answer.status;
  if (answer.status === "awaiting_approval" || answer.status === "running") return 202;
  return answer.status === "model_error" ? 502 : 200;
}
