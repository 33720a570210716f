/**
 * Recognises a provider's refusal of a request that does not fit the model's context window, so a run
 * ends `context_length_exceeded` (naming the history it sent) instead of a generic `model_error`.
 * Provider-neutral: it reads the status, code, type, body and message of an error object (the openai
 * SDK's `APIError` has them) by matching strings and codes, and imports no SDK. The model adapter
 * (shared/model/openai-chat.ts) calls it where it builds its `ModelFailure`; the run's stop
 * (shared/agent/stops.ts) adds the sizes of the refused request.
 */
import type { z } from "zod";
import type { ContextLengthRefusal } from "./model.js";
import type { ContextLengthSchema } from "./outcome-schema.js";

/**
 * What a run that ended `context_length_exceeded` reports (RunOutcome `details.contextLength`).
 * - `providerStatus`: the HTTP status of the refusal (400 for OpenAI and vLLM; llama.cpp before its
 *   error types answered 500); null without one
 * - `message`: the provider's message (it never holds the prompt: providers state sizes only)
 * - `historyMessages`, `historyEstimatedTokens`: the earlier conversation the run carried
 *   (shared/agent/transcript.ts estimate; 0 for a run with no previousRunId)
 * - `requestMessages`, `requestEstimatedTokens`: the whole refused request (system prompt, history,
 *   prompt, this run's assistant and tool messages)
 * - `contextTokens`, `requestTokens`: the window and the request's size as the provider stated them,
 *   when it did (OpenAI/vLLM "maximum context length is N tokens", llama.cpp `n_ctx`/`n_prompt_tokens`)
 */
export type ContextLengthDetails = z.infer<typeof ContextLengthSchema>;

/**
 * How OpenAI-compatible servers word a context-window refusal (matched case-insensitively against the
 * error message), each from the server's own error text:
 * - OpenAI / Azure OpenAI: HTTP 400, `code: "context_length_exceeded"`, "This model's maximum context
 *   length is N tokens. However, your messages resulted in M tokens."
 * - vLLM: HTTP 400, "This model's maximum context length is N tokens. However, you requested M tokens
 *   (…)" (newer: "… However, your request has M input tokens …")
 * - llama.cpp server: `type: "exceed_context_size_error"` with `n_prompt_tokens` and `n_ctx`, "the
 *   request exceeds the available context size, try increasing it" (HTTP 400; 500 in older builds);
 *   llama-cpp-python: "Requested tokens (M) exceed context window of N"
 * - Ollama (when it refuses instead of silently truncating; see docs/conversations.md): "request (M
 *   tokens) exceeds the available context size (N tokens), try increasing it"
 * - LiteLLM proxy: `litellm.ContextWindowExceededError: …` wrapping the upstream message
 * - Anthropic and Bedrock behind a proxy: "prompt is too long: M tokens > N maximum", "Input is too long
 *   for requested model"
 */
export const CONTEXT_LENGTH_MESSAGES: readonly RegExp[] = [
  /context_length_exceeded/i,
  /maximum context length/i,
  /exceeds? the available context size/i,
  /exceeds? (?:the )?context window/i,
  /ContextWindowExceeded/i,
  /prompt is too long/i,
  /input is too long/i,
];

/** Error codes and types that say "context window exceeded" whatever the message. */
const CONTEXT_LENGTH_CODES = new Set(["context_length_exceeded", "exceed_context_size_error"]);

/** The fields of a provider error read here (the openai SDK `APIError`: status, code, type, body, message). */
interface ProviderError {
  status?: unknown;
  code?: unknown;
  type?: unknown;
  error?: unknown;
  message?: unknown;
}

/**
 * Whether a failed model call's error is a context-window refusal: an HTTP error (status ≥ 400) whose
 * `code` or `type` (on the error or its body) is `context_length_exceeded` / `exceed_context_size_error`,
 * or a 4xx whose message matches {@link CONTEXT_LENGTH_MESSAGES}. Anything else (including a network
 * failure, which has no status) is not.
 * @returns the window and request sizes the provider stated (see {@link ContextLengthRefusal}), or
 *   undefined when `error` is not such a refusal
 */
export function contextLengthRefusal(error: unknown): ContextLengthRefusal | undefined {
  if (typeof error !== "object" || error === null) return undefined;
  const e = error as ProviderError;
  const status = typeof e.status === "number" ? e.status : null;
  if (status === null || status < 400) return undefined;
  const body = (typeof e.error === "object" && e.error !== null ? e.error : {}) as Record<string, unknown>;
  const message = typeof e.message === "string" ? e.message : String(body.message ?? "");
  const codes = [e.code, e.type, body.code, body.type].filter((v): v is string => typeof v === "string");
  const byCode = codes.some((code) => CONTEXT_LENGTH_CODES.has(code));
  const byMessage = status < 500 && CONTEXT_LENGTH_MESSAGES.some((pattern) => pattern.test(message));
  if (!byCode && !byMessage) return undefined;

  const stated = (value: unknown, pattern: RegExp): number | null => {
    if (typeof value === "number" && Number.isInteger(value)) return value;
    const group = pattern
      .exec(message)
      ?.slice(1)
      .find((value) => value !== undefined);
    return group === undefined ? null : Number(group);
  };
  return {
    contextTokens: stated(body.n_ctx, /maximum context length is (\d+)|context size \((\d+) tokens\)/i),
    requestTokens: stated(
      body.n_prompt_tokens,
      /resulted in (\d+) tokens|you requested (\d+) tokens|request \((\d+) tokens\)|has (\d+) input tokens/i,
    ),
  };
}
