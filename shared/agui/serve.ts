/**
 * AG-UI's HTTP binding for one request (`POST /v1/agui`, loaded by the first AG-UI request): the body is
 * AG-UI's `RunAgentInput` (its schema is the route's, functions/api/contract/agui.ts); its last user
 * message is the prompt, its
 * `threadId` the conversation (a thread the caller has not used yet starts one: threads are the
 * client's), its `runId` the turn's key (a repeated run id is the same run, never a second one). The
 * tools a client offers are ignored: tools are the backend's. The answer is an SSE stream of AG-UI
 * events (events.ts); the last AG-UI event of each run event carries `id: <run event sequence>`, so a
 * client that lost the stream sends the same input again with `Last-Event-ID` and gets RUN_STARTED and
 * the open step's STEP_STARTED again (no `id`), then every later event once. A refusal, before the run
 * started or after, is a RUN_ERROR event with its code (errors.ts); only a body that is not a RunAgentInput is refused by the route (400 problem+json). docs/ag-ui.md.
 */

import type { ApiDeps } from "../deps.js";
import type { SecurityContext } from "../identity.js";
import type { RunEvent } from "../runs/events.js";
import { isUsableKey, MAX_KEY_LENGTH, PROTOCOL_KEY_SCOPES } from "../runs/exactly-once.js";
import { beginTurn, followTurn } from "../runs/protocol-port.js";
import { readRun } from "../runs/queries.js";
import { PROMPT_MAX_CHARS } from "../runs/run-request.js";
import { runErrorOf } from "./errors.js";
import type { AguiEvent } from "./event-type.js";
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
export interface AguiInput {
  threadId: string;
  runId: string;
  prompt: string;
}

/** Why a body is not an input this endpoint serves: a sentence and the fields at fault. */
export interface AguiInputProblem {
  message: string;
  errors: Array<{ in: "body"; path: string; message: string }>;
}

/**
 * Serves one AG-UI run: starts (or finds, for a repeated run id) the turn and streams its events. A
 * refusal (a DomainError: the thread's previous run still going, the run id used for another input, a
 * policy or a quota) and any failure are a RUN_ERROR event with the code (errors.ts), never a second
 * code path: the turn is the runs layer's.
 */
export async function serveAgui(call: AguiCall, input: AguiInput): Promise<Response> {
  const ids = { threadId: input.threadId, runId: input.runId };
  let events: AsyncGenerator<RunEvent>;
  let first: IteratorResult<RunEvent>;
  let runId: string | undefined;
  let after = 0;
  try {
    const turn = await beginTurn(call.deps, {
      security: call.security,
      prompt: input.prompt,
      operation: AGUI_OPERATION,
      scope: PROTOCOL_KEY_SCOPES.agui,
      key: input.runId,
      keyName: "run id",
      conversationId: input.threadId,
      unknownConversation: "start",
      prefersAsync: false,
      lambdaRemainingMs: call.lambdaRemainingMs,
    });
    runId = turn.runId;
    // A resumed stream reads the run from its start: the events the client saw say which step is open.
    after = turn.existing ? call.after : 0;
    events = followTurn(call.deps, call.security, {
      runId: turn.runId,
      after: 0,
      live: turn.live,
      settled: turn.existing ? undefined : turn.settled,
      endsAt: call.endsAt,
    });
    first = await events.next();
  } catch (error) {
    return sse(async (write) => write(failure(call, runId, error)));
  }
  const turnRunId = runId;
  const translator = new AguiTranslator(ids, async () => {
    return (await readRun(call.deps, call.security, turnRunId)).steps;
  });
  return sse(async (write) => {
    try {
      let reopened = after === 0;
      for (let next = first; !next.done; next = await events.next()) {
        const seq = next.value.seq;
        if (seq > after && !reopened) {
          reopened = true;
          for (const event of translator.reopen()) write(event);
        }
        const translated = await translator.translate(next.value, seq <= after);
        if (seq <= after) continue;
        for (const [index, event] of translated.entries()) {
          write(event, index === translated.length - 1 ? seq : undefined);
        }
      }
    } catch (error) {
      write(failure(call, turnRunId, error));
    }
  });
}

/** The RUN_ERROR of a failure; an unexpected one is logged (its text never reaches the client). */
function failure(call: AguiCall, runId: string | undefined, error: unknown): AguiEvent {
  const { event, unexpected } = runErrorOf(error);
  if (unexpected) call.deps.logger.error("AG-UI run failed", { runId, error: error as Error });
  return event;
}

/**
 * An SSE response whose body `produce` writes: each AG-UI event as `data:`, with `id:` when it is the
 * last AG-UI event of a run event (its sequence, for Last-Event-ID).
 */
function sse(produce: (write: (event: AguiEvent, seq?: number) => void) => Promise<void>): Response {
  const encoder = new TextEncoder();
  const body = new ReadableStream({
    async start(controller) {
      const write = (event: AguiEvent, seq?: number) => {
        const id = seq === undefined ? "" : `id: ${seq}\n`;
        controller.enqueue(encoder.encode(`${id}data: ${JSON.stringify(event)}\n\n`));
      };
      try {
        await produce(write);
      } finally {
        controller.close();
      }
    },
  });
  return new Response(body, {
    status: 200,
    headers: { "content-type": "text/event-stream", "cache-control": "no-cache" },
  });
}

/**
 * A RunAgentInput as the route validated it (AG-UI 1.0: `threadId`, `runId`, `messages` with their
 * `role` and `content`; tools, context, state and forwarded props are not read).
 */
export interface AguiRunInput {
  threadId: string;
  runId: string;
  messages: ReadonlyArray<{ role: string; content?: unknown }>;
}

/**
 * The thread, the client's run id and the prompt (the text of the last user message) of a validated
 * input, or why this endpoint does not serve it (the route answers 400 INVALID_REQUEST with it): a run id
 * that is no usable key, a part of the last user message that is not text, no user text, or more than
 * PROMPT_MAX_CHARS of it.
 */
export function parseAguiInput(body: AguiRunInput): { input: AguiInput } | { problem: AguiInputProblem } {
  if (!isUsableKey(body.runId)) {
    const message = `The runId must be 1 to ${MAX_KEY_LENGTH} printable ASCII characters: it is the run's key.`;
    return { problem: { message, errors: [{ in: "body", path: "runId", message }] } };
  }
  const found = promptOf(body.messages);
  if ("otherPart" in found) {
    const message = `The last user message may hold text parts only (this agent reads words, not files); ${found.otherPart} is not text.`;
    return { problem: { message, errors: [{ in: "body", path: found.otherPart, message }] } };
  }
  const { prompt } = found;
  if (!prompt.trim()) {
    const message = "The input needs a user message with text: the request, in words.";
    return {
      problem: { message, errors: [{ in: "body", path: "messages", message: "no user message with text" }] },
    };
  }
  // POST /v1/runs' cap on a prompt holds here too: the body limit alone would let a far longer one in.
  if (prompt.trim().length > PROMPT_MAX_CHARS) {
    const message = `The last user message's text must be at most ${PROMPT_MAX_CHARS} characters.`;
    return { problem: { message, errors: [{ in: "body", path: "messages", message }] } };
  }
  return { input: { threadId: body.threadId, runId: body.runId, prompt } };
}

/**
 * The text of the last user message (its text parts joined), or the path of its first part that is not
 * text (`messages.<i>.content.<j>`): dropping a file would run the request on its words alone.
 */
function promptOf(
  messages: ReadonlyArray<{ role: string; content?: unknown }>,
): { prompt: string } | { otherPart: string } {
  const index = messages.findLastIndex((message) => message.role === "user");
  const content = messages[index]?.content as string | Array<{ type: string; text?: string }> | undefined;
  if (typeof content === "string") return { prompt: content };
  const other = (content ?? []).findIndex((part) => part.type !== "text");
  if (other >= 0) return { otherPart: `messages.${index}.content.${other}` };
  return {
    prompt: (content ?? [])
      .map((part) => part.text ?? "")
      .filter(Boolean)
      .join("\n"),
  };
}
