/** The HTTP contract of AG-UI (docs/ag-ui.md): `POST /v1/agui`, a run as an SSE stream of AG-UI events. */

import { createRoute, z } from "@hono/zod-openapi";
import { PROMPT_MAX_CHARS } from "../../../shared/runs/run-request.js";
import { lastEventIdParameter, security } from "./common.js";
import { authErrors, payloadTooLarge, problem } from "./problems.js";

/** A message of RunAgentInput: its id, role and content (text, or parts; a `text` part has `text`). */
const AguiMessageSchema = z
  .looseObject({
    id: z.string(),
    role: z.enum(["developer", "system", "assistant", "user", "tool", "activity", "reasoning"]),
    content: z
      .union([z.string(), z.array(z.looseObject({ type: z.string(), text: z.string().optional() }))])
      .optional(),
  })
  .openapi("AguiMessage");

/**
 * AG-UI 1.0's RunAgentInput (the schema of @ag-ui/core, whose runtime stays out of the API bundle; the
 * official HttpAgent's requests are the tests' proof): the fields this endpoint reads are checked, the
 * rest are accepted as sent.
 */
const RunAgentInputSchema = z
  .looseObject({
    threadId: z.string(),
    runId: z.string(),
    messages: z.array(AguiMessageSchema),
    tools: z.array(z.looseObject({ name: z.string() })).optional(),
    context: z.array(z.looseObject({ description: z.string(), value: z.string() })).optional(),
  })
  .openapi("AguiRunAgentInput");

/** `POST /v1/agui`: AG-UI's RunAgentInput in, an SSE stream of AG-UI events out. */
export const aguiRoute = createRoute({
  method: "post",
  security,
  path: "/v1/agui",
  summary: "AG-UI endpoint (RunAgentInput in, AG-UI events over SSE out)",
  description:
    "Agent–User Interaction 1.0 (docs/ag-ui.md): the last user message is the prompt, `threadId` the conversation, `runId` the key (a repeated run id is the same run). Tools the client offers are ignored. The answer is `text/event-stream` of AG-UI events (RUN_STARTED, STEP_*, TOOL_CALL_*, TEXT_MESSAGE_*, CUSTOM boundloop.*, RUN_FINISHED or RUN_ERROR); `id:` is the run event sequence, send the same input with `Last-Event-ID` to resume.",
  parameters: [
    lastEventIdParameter(
      "Resume: the `id` of the last event received, sent with the same input (same `runId`): RUN_STARTED and the open step again, then every later event once. Anything but a sequence is 400 INVALID_REQUEST.",
    ),
  ],
  request: {
    body: {
      required: true,
      content: {
        "application/json": {
          schema: RunAgentInputSchema,
        },
      },
    },
  },
  responses: {
    200: {
      description:
        "The run's AG-UI events. A refusal (PREVIOUS_RUN_IN_PROGRESS: a run of the thread is still going; IDEMPOTENCY_KEY_REUSED: the run id was used with another input; and every other refusal of the runs layer) is a RUN_ERROR event whose `code` is the stable code and whose `rawEvent` holds the facts and `retryAfterSeconds`.",
      content: { "text/event-stream": { schema: z.string().openapi("AguiEventStream") } },
    },
    400: problem(
      `INVALID_REQUEST: not a RunAgentInput (threadId, runId, messages), a run id that is not 1–255 printable characters, no user text, more than ${PROMPT_MAX_CHARS} characters of it or a part of it that is not text, or a Last-Event-ID that is not an event sequence.`,
    ),
    413: payloadTooLarge,
    415: problem("UNSUPPORTED_MEDIA_TYPE: send application/json."),
    ...authErrors,
  },
});
