/**
 * A2A's JSON-RPC binding over HTTP for one request (loaded by the first A2A request, never at cold
 * start): the SDK's `JsonRpcTransportHandler` parses and validates the JSON-RPC message and maps the
 * handler's values to the wire (protojson); this module only moves HTTP — the JSON answer, or an SSE
 * stream for SendStreamingMessage / SubscribeToTask whose events carry `id: <run event sequence>`, so a
 * client that lost the stream resubscribes with `Last-Event-ID` and gets every later event once.
 */
import type { AgentCard } from "@a2a-js/sdk";
import {
  type A2ARequestHandler,
  JsonRpcTransportHandler,
  ServerCallContext,
  validateVersion,
} from "@a2a-js/sdk/server";
import type { A2ACall } from "./call.js";
import { createA2AHandler } from "./handler.js";

/**
 * The A2A card as JSON (protojson, as the SDK's clients read it), written by the SDK's own JSON-RPC
 * transport: the answer to `GetExtendedAgentCard` from a handler that knows only the card. The package's
 * root `AgentCard.toJSON` is the same code in a second copy (each of the SDK's entry points carries its
 * own protojson codecs), ~15 kB of the Lambda bundle that this way is never loaded (docs/performance.md, P4).
 * @throws Error when the transport answers with an error (it does not for a card)
 */
export async function agentCardJson(card: AgentCard): Promise<unknown> {
  const cardOnly: Pick<A2ARequestHandler, "getAuthenticatedExtendedAgentCard"> = {
    getAuthenticatedExtendedAgentCard: async () => card,
  };
  // The transport calls only the method the request names, so a handler of one method serves it.
  const transport = new JsonRpcTransportHandler(cardOnly as A2ARequestHandler);
  const answer = (await transport.handle(
    { jsonrpc: "2.0", id: 0, method: "GetExtendedAgentCard" },
    new ServerCallContext({ user: { isAuthenticated: false, userName: "" } }),
  )) as { result?: unknown; error?: { message: string } };
  if (answer.error || answer.result === undefined) {
    throw new Error(`The A2A card could not be written: ${answer.error?.message ?? "no result"}`);
  }
  return answer.result;
}

/**
 * Serves one JSON-RPC request: `body` is the request's text, `headers` its headers (lower-case names).
 * The A2A version is the `A2A-Version` header's (absent: 0.3, which this agent does not speak: a
 * JSON-RPC error says so). Errors are JSON-RPC errors with HTTP 200, as the binding says.
 */
export async function serveA2A(
  call: A2ACall,
  request: { body: string; headers: Record<string, string | undefined> },
): Promise<Response> {
  const context = new ServerCallContext({
    user: { isAuthenticated: true, userName: call.security.userId },
    requestedVersion: request.headers["a2a-version"] || undefined,
    state: new Map([["headers", request.headers]]),
  });
  let rpcId: unknown = null;
  try {
    rpcId = (JSON.parse(request.body) as { id?: unknown }).id ?? null;
  } catch {
    // The transport handler answers malformed JSON itself.
  }
  try {
    validateVersion(context.requestedVersion, call.card, "JSONRPC");
  } catch (error) {
    return json({ jsonrpc: "2.0", id: rpcId, error: JsonRpcTransportHandler.mapToJSONRPCError(error) });
  }
  const transport = new JsonRpcTransportHandler(createA2AHandler(call));
  const answer = await transport.handle(request.body, context);
  if (!isStream(answer)) return json(answer);
  const iterator = answer[Symbol.asyncIterator]();
  let first: IteratorResult<unknown>;
  try {
    first = await iterator.next();
  } catch (error) {
    return json({ jsonrpc: "2.0", id: rpcId, error: JsonRpcTransportHandler.mapToJSONRPCError(error) });
  }
  return new Response(sseBody(first, iterator, rpcId), {
    status: 200,
    headers: { "content-type": "text/event-stream", "cache-control": "no-cache" },
  });
}

/** A JSON answer. */
function json(body: unknown): Response {
  return new Response(JSON.stringify(body), { status: 200, headers: { "content-type": "application/json" } });
}

/** Whether the transport answered a stream (an async iterable of JSON-RPC responses). */
function isStream(answer: unknown): answer is AsyncIterable<unknown> {
  return typeof (answer as AsyncIterable<unknown> | undefined)?.[Symbol.asyncIterator] === "function";
}

/**
 * The SSE body: each JSON-RPC response as `data:`, with `id:` the run event sequence in its result's
 * metadata (when there is one); a failure mid-stream is `event: error` with a JSON-RPC error.
 */
function sseBody(
  first: IteratorResult<unknown>,
  rest: AsyncIterator<unknown>,
  rpcId: unknown,
): ReadableStream {
  const encoder = new TextEncoder();
  return new ReadableStream({
    async start(controller) {
      const write = (text: string) => controller.enqueue(encoder.encode(text));
      try {
        let next = first;
        while (!next.done) {
          const seq = sequenceOf(next.value);
          write(`${seq === undefined ? "" : `id: ${seq}\n`}data: ${JSON.stringify(next.value)}\n\n`);
          next = await rest.next();
        }
      } catch (error) {
        const body = { jsonrpc: "2.0", id: rpcId, error: JsonRpcTransportHandler.mapToJSONRPCError(error) };
        write(`event: error\ndata: ${JSON.stringify(body)}\n\n`);
      } finally {
        controller.close();
      }
    },
  });
}

/** The run event sequence a streamed response carries in its status or artifact update's metadata. */
function sequenceOf(response: unknown): number | undefined {
  const result = (response as { result?: Record<string, { metadata?: { seq?: unknown } }> }).result ?? {};
  for (const key of ["statusUpdate", "artifactUpdate"]) {
    const seq = result[key]?.metadata?.seq;
    if (typeof seq === "number") return seq;
  }
  return undefined;
}
