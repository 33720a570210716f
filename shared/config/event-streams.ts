/**
 * Configuration section: run event streams (docs/run-events.md). The streaming function's tokens are the
 * bearer-token section's (./token-issuer.ts).
 * - STREAM_HEARTBEAT_SECONDS (default 15 s): an SSE comment is sent when the event stream has been
 *   quiet this long, well under the idle limits of what serves it (a Lambda function URL closes a
 *   response idle for longer than its function's timeout; proxies and browsers often cut at 30-60 s).
 * - STREAM_MAX_SECONDS (default 840 s = 14 min): how long one event stream stays open; it then ends
 *   with a `retry:` hint and the client resumes with Last-Event-ID. Also cut to the Lambda's remaining
 *   time minus DEADLINE_RESERVE_MS, so it ends before the platform's limit (the streaming function's
 *   15-minute timeout; 29 s behind the HTTP API).
 * - STREAM_RETRY_MS (default 1000 ms): the `retry:` hint, how long a client waits before reconnecting.
 * - STREAM_RUN_TIMEOUT_MS (default 600000 ms = 10 min, at most 15 min): RUN_TIMEOUT_MS of a synchronous
 *   run on the streaming function (functions/stream/handler.ts), whose 15-minute timeout lifts the HTTP
 *   API's 29 s; the deadline still follows the invocation's remaining time.
 * - EVENTS_POLL_MS (default 1000 ms): how often a stream reads the table for new events of a run served
 *   by another function (the durable runner); events of a run in the same process arrive at once.
 */
import { envInt, positiveInt } from "./env.js";
import { configSection, type SectionDocs } from "./section.js";

/** The event streams section's variables, see the module comment. */
export const eventStreamFields = {
  STREAM_HEARTBEAT_SECONDS: positiveInt(15, 240),
  STREAM_MAX_SECONDS: positiveInt(840, 3_600),
  STREAM_RETRY_MS: positiveInt(1_000, 60_000),
  STREAM_RUN_TIMEOUT_MS: positiveInt(600_000, 900_000),
  EVENTS_POLL_MS: envInt(1_000, 50, 60_000),
};

/**
 * The event streams section: `stream`, all in ms: heartbeat interval, longest stream, the `retry:`
 * hint, the table poll interval, and the run timeout of a synchronous run on the streaming function.
 */
export const eventStreamSection = configSection({
  fields: eventStreamFields,
  config: (
    env,
  ): {
    stream: { heartbeatMs: number; maxMs: number; retryMs: number; pollMs: number; runTimeoutMs: number };
  } => ({
    stream: {
      heartbeatMs: env.STREAM_HEARTBEAT_SECONDS * 1000,
      maxMs: env.STREAM_MAX_SECONDS * 1000,
      retryMs: env.STREAM_RETRY_MS,
      pollMs: env.EVENTS_POLL_MS,
      runTimeoutMs: env.STREAM_RUN_TIMEOUT_MS,
    },
  }),
});

/** The prose of the event streams section's variables (docs/configuration.md). */
export const eventStreamDocs: SectionDocs<typeof eventStreamFields> = {
  STREAM_HEARTBEAT_SECONDS: {
    group: "Run event streams",
    unit: "s",
    description:
      "A `: heartbeat` SSE comment is sent when an event stream has been quiet this long, well under the idle limits of the proxies and browsers in between.",
  },
  STREAM_MAX_SECONDS: {
    group: "Run event streams",
    unit: "s",
    description:
      "How long one `GET /v1/runs/{runId}/events` stream stays open before it ends with a `retry:` hint (the client resumes with `Last-Event-ID`; a streamed `POST /v1/runs` lasts as long as its run instead); also cut to the Lambda's remaining time less `DEADLINE_RESERVE_MS`, so it ends before the platform does (the streaming function's 15-minute timeout).",
  },
  STREAM_RETRY_MS: {
    group: "Run event streams",
    unit: "ms",
    description: "The `retry:` hint a stream ends with: how long the client waits before it reconnects.",
  },
  STREAM_RUN_TIMEOUT_MS: {
    group: "Run event streams",
    unit: "ms",
    description:
      "The run timeout (`RUN_TIMEOUT_MS`) of a synchronous run on the streaming function (a streamed `POST /v1/runs`), whose 15-minute timeout lifts the HTTP API's 29 s. The deadline also follows the invocation's remaining time less `DEADLINE_RESERVE_MS`.",
  },
  EVENTS_POLL_MS: {
    group: "Run event streams",
    unit: "ms",
    description:
      "How often a stream reads the table for new events of a run served by another function (the durable runner); a run served in the same process streams its events at once.",
  },
};
