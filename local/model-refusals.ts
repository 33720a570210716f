/**
 * The context-window refusals of the OpenAI-compatible servers, as the local model server
 * (local/model-server.ts) answers a scripted reply's `contextLengthExceeded` with them.
 */

/** The servers whose context-window refusal {@link contextLengthRefusal} reproduces. */
export type ContextLengthFlavor = "openai" | "vllm" | "llamacpp" | "ollama" | "litellm";

/**
 * A context-window refusal as each server sends it (status and JSON body), for a request of
 * `requestTokens` against a window of `contextTokens`. Shapes from the servers' own error texts:
 * OpenAI (400, `code: "context_length_exceeded"`), vLLM (400, "This model's maximum context length is
 * …", `code: 400`), llama.cpp server (400, `type: "exceed_context_size_error"` with `n_prompt_tokens`
 * and `n_ctx`), Ollama (400, "request (M tokens) exceeds the available context size (N tokens)"),
 * LiteLLM proxy (400, "litellm.ContextWindowExceededError: …").
 */
export function contextLengthRefusal(
  flavor: ContextLengthFlavor,
  requestTokens: number,
  contextTokens = Math.max(1, Math.floor(requestTokens / 2)),
): { status: number; body: unknown } {
  const openai = `This model's maximum context length is ${contextTokens} tokens. However, your messages resulted in ${requestTokens} tokens. Please reduce the length of the messages.`;
  switch (flavor) {
    case "openai":
      return {
        status: 400,
        body: {
          error: {
            message: openai,
            type: "invalid_request_error",
            param: "messages",
            code: "context_length_exceeded",
          },
        },
      };
    case "vllm":
      return {
        status: 400,
        body: {
          error: {
            message: `This model's maximum context length is ${contextTokens} tokens. However, you requested ${requestTokens} tokens (${requestTokens} in the messages, 0 in the completion). Please reduce the length of the messages or completion.`,
            type: "BadRequestError",
            param: null,
            code: 400,
          },
        },
      };
    case "llamacpp":
      return {
        status: 400,
        body: {
          error: {
            code: 400,
            message: "the request exceeds the available context size, try increasing it",
            type: "exceed_context_size_error",
            n_prompt_tokens: requestTokens,
            n_ctx: contextTokens,
          },
        },
      };
    case "ollama":
      return {
        status: 400,
        body: {
          error: {
            message: `request (${requestTokens} tokens) exceeds the available context size (${contextTokens} tokens), try increasing it`,
            type: "invalid_request_error",
            param: null,
            code: null,
          },
        },
      };
    case "litellm":
      return {
        status: 400,
        body: {
          error: {
            message: `litellm.ContextWindowExceededError: litellm.BadRequestError: ${openai}`,
            type: null,
            param: null,
            code: "400",
          },
        },
      };
  }
}
