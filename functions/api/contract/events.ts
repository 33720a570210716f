/** The HTTP contract of a run's events: `GET /v1/runs/{runId}/events` (docs/run-events.md). */

import { createRoute, z } from "@hono/zod-openapi";
import { EventStreamSchema, lastEventIdParameter, security, wholeNumberQuery } from "./common.js";
import { authErrors, problem } from "./problems.js";
import { RunIdParam } from "./runs.js";

/** Query of `GET /v1/runs/{runId}/events`: `after`, the sequence to resume after. */
export const RunEventsQuery = z.object({
  after: wholeNumberQuery("after", 0, Number.MAX_SAFE_INTEGER)
    .optional()
    .openapi({
      param: { name: "after", in: "query" },
      description:
        "Resume after this event sequence (as `Last-Event-ID`, which wins when both are sent); 0 or absent: from the first event.",
    }),
});

/** `GET /v1/runs/{runId}/events`: the run's events as Server-Sent Events, then live until it ends. */
export const runEventsRoute = createRoute({
  method: "get",
  path: "/v1/runs/{runId}/events",
  summary: "Watch a run: its events so far, then live until it ends (Server-Sent Events, resumable)",
  security,
  request: { params: RunIdParam, query: RunEventsQuery },
  parameters: [
    lastEventIdParameter(
      "The `id` of the last event received: the stream resumes with every later event, once.",
    ),
  ],
  responses: {
    200: {
      description:
        "`text/event-stream`: every event after the resume point, then live events; the stream closes after `run.finished`.",
      content: { "text/event-stream": { schema: EventStreamSchema } },
    },
    204: {
      description:
        "The run has ended and the resume point is at or after its final event (`Last-Event-ID` = the last id, as an EventSource resumes when a stream closes): nothing more will come, and an EventSource stops.",
    },
    400: problem("INVALID_REQUEST: malformed runId, `after` or `Last-Event-ID`."),
    404: problem(
      "NOT_FOUND: no such run for this caller (another tenant's or user's run is not found either).",
    ),
    ...authErrors,
  },
});
