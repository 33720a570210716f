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
 * What {@link createModelClient} needs.
 * - `apiKey`: the key, or a function giving it (read lazily before each request, e.g. from Secrets Manager)
 * - `baseURL`: any OpenAI-compatible endpoint ending in `/v1`; undefined: the SDK's default (OpenAI)
 * - `maxRetries`: the SDK's retries of 408/409/429/5xx and connection errors, with its backoff (default 2)
 */
export interface ModelClientOptions {
  apiKey: NonNullable<ClientOptions["apiKey"]>;
  baseURL?: string | undefined;
  maxRetries?: number;
}

/**
 * The one way the service builds its openai client (shared/deps.ts createDeps, and the benchmarks and
 * tests that stand for it): the real SDK with its own retries, sending over {@link modelFetch}. Building
 * it does no I/O.
 */
export function createModelClient(options: ModelClientOptions): OpenAI {
  return new OpenAI({
    apiKey: options.apiKey,
    baseURL: options.baseURL,
    maxRetries: options.maxRetries ?? 2,
    fetch: modelFetch,
  });
}
