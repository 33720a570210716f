/** The HTTP contract of A2A (docs/a2a.md): the public Agent Card and the JSON-RPC endpoint. */

import { createRoute, z } from "@hono/zod-openapi";
import { lastEventIdParameter, security } from "./common.js";
import { authErrors, payloadTooLarge, problem } from "./problems.js";

/** An A2A JSON-RPC response: a result or an error (A2A error codes, the problem `code` in `data`). */
const A2AResponseSchema = z
  .object({
    jsonrpc: z.literal("2.0"),
    id: z.union([z.string(), z.number(), z.null()]),
    result: z.unknown().optional(),
    error: z.object({ code: z.number().int(), message: z.string(), data: z.unknown().optional() }).optional(),
  })
  .openapi("A2AJsonRpcResponse");

/** `GET /.well-known/agent-card.json`: the Agent Card, without authentication. */
export const agentCardRoute = createRoute({
  method: "get",
  path: "/.well-known/agent-card.json",
  summary: "A2A Agent Card (no auth)",
  description:
    "The A2A Agent Card (protojson): the JSON-RPC interface at /v1/a2a, one skill per tool, and the security schemes (a bearer JWT of JWT_ISSUER with the API's audience). docs/a2a.md.",
  responses: {
    200: {
      description: "The card.",
      content: { "application/json": { schema: z.record(z.string(), z.unknown()).openapi("A2AAgentCard") } },
    },
  },
});

/** `POST /v1/a2a`: one A2A JSON-RPC request. */
export const a2aRoute = createRoute({
  method: "post",
  security,
  path: "/v1/a2a",
  summary: "A2A endpoint (JSON-RPC binding, streaming over SSE)",
  description:
    "Agent2Agent 1.0 over JSON-RPC (docs/a2a.md): SendMessage, SendStreamingMessage, GetTask, ListTasks, CancelTask, SubscribeToTask. A task is a run; `contextId` the conversation; a repeated `messageId` is the same task. Send `A2A-Version: 1.0`. SendStreamingMessage and SubscribeToTask answer `text/event-stream` (`id:` the run event sequence; resume with `Last-Event-ID`). Refusals are JSON-RPC errors with the problem `code` in their metadata.",
  parameters: [
    lastEventIdParameter(
      "SubscribeToTask: the `id` of the last SSE event received; the stream resumes with every later event, once. Anything but a sequence is JSON-RPC invalid params (-32602, INVALID_REQUEST).",
    ),
  ],
  request: {
    body: {
      required: true,
      content: {
        "application/json": {
          schema: z
            .object({
              jsonrpc: z.literal("2.0"),
              // Required: without one the request is a JSON-RPC notification, which gets no answer, and
              // every A2A method answers (A2A 1.0 §9.3): refused here, so no run starts unseen.
              id: z.union([z.string(), z.number(), z.null()], {
                error: "A2A requests need an id (a string or number): a notification gets no answer.",
              }),
              method: z.string(),
              params: z.unknown().optional(),
            })
            .openapi("A2AJsonRpcRequest"),
        },
      },
    },
  },
  responses: {
    200: {
      description: "The JSON-RPC response, or for the streaming methods an SSE stream of them.",
      content: {
        "application/json": { schema: A2AResponseSchema },
        "text/event-stream": { schema: z.string() },
      },
    },
    400: problem("INVALID_REQUEST: the body is not JSON, or not a JSON-RPC request."),
    413: payloadTooLarge,
    415: problem("UNSUPPORTED_MEDIA_TYPE: send application/json."),
    ...authErrors,
  },
});
