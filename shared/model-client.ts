import { fetch as nodeHttpFetch } from "@whatwg-node/node-fetch";
import OpenAI, { type ClientOptions } from "openai";

/**
 * The `fetch` the model client sends its requests with: @whatwg-node/node-fetch, a WHATWG fetch over
 * Node's own `http`/`https` modules (keep-alive through Node's global agent). It does the same exchange
 * as Node 20's global fetch (undici) in about half the CPU time per chat-completions call, because it
 * builds no web streams for the request and response bodies (measured in bench/ P1: the transport was
 * most of the loop's own time per cycle). Abort signals, timeouts, redirects, gzip/deflate/br responses
 * and connection errors behave as fetch specifies, so the SDK's timeout, retry and abort logic is unchanged.
 */
export const modelFetch = nodeHttpFetch as unknown as NonNullable<ClientOptions["fetch"]>;

/**
 * The key, in a request's `fetchOptions`, of a callback `(status: number) => void` that the client's
 * fetch calls with the HTTP status of every attempt answered with a non-2xx status (the SDK hands a
 * request's `fetchOptions` to every `fetch` of that request, retries included). This is how a model call
 * learns the status of attempts whose error the SDK does not surface, e.g. when the deadline cuts its
 * retries short (shared/model/openai-chat.ts).
 */
export const FAILED_STATUS_HOOK: unique symbol = Symbol("boundloop.failedStatusHook");

/** A request's `fetchOptions` carrying a {@link FAILED_STATUS_HOOK} callback. */
export interface FailedStatusFetchOptions {
  [FAILED_STATUS_HOOK]?: (status: number) => void;
}

/**
 * {@link modelFetch} that reports each non-2xx response to the request's {@link FAILED_STATUS_HOOK}
 * callback, if it has one, then returns the response unchanged.
 */
export const observingModelFetch: NonNullable<ClientOptions["fetch"]> = async (url, init) => {
  const response = await modelFetch(url, init);
  if (!response.ok) (init as FailedStatusFetchOptions | undefined)?.[FAILED_STATUS_HOOK]?.(response.status);
  return response;
};

/**
 * What {@link createModelClient} needs.
 * - `apiKey`: the key, or a function giving it (read lazily before each request, e.g. from Secrets Manager)
 * - `baseURL`: any OpenAI-compatible endpoint ending in `/v1`; undefined: the SDK's default (OpenAI)
 * - `maxRetries`: the SDK's retries of 408/409/429/5xx and connection errors, with its backoff (default 2)
 * - `wrapFetch`: a provider's wrapper around {@link observingModelFetch} (Bedrock's error shapes,
 *   shared/model/bedrock.ts bedrockFetch)
 */
export interface ModelClientOptions {
  apiKey: NonNullable<ClientOptions["apiKey"]>;
  baseURL?: string | undefined;
  maxRetries?: number;
  wrapFetch?: (fetch: NonNullable<ClientOptions["fetch"]>) => NonNullable<ClientOptions["fetch"]>;
}

/**
 * The one way the service builds its openai client (shared/deps.ts createApiDeps, and the benchmarks and
 * tests that stand for it): the real SDK with its own retries, sending over {@link observingModelFetch}
 * (so a request can observe the HTTP status of its failed attempts). Building it does no I/O.
 */
export function createModelClient(options: ModelClientOptions): OpenAI {
  return new OpenAI({
    apiKey: options.apiKey,
    baseURL: options.baseURL,
    maxRetries: options.maxRetries ?? 2,
    fetch: options.wrapFetch ? options.wrapFetch(observingModelFetch) : observingModelFetch,
  });
}
