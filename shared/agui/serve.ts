/**
 * AG-UI's HTTP binding for one request (`POST /v1/agui`, loaded by the first AG-UI request): the body is
 * AG-UI's `RunAgentInput` (checked with `@ag-ui/core`'s schema); its last user message is the prompt, its
 * `threadId` the conversation (a thread the caller has not used yet starts one: threads are the
 * client's), its `runId` the turn's key (a repeated run id is the same run, never a second one). The
 * tools a client offers are ignored: tools are the backend's. The answer is an SSE stream of AG-UI
 * events (events.ts); the last AG-UI event of each run event carries `id: <run event sequence>`, so a
 * client that lost the stream sends the same input again with `Last-Event-ID` and gets every later
 * event once. A refusal before the run started is problem+json, not a stream. docs/ag-ui.md.
 */
import { RunAgentInputSchema } from "@ag-ui/core/schemas";
import type { ApiDeps } from "../deps.js";
import { ProblemError } from "../errors.js";
import type { SecurityContext } from "../identity.js";
import { beginTurn, findOwnRun, followTurn } from "../runs/protocol-port.js";
import { AguiTranslator } from "./events.js";

/** The operation name of AG-UI turns: the namespace of their keys in the idempotency records. */
export const AGUI_OPERATION = "AG-UI run";

/** One AG-UI request: the API's dependencies, the verified caller, what the HTTP layer read. */
export interface AguiCall {
  deps: ApiDeps;
  security: SecurityContext;
  lambdaRemainingMs?: number | undefined;
  /** When the stream must end (epoch ms of the API's clock). */
  endsAt: number;
  /** The sequence of the last run event the client saw (Last-Event-ID), else 0. */
  after: number;
}

/** What the input asks, read from `RunAgentInput`. */
interface AguiInput {
  threadId: string;
  runId: string;
  prompt: string;
}

/**
 * Serves one AG-UI run: starts (or finds, for a repeated run id) the turn and streams its events.
 * @throws ProblemError INVALID_REQUEST (not a RunAgentInput, no user text), the turn's refusals
 */
export async function serveAgui(call: AguiCall, body: unknown): Promise<Response> {
  const input = inputOf(body);
  const turn = await beginTurn(call.deps, {
    security: call.security,
    prompt: input.prompt,
    operation: AGUI_OPERATION,
    scope: "agui",
    key: input.runId,
    conversationId: input.threadId,
    unknownConversation: "start",
    prefersAsync: false,
    lambdaRemainingMs: call.lambdaRemainingMs,
  });
  const ids = { threadId: input.threadId, runId: input.runId };
  const translator = new AguiTranslator(ids, async () => {
    return (await findOwnRun(call.deps, call.security, turn.runId))?.steps ?? [];
  });
  const events = followTurn(call.deps, call.security, {
    runId: turn.runId,
    after: turn.existing ? call.after : 0,
    live: turn.live,
    settled: turn.existing ? undefined : turn.settled,
    endsAt: call.endsAt,
  });
  const first = await events.next();
  const encoder = new TextEncoder();
  const body$ = new ReadableStream({
    async start(controller) {
      try {
        let next = first;
        while (!next.done) {
          const translated = await translator.translate(next.value);
          translated.forEach((event, index) => {
            const id = index === translated.length - 1 ? `id: ${next.value.seq}\n` : "";
            controller.enqueue(encoder.encode(`${id}data: ${JSON.stringify(event)}\n\n`));
          });
          next = await events.next();
        }
      } catch (error) {
        call.deps.logger.error("AG-UI stream failed", { runId: turn.runId, error: error as Error });
        const message =
          "The server could not go on with the stream; send the same input again with Last-Event-ID.";
        controller.enqueue(
          encoder.encode(`data: ${JSON.stringify({ type: "RUN_ERROR", message, code: "INTERNAL" })}\n\n`),
        );
      } finally {
        controller.close();
      }
    },
  });
  return new Response(body$, {
    status: 200,
    headers: { "content-type": "text/event-stream", "cache-control": "no-cache" },
  });
}

/**
 * The thread, the client's run id and the prompt: the text of the last user message.
 * @throws ProblemError INVALID_REQUEST
 */
function inputOf(body: unknown): AguiInput {
  const parsed = RunAgentInputSchema.safeParse(body);
  if (!parsed.success) {
    throw new ProblemError("INVALID_REQUEST", "The body is not an AG-UI RunAgentInput.", {
      extensions: {
        errors: parsed.error.issues.map((issue) => ({
          in: "body",
          path: issue.path.map(String).join(".") || "(root)",
          message: issue.message,
        })),
      },
    });
  }
  const last = [...parsed.data.messages].reverse().find((message) => message.role === "user");
  const content = last?.content;
  const prompt =
    typeof content === "string"
      ? content
      : (content ?? [])
          .map((part) => (part.type === "text" ? part.text : ""))
          .filter(Boolean)
          .join("\n");
  if (!prompt.trim()) {
    throw new ProblemError(
      "INVALID_REQUEST",
      "The input needs a user message with text: the request, in words.",
      {
        extensions: { errors: [{ in: "body", path: "messages", message: "no user message with text" }] },
      },
    );
  }
  return { threadId: parsed.data.threadId, runId: parsed.data.runId, prompt };
}
