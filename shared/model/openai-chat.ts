import type OpenAI from "openai";
import { APIError, APIUserAbortError } from "openai/core/error";
import type {
  ChatCompletion,
  ChatCompletionFunctionTool,
  ChatCompletionMessage,
} from "openai/resources/chat/completions";
import { contextLengthRefusal } from "../agent/context-length.js";
import type {
  Model,
  ModelFailure,
  ModelReply,
  ModelRequest,
  ModelTelemetry,
  ModelTool,
  ModelToolCall,
  ModelUsage,
} from "../agent/model.js";
import { CONFIG_DEFAULTS } from "../config.js";
import { FAILED_STATUS_HOOK, type FailedStatusFetchOptions } from "../model-client.js";
import { zeroUsage } from "../token-usage.js";
import { readEndpointFailure } from "./endpoint-failure.js";

/** The `fetchOptions` of a chat-completions request (the SDK's RequestInit extension). */
type RequestFetchOptions = NonNullable<
  NonNullable<Parameters<OpenAI["chat"]["completions"]["create"]>[1]>["fetchOptions"]
>;

/** The OpenAI chat-completions function tool (`strict: true`) of a {@link ModelTool}. */
export function toOpenAITool(tool: ModelTool): ChatCompletionFunctionTool {
  return {
    type: "function",
    function: { name: tool.name, description: tool.description, parameters: tool.parameters, strict: true },
  };
}

/**
 * A provider's own reading of a failed call (shared/model/bedrock.ts classifyBedrockFailure): a stable
 * `code` and a fixed `message` the client may see (the {@link ModelFailure}'s `known`), and `detail`,
 * what the provider said, which becomes the failure's `message` (for the logs only).
 */
export type FailureTranslator = (
  error: unknown,
) => { code: string; message: string; detail: string } | undefined;

/** OpenAI function tools per offered tool list, converted once (the loop offers one cached list per registry). */
const openAITools = new WeakMap<readonly ModelTool[], ChatCompletionFunctionTool[]>();

/**
 * The {@link Model} port over OpenAI chat completions (non-streaming), for OpenAI and OpenAI-compatible
 * servers (vLLM, llama.cpp, Ollama, LiteLLM, OpenRouter; their quirks are listed in docs/providers.md).
 * Build `client` with shared/model-client.ts `createModelClient`: its fetch reports the HTTP status of
 * failed attempts through the request's {@link FAILED_STATUS_HOOK}, so a provider still failing when the
 * deadline cuts the SDK's retries short ends `model_error` with that status (another client gives no
 * status then: the call is a deadline failure).
 * Each call carries the deadline's signal and the time left as `timeout`, and is raced against the
 * signal, so neither a slow or stalled response nor the SDK's retry backoff (429/5xx, the client's
 * `maxRetries`) outlives the deadline.
 */
export class OpenAIChatModel implements Model {
  /**
   * @param client the openai client (`createModelClient`)
   * @param model the model name sent with each request (config OPENAI_MODEL, or BEDROCK_MODEL_ID)
   * @param options `maxTokens`: the completion limit in tokens, sent as `max_tokens` with every request
   *   (config MODEL_MAX_TOKENS; its default here is the config's, so every caller sends one);
   *   `translateFailure`: a provider's reading of failures that are neither the deadline nor a
   *   context-window refusal (Bedrock's), kept as the failure's `known`; `providerName`: the
   *   `gen_ai.provider.name` when the configuration knows it (MODEL_PROVIDER=bedrock: "aws.bedrock",
   *   whatever the endpoint's host), else read from the endpoint ({@link openAITelemetry})
   */
  constructor(
    private readonly client: OpenAI,
    private readonly model: string,
    private readonly options: {
      maxTokens: number;
      translateFailure?: FailureTranslator;
      providerName?: string;
    } = {
      maxTokens: CONFIG_DEFAULTS.model.maxTokens,
    },
  ) {
    const telemetry = openAITelemetry(client.baseURL, model);
    this.telemetry = options.providerName ? { ...telemetry, providerName: options.providerName } : telemetry;
  }

  /** How this model's `chat` spans name it: the provider (configured, else from the endpoint), model, server. */
  readonly telemetry: ModelTelemetry;

  /** The completion cap every request's `max_tokens` stays within (MODEL_MAX_TOKENS). */
  get maxTokens(): number {
    return this.options.maxTokens;
  }

  /** One chat-completions call; never throws (see {@link Model.call}). */
  async call(request: ModelRequest): Promise<ModelReply | ModelFailure> {
    const hook = new FailedStatusHook();
    let completion: ChatCompletion;
    const linked = callSignal(request.signal);
    try {
      completion = await linked.race(
        this.client.chat.completions.create(
          {
            model: this.model,
            messages: request.messages,
            // `max_tokens`, not `max_completion_tokens`: the one every OpenAI-compatible server reads
            // (llama.cpp, Ollama, vLLM, LiteLLM, Bedrock's endpoint); OpenAI reads it for chat models.
            max_tokens: Math.min(request.maxTokens ?? this.options.maxTokens, this.options.maxTokens),
            ...(request.tools.length > 0
              ? {
                  tools: this.tools(request.tools),
                  tool_choice: request.toolChoice,
                  parallel_tool_calls: true,
                }
              : {}),
          },
          {
            signal: linked.signal,
            timeout: Math.max(1, request.deadlineAt - Date.now()),
            fetchOptions: hook as RequestFetchOptions,
          },
        ),
      );
    } catch (error) {
      return this.failure(error, request, hook.status);
    } finally {
      linked.release();
    }
    const usage = usageOf(completion.usage);
    const choice = completion.choices?.[0];
    if (!choice) return { kind: "failure", cause: "no_choices", status: null, message: "no choices", usage };
    const message = (choice.message ?? {}) as Partial<ChatCompletionMessage>;
    return {
      kind: "reply",
      content: textOf(message.content),
      refusal: message.refusal || null,
      toolCalls: functionCalls(message),
      finishReason: choice.finish_reason ?? null,
      usage,
    };
  }

  /**
   * The {@link ModelFailure} of a call that threw: the deadline's (with the status of an attempt that
   * failed before it, `failedStatus`), a context-window refusal, or the provider's, read by
   * `translateFailure` when it recognises it, else by shared/model/endpoint-failure.ts (connection
   * refused, DNS, timeout, TLS, 401/403/404, naming the endpoint); the reading's detail becomes the logged
   * `message`.
   */
  private failure(error: unknown, request: ModelRequest, failedStatus: number | null): ModelFailure {
    const atDeadline =
      request.signal.aborted || Date.now() >= request.deadlineAt || error instanceof APIUserAbortError;
    // A refusal of the request's size (OpenAI code context_length_exceeded and other servers' forms).
    const contextLength = atDeadline ? undefined : contextLengthRefusal(error);
    // The provider's own reading first (Bedrock's), then what any endpoint can say: where and why it failed.
    const known =
      atDeadline || contextLength
        ? undefined
        : (this.options.translateFailure?.(error) ?? readEndpointFailure(error, this.client.baseURL));
    return {
      kind: "failure",
      cause: atDeadline ? "deadline" : contextLength ? "context_length" : "provider",
      status: atDeadline ? failedStatus : error instanceof APIError ? (error.status ?? null) : null,
      message: known?.detail ?? (error instanceof Error ? error.message : String(error)),
      usage: zeroUsage(),
      ...(contextLength ? { contextLength } : {}),
      ...(known ? { known: { code: known.code, message: known.message } } : {}),
    };
  }

  private tools(tools: readonly ModelTool[]): ChatCompletionFunctionTool[] {
    let converted = openAITools.get(tools);
    if (!converted) {
      converted = tools.map(toOpenAITool);
      openAITools.set(tools, converted);
    }
    return converted;
  }
}

/**
 * A call's `fetchOptions`: the fetch reports each failed attempt's HTTP status to its
 * {@link FAILED_STATUS_HOOK}, read back as `status`. A class: an object literal with a computed key and a
 * closure costs Node 20 ~0.5 µs a call, this a few dozen nanoseconds. The hook is an own property, so
 * the SDK's copies of `fetchOptions` keep it.
 */
class FailedStatusHook implements FailedStatusFetchOptions {
  // Private: the SDK copies `fetchOptions` into the fetch's init; only the hook belongs there.
  #status: number | null = null;
  readonly [FAILED_STATUS_HOOK] = (status: number): void => {
    this.#status = status;
  };

  get status(): number | null {
    return this.#status;
  }
}

/**
 * Token counts of a response; a server that sends no `usage` (or leaves out a field) counts as 0 for what
 * is missing, and a missing total is prompt + completion.
 */
function usageOf(usage: ChatCompletion["usage"] | undefined): ModelUsage {
  const promptTokens = usage?.prompt_tokens ?? 0;
  const completionTokens = usage?.completion_tokens ?? 0;
  return {
    promptTokens,
    completionTokens,
    totalTokens: usage?.total_tokens ?? promptTokens + completionTokens,
  };
}

/** The message text: a string as is; an array of content parts (some servers) as its text parts joined. */
function textOf(content: unknown): string | null {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return null;
  const texts = content.flatMap((part) =>
    typeof part?.text === "string" && (part.type === undefined || part.type === "text") ? [part.text] : [],
  );
  return texts.length > 0 ? texts.join("") : null;
}

/**
 * The function tool calls of an assistant message, in order. A call without `type` counts as a function
 * call when it has a `function` member (some servers leave `type` out); a missing id becomes "" (the loop
 * assigns one); `arguments` is passed on as sent (a missing one as null) for the loop to resolve.
 */
function functionCalls(message: Partial<ChatCompletionMessage>): ModelToolCall[] {
  const calls: ModelToolCall[] = [];
  if (!Array.isArray(message.tool_calls)) return calls;
  // A loop, not flatMap: flatMap's per-call arrays cost more than the rest of the reply's reading.
  for (const entry of message.tool_calls as unknown[]) {
    const call = entry as {
      id?: unknown;
      type?: unknown;
      function?: { name?: unknown; arguments?: unknown };
    };
    if (!call?.function || (call.type !== undefined && call.type !== "function")) continue;
    calls.push({
      id: typeof call.id === "string" ? call.id : "",
      name: typeof call.function.name === "string" ? call.function.name : "",
      arguments: call.function.arguments ?? null,
    });
  }
  return calls;
}

/**
 * The `gen_ai.provider.name` of an OpenAI-compatible endpoint (GenAI conventions' well-known values):
 * "aws.bedrock" for a Bedrock runtime host, "openai" otherwise (the conventions name the API flavour
 * when the server behind it is not known: a local or proxy server speaks OpenAI's). Server address and
 * port from the URL; nothing else of it (a URL could carry credentials).
 */
export function openAITelemetry(baseURL: string, model: string): ModelTelemetry {
  let url: URL | undefined;
  try {
    url = new URL(baseURL);
  } catch {
    url = undefined;
  }
  const host = url?.hostname ?? "";
  const port = url ? Number(url.port || (url.protocol === "https:" ? 443 : 80)) : undefined;
  return {
    providerName: /(^|\.)bedrock(-runtime|-mantle)?[.-]/.test(host) ? "aws.bedrock" : "openai",
    requestModel: model,
    ...(host ? { serverAddress: host } : {}),
    ...(port ? { serverPort: port } : {}),
  };
}

/**
 * A signal of one call that aborts with the run's `signal`: the openai SDK adds an abort listener to the
 * signal it is given and never removes it, so given the run's own it would keep one per model call for
 * the whole run (MaxListenersExceededWarning from the 11th cycle). Ours is removed by `release()`.
 * `race(promise)` settles with `promise`, or rejects with the run signal's reason as soon as it aborts
 * (as shared/agent/deadline.ts `raceAbort`, so the SDK's retry backoff never outlives the deadline),
 * through the same one listener on the run's signal.
 */
export function callSignal(signal: AbortSignal): {
  signal: AbortSignal;
  race: <T>(promise: Promise<T>) => Promise<T>;
  release: () => void;
} {
  return new LinkedCallSignal(signal);
}

/**
 * {@link callSignal}'s object: itself the run signal's listener (`handleEvent`), with methods on its
 * prototype, so a model call creates no closures for them (code built with esbuild's `keepNames`, as tsx
 * and the durable runner's bundle are, pays a `name` definition for every closure made per call).
 */
class LinkedCallSignal {
  private readonly call = new AbortController();
  private rejectRace: ((reason: unknown) => void) | undefined;

  constructor(private readonly run: AbortSignal) {
    if (run.aborted) this.call.abort(run.reason);
    else run.addEventListener("abort", this, { once: true });
  }

  get signal(): AbortSignal {
    return this.call.signal;
  }

  /** The run signal aborted: abort the call and reject its race. */
  handleEvent(): void {
    this.call.abort(this.run.reason);
    this.rejectRace?.(this.run.reason);
  }

  race<T>(promise: Promise<T>): Promise<T> {
    if (this.run.aborted) {
      promise.catch(() => undefined);
      return Promise.reject(this.run.reason);
    }
    return new Promise((resolve, reject) => {
      this.rejectRace = reject;
      promise.then(resolve, reject);
    });
  }

  release(): void {
    this.run.removeEventListener("abort", this);
  }
}
