/**
 * The model port: what the loop needs from a chat model, and nothing of any SDK. The loop speaks only
 * these types; an adapter (shared/model/openai-chat.ts for OpenAI chat completions) turns them into a
 * provider's wire format. Modelled on openai-agents-js `Model` (agents-core/src/model.ts).
 *
 * The message types are a structural subset of OpenAI chat-completions message params, so the transcript
 * the loop keeps is sent to the provider and stored as is.
 */

import type { TokenUsage } from "../token-usage.js";
import type { ChatMessage } from "./chat-messages.js";

export type {
  AssistantMessage,
  ChatMessage,
  ChatToolCall,
  SystemMessage,
  ToolMessage,
  UserMessage,
} from "./chat-messages.js";

/**
 * A function tool offered to the model: `parameters` is the tool's strict JSON Schema
 * (shared/agent/strict-schema.ts), sent with strict mode on.
 */
export interface ModelTool {
  name: string;
  description: string;
  parameters: Record<string, unknown>;
}

/** Token counts of one model call (from the provider's `usage`; zeros when it sent none). */
export type ModelUsage = TokenUsage;

/**
 * One model call.
 * - `messages`: the transcript so far; `tools`: offered tools (may be empty: then no tools are sent)
 * - `toolChoice`: "auto", or "none" for the tool-less summary call at the cycle limit
 * - `signal`: the run's deadline signal; `deadlineAt`: the deadline on the wall clock, epoch ms (the time
 *   the deadline leaves on the run's clock from now; the adapter gives the provider the time left as its
 *   timeout)
 * - `maxTokens`: the completion limit of this call (what the run's budgets leave, shared/agent/model-turn.ts);
 *   the adapter sends the smaller of it and its own cap as `max_tokens`. Absent: the adapter's cap.
 */
export interface ModelRequest {
  messages: ChatMessage[];
  tools: readonly ModelTool[];
  toolChoice: "auto" | "none";
  signal: AbortSignal;
  deadlineAt: number;
  maxTokens?: number;
}

/**
 * A tool call as the provider sent it, normalized only where no information is lost: `id` is "" when the
 * provider sent none; `arguments` is the provider's value as is (JSON text per the OpenAI spec, but some
 * servers send an object, a number, an array or null; a missing value is null). The loop's reply
 * resolution decides what each form means (shared/agent/turn-resolution.ts).
 */
export interface ModelToolCall {
  id: string;
  name: string;
  arguments: unknown;
}

/**
 * A normalized model reply (plain JSON). `finishReason` is the provider's finish_reason as sent (null
 * when absent; values outside the documented set are kept); `refusal` null when none; `toolCalls` holds
 * only function tool calls, in order.
 */
export interface ModelReply {
  kind: "reply";
  content: string | null;
  refusal: string | null;
  toolCalls: ModelToolCall[];
  finishReason: string | null;
  usage: ModelUsage;
}

/**
 * What a provider stated when it refused a request that does not fit the model's context window:
 * `contextTokens`, the window, and `requestTokens`, the request's size, in the provider's tokens; each
 * null when the provider did not say (see shared/agent/context-length.ts for the phrasings recognised).
 */
export interface ContextLengthRefusal {
  contextTokens: number | null;
  requestTokens: number | null;
}

/**
 * A failed model call (plain JSON), never thrown.
 * - `cause`: "deadline" (the run's deadline ended the call, retries included), "provider" (an HTTP error
 *   after the client's retries, a connection error, an unreadable body), "context_length" (the provider
 *   refused the request as larger than the model's context window; the client does not retry a 4xx), or
 *   "no_choices" (a 200 response without a choice)
 * - `status`: HTTP status of the last failed attempt (for "deadline": of an attempt that failed before the
 *   deadline cut the retries short); null when there was no HTTP error response
 * - `message`: the provider's or transport's message (for the logs only: it can carry account or
 *   request details)
 * - `contextLength`: for "context_length", the sizes the provider stated
 * - `known`: for "provider", the adapter's reading of a failure it recognises (Bedrock's,
 *   shared/model/bedrock.ts): a stable `code` (e.g. MODEL_ACCESS_DENIED) and a fixed sentence saying
 *   what to do (`message`, naming only configured values), which the client may see
 */
export interface ModelFailure {
  kind: "failure";
  cause: "deadline" | "provider" | "context_length" | "no_choices";
  status: number | null;
  message: string;
  usage: ModelUsage;
  contextLength?: ContextLengthRefusal;
  known?: { code: string; message: string };
}

/**
 * A chat model. `call` never throws for provider, transport or deadline failures: it returns a
 * {@link ModelFailure}. It settles promptly once `request.signal` aborts (with cause "deadline").
 */
export interface Model {
  call(request: ModelRequest): Promise<ModelReply | ModelFailure>;
  /** What the model's `chat` spans say about it (shared/agent/model-step.ts); absent: "unknown". */
  readonly telemetry?: ModelTelemetry;
  /** The adapter's completion cap (MODEL_MAX_TOKENS), the most any call's `max_tokens` is; absent: none. */
  readonly maxTokens?: number;
}

/**
 * How a model adapter names itself on spans (OpenTelemetry GenAI conventions): `providerName` one of
 * the conventions' `gen_ai.provider.name` values ("openai", "aws.bedrock", …), `requestModel` the
 * model name sent, `serverAddress`/`serverPort` the endpoint's host and port. Never a key or a token.
 */
export interface ModelTelemetry {
  providerName: string;
  requestModel: string;
  serverAddress?: string;
  serverPort?: number;
}
