import { once } from "node:events";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { type ContextLengthFlavor, contextLengthRefusal } from "./model-refusals.js";
import { type PlannerMessage, plan, planAnswer } from "./planner.js";

/**
 * One scripted assistant reply, or a fault to inject, for the local model server's scripted mode.
 * - `content`, `toolCalls`, `refusal`, `finishReason`: the assistant message returned. Faults in the
 *   message itself are written here: malformed or truncated `arguments` (any string), `arguments` that
 *   are not a string at all (an object, number, array or null, sent as that JSON value), a `refusal`, a
 *   cut-off turn (`finishReason: "length"`), any other finish_reason (servers send values outside the
 *   documented set), duplicate, empty or missing (`id` left out) tool call ids, an unknown tool name.
 *   `toolCalls: []` sends an empty `tool_calls` list (left out: no `tool_calls` member).
 * - `delayMs`: latency: wait this long (ms) before answering (the wait ends early if the client disconnects)
 * - `heldUntil`: answer once this promise settles (with `delayMs`, whichever comes first): a test keeps
 *   the call in flight exactly as long as it needs to, instead of guessing a delay (in-process servers
 *   only; the wait ends early if the client disconnects)
 * - `status`: answer with this HTTP error status instead (e.g. 429, 500, 503), body `{error:{message}}`;
 *   each SDK retry consumes the next reply, so a provider failing N times is N such replies
 * - `headers`: extra response headers, e.g. `{ "retry-after-ms": "10" }` to steer the SDK's retry backoff
 * - `rawBody`: send this text as the body verbatim (status `status` or 200), e.g. truncated JSON
 * - `dropConnection`: destroy the socket without any response (a network failure)
 * - `usage`: token counts to report (defaults to a length-based estimate); `omitUsage`: send no `usage`
 * - `stallBody`: send the status line, the headers and the start of the body, then nothing more (the
 *   connection stays open until the client gives up or the server stops)
 * - `contextLengthExceeded`: refuse the request as that server refuses one over its context window
 *   (status and body of {@link contextLengthRefusal}), naming the request's estimated size
 */
export interface ScriptedReply {
  content?: string | null;
  toolCalls?: Array<{ id?: string; name: string; arguments: unknown }>;
  refusal?: string;
  finishReason?: string;
  delayMs?: number;
  heldUntil?: Promise<unknown>;
  status?: number;
  headers?: Record<string, string>;
  rawBody?: string;
  dropConnection?: boolean;
  usage?: { prompt_tokens: number; completion_tokens: number };
  omitUsage?: boolean;
  stallBody?: boolean;
  contextLengthExceeded?: ContextLengthFlavor;
}

/**
 * Fault injection for planner mode: each chat-completions request fails with probability `rate`
 * (0..1), answering one of `statuses` (default 500, 502, 503, 429) after a latency drawn uniformly
 * from `minDelayMs`..`maxDelayMs` (ms, default 50..500). A 429 carries `retry-after-ms` (default 50),
 * as providers send a Retry-After. Draws come from a PRNG seeded with `seed` (mulberry32), so the same
 * seed and request order give the same faults.
 */
export interface PlannerFaults {
  rate: number;
  seed: number;
  minDelayMs?: number;
  maxDelayMs?: number;
  statuses?: number[];
  retryAfterMs?: number;
}

/** Counts of what fault injection did: planner requests seen, and faults injected by status. */
export interface FaultStats {
  plannerRequests: number;
  injected: number;
  byStatus: Record<number, number>;
}

/**
 * mulberry32: a small seeded PRNG returning floats in [0, 1). Not for cryptography; used so fault
 * injection is reproducible from a seed.
 */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** A request the server received, for tests to inspect. */
export interface RecordedRequest {
  model: string;
  messages: PlannerMessage[];
  tools: unknown[];
  body: Record<string, unknown>;
  /** The request's `authorization` header (the API key the client sent), for tests of key handling. */
  authorization: string | undefined;
}

/** A running local model server. `baseURL` ends in `/v1`, ready for `new OpenAI({ baseURL })`. */
export interface LocalModelServer {
  baseURL: string;
  /** Every chat-completions request received, in order. */
  requests: RecordedRequest[];
  /** Switches to scripted mode: each request takes the next reply; an exhausted script answers 500. */
  script(replies: ScriptedReply[]): void;
  /** Switches to the deterministic planner (the default); with `faults`, injects them (see {@link PlannerFaults}). */
  usePlanner(faults?: PlannerFaults): void;
  /**
   * Switches to a responder: each request's reply is `responder(request)`, a function of the conversation
   * so far (the eval harness's adversary, local/eval/adversary.ts, reads the tool results it got).
   */
  respond(responder: (request: RecordedRequest) => ScriptedReply): void;
  /** What fault injection has done since the planner (with faults) was last selected. */
  faultStats(): FaultStats;
  stop(): Promise<void>;
}

/** Rough token estimate (4 characters a token), reported when a reply sets no usage. */
const estimateTokens = (text: string) => Math.max(1, Math.ceil(text.length / 4));

/**
 * Starts the project's OpenAI-compatible model server on 127.0.0.1 (`POST /v1/chat/completions`,
 * non-streaming; `GET /v1/models`). Default mode: the deterministic planner in `planner.ts`, which is not
 * an LLM and says so. Scripted mode: a test supplies the exact assistant messages and faults. In both
 * modes a request whose tool messages do not pair with its tool calls is rejected with 400, as OpenAI
 * does (see {@link transcriptProblem}); such a request consumes no scripted reply.
 * @param options.port 0 (default) picks a free port
 * @param options.plannerDelayMs the planner's latency: each of its replies waits this long (ms; default 0),
 *   as a hosted model takes hundreds of ms to answer (the benchmarks' cold start with a model that is not
 *   instant)
 */
export async function startModelServer(
  options: { port?: number; script?: ScriptedReply[]; faults?: PlannerFaults; plannerDelayMs?: number } = {},
): Promise<LocalModelServer> {
  let queue: ScriptedReply[] | undefined = options.script ? [...options.script] : undefined;
  let responder: ((request: RecordedRequest) => ScriptedReply) | undefined;
  let faults: PlannerFaults | undefined;
  let random = () => 1;
  let stats: FaultStats = { plannerRequests: 0, injected: 0, byStatus: {} };
  const setFaults = (next: PlannerFaults | undefined) => {
    faults = next;
    random = next ? seededRandom(next.seed) : () => 1;
    stats = { plannerRequests: 0, injected: 0, byStatus: {} };
  };
  setFaults(options.faults);
  const requests: RecordedRequest[] = [];
  let counter = 0;

  const server = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      if (!res.headersSent) sendJson(res, 500, { error: { message: String(error), type: "server_error" } });
    });
  });

  /** A planner reply, delayed by `options.plannerDelayMs` when set. */
  const withPlannerDelay = (reply: ScriptedReply): ScriptedReply =>
    options.plannerDelayMs ? { ...reply, delayMs: options.plannerDelayMs } : reply;

  /** In planner mode with faults: the fault to inject for this request, or undefined. */
  function plannerFault(): ScriptedReply | undefined {
    stats.plannerRequests += 1;
    if (!faults) return undefined;
    // Three draws per request whatever the outcome, so later faults do not depend on earlier ones.
    const [hit, pick, delay] = [random(), random(), random()];
    if (hit >= faults.rate) return undefined;
    const statuses = faults.statuses ?? [500, 502, 503, 429];
    const status = statuses[Math.floor(pick * statuses.length)] ?? 500;
    const min = faults.minDelayMs ?? 50;
    const max = faults.maxDelayMs ?? 500;
    stats.injected += 1;
    stats.byStatus[status] = (stats.byStatus[status] ?? 0) + 1;
    return {
      status,
      delayMs: Math.round(min + delay * (max - min)),
      ...(status === 429 ? { headers: { "retry-after-ms": String(faults.retryAfterMs ?? 50) } } : {}),
    };
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    if (req.method === "GET" && req.url?.startsWith("/v1/models")) {
      sendJson(res, 200, {
        object: "list",
        data: [{ id: "boundloop-local-planner", object: "model", owned_by: "local" }],
      });
      return;
    }
    if (req.method !== "POST" || !req.url?.startsWith("/v1/chat/completions")) {
      sendJson(res, 404, {
        error: { message: `No route ${req.method} ${req.url}`, type: "invalid_request_error" },
      });
      return;
    }
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const raw = Buffer.concat(chunks).toString("utf8");
    const body = JSON.parse(raw) as Record<string, unknown>;
    const messages = (body.messages ?? []) as PlannerMessage[];
    const recorded: RecordedRequest = {
      model: String(body.model),
      messages,
      tools: (body.tools ?? []) as unknown[],
      body,
      authorization: req.headers.authorization,
    };
    requests.push(recorded);
    const problem = transcriptProblem(messages);
    if (problem) {
      sendJson(res, 400, { error: { message: problem, type: "invalid_request_error", code: null } });
      return;
    }

    const reply = queue
      ? queue.shift()
      : responder
        ? responder(recorded)
        : (plannerFault() ?? withPlannerDelay(fromPlanner(messages, body.tools, body.tool_choice)));
    if (!reply) {
      sendJson(res, 500, {
        error: { message: "scripted model: no reply left in the script", type: "server_error" },
      });
      return;
    }
    if (reply.delayMs || reply.heldUntil) {
      // Not `req.destroyed`: Node destroys a fully read request, so that is true for every client.
      let clientGone = false;
      const closed = once(res, "close").then(() => {
        clientGone = true;
      });
      const waits: Array<Promise<unknown>> = [closed];
      if (reply.delayMs) waits.push(new Promise((resolve) => setTimeout(resolve, reply.delayMs)));
      if (reply.heldUntil) waits.push(reply.heldUntil.catch(() => undefined));
      await Promise.race(waits);
      if (clientGone || res.destroyed) return;
    }
    if (reply.contextLengthExceeded) {
      const refusal = contextLengthRefusal(reply.contextLengthExceeded, estimateTokens(raw));
      sendJson(res, refusal.status, refusal.body, reply.headers);
      return;
    }
    if (reply.dropConnection) {
      req.socket.destroy();
      return;
    }
    if (reply.rawBody !== undefined) {
      res.writeHead(reply.status ?? 200, { "content-type": "application/json", ...reply.headers });
      res.end(reply.rawBody);
      return;
    }
    if (reply.status && reply.status >= 400) {
      sendJson(
        res,
        reply.status,
        { error: { message: `injected fault: HTTP ${reply.status}`, type: "server_error" } },
        reply.headers,
      );
      return;
    }
    counter += 1;
    const toolCalls = reply.toolCalls?.map((call) => ({
      ...(call.id === undefined ? {} : { id: call.id }),
      type: "function",
      function: { name: call.name, arguments: call.arguments },
    }));
    const message = {
      role: "assistant",
      content: reply.content ?? null,
      refusal: reply.refusal ?? null,
      ...(toolCalls ? { tool_calls: toolCalls } : {}),
    };
    let completionTokens = reply.usage?.completion_tokens ?? estimateTokens(JSON.stringify(message));
    const promptTokens = reply.usage?.prompt_tokens ?? estimateTokens(raw);
    // As a real server: an estimated completion over the request's max_tokens is cut there (finish_reason
    // `length`, no tool calls, never more completion tokens than were allowed). Scripted usage is as scripted.
    const maxTokens = typeof body.max_tokens === "number" ? body.max_tokens : undefined;
    let finishReason = reply.finishReason;
    if (!reply.usage && maxTokens !== undefined && completionTokens > maxTokens) {
      const text = String(reply.content ?? JSON.stringify(toolCalls ?? []));
      Object.assign(message, { content: text.slice(0, maxTokens * 4) });
      delete (message as { tool_calls?: unknown }).tool_calls;
      completionTokens = maxTokens;
      finishReason = "length";
    }
    const completion = {
      id: `chatcmpl-local-${counter}`,
      object: "chat.completion",
      created: Math.floor(Date.now() / 1000),
      model: String(body.model ?? "boundloop-local-planner"),
      system_fingerprint: "boundloop-local-planner",
      choices: [
        {
          index: 0,
          message,
          logprobs: null,
          finish_reason:
            finishReason ??
            ((message as { tool_calls?: unknown[] }).tool_calls?.length ? "tool_calls" : "stop"),
        },
      ],
      ...(reply.omitUsage
        ? {}
        : {
            usage: {
              prompt_tokens: promptTokens,
              completion_tokens: completionTokens,
              total_tokens: promptTokens + completionTokens,
            },
          }),
    };
    if (reply.stallBody) {
      // Headers and the first bytes of the body now; the rest never comes.
      res.writeHead(200, { ...reply.headers, "content-type": "application/json" });
      res.write(JSON.stringify(completion).slice(0, 20));
      return;
    }
    sendJson(res, 200, completion, reply.headers);
  }

  server.listen(options.port ?? 0, "127.0.0.1");
  await once(server, "listening");
  const { port } = server.address() as AddressInfo;
  return {
    baseURL: `http://127.0.0.1:${port}/v1`,
    requests,
    script(replies) {
      queue = [...replies];
      responder = undefined;
    },
    usePlanner(next) {
      queue = undefined;
      responder = undefined;
      setFaults(next);
    },
    respond(next) {
      queue = undefined;
      responder = next;
    },
    faultStats() {
      return { ...stats, byStatus: { ...stats.byStatus } };
    },
    async stop() {
      server.closeAllConnections();
      server.close();
      await once(server, "close").catch(() => undefined);
    },
  };
}

/**
 * Checks the tool-call pairing OpenAI's chat completions API enforces (it answers 400 otherwise): every
 * assistant tool call is answered by exactly one following tool message with its id, before the next
 * non-tool message, and every tool message answers a tool call of the assistant message before it.
 * Tool call ids must be unique within one assistant message.
 * @returns a description of the first problem, or undefined when the transcript is valid
 */
export function transcriptProblem(messages: PlannerMessage[]): string | undefined {
  let open: Set<string> | undefined;
  const unanswered = () =>
    open && open.size > 0
      ? `An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. Missing: ${[...open].join(", ")}.`
      : undefined;
  for (const message of messages) {
    if (message.role === "tool") {
      if (!open || !message.tool_call_id || !open.delete(message.tool_call_id)) {
        return `Messages with role 'tool' must be a response to a preceding message with 'tool_calls' (tool_call_id ${String(message.tool_call_id)}).`;
      }
      continue;
    }
    const problem = unanswered();
    if (problem) return problem;
    open = undefined;
    if (message.role === "assistant" && message.tool_calls?.length) {
      const ids = message.tool_calls.map((call) => call.id);
      if (new Set(ids).size !== ids.length)
        return `Duplicate tool_call ids in one assistant message: ${ids.join(", ")}.`;
      open = new Set(ids);
    }
  }
  return unanswered();
}

function fromPlanner(messages: PlannerMessage[], tools: unknown, toolChoice: unknown): ScriptedReply {
  // The tool names the request offers: the planner calls no read tool the caller was not offered.
  const offered = Array.isArray(tools)
    ? tools.map((tool) => String((tool as { function?: { name?: unknown } })?.function?.name))
    : [];
  // tool_choice "none" (the loop's summary call) gets text only, as from the chat-completions API.
  const decision = toolChoice === "none" ? planAnswer(messages) : plan(messages, offered);
  return decision.kind === "tool_calls" ? { toolCalls: decision.calls } : { content: decision.content };
}

function sendJson(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    ...headers,
    "content-type": "application/json",
    "content-length": Buffer.byteLength(text),
  });
  res.end(text);
}
