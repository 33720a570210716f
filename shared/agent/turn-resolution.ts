import type { AssistantMessage, ModelReply, ModelToolCall, UserMessage } from "./model.js";
import { type Stop, stops } from "./stops.js";
import { toolArgumentsText } from "./tool-arguments.js";
import type { TurnCall } from "./tool-turn.js";

/**
 * What a model reply means for the run (see {@link resolveReply}):
 * - `stop`: the run ends here: completed with `answer` (non-empty text), or refusal, cut-off output, a
 *   second reply without usable output (`answer` null)
 * - `tool_calls`: run these calls (unique ids, arguments as strings); `message` is the assistant message
 *   to append to the transcript before their tool messages
 * - `retry`: the reply had no usable output; append `message` (a corrective nudge) and call the model again
 */
export type Resolution =
  | { kind: "stop"; stop: Stop; answer: string | null }
  | { kind: "tool_calls"; calls: TurnCall[]; message: AssistantMessage }
  | { kind: "retry"; message: UserMessage };

/** The user message sent after a reply with neither text nor tool calls (the one corrective retry). */
export const EMPTY_REPLY_NUDGE =
  "Your last reply contained neither text nor a tool call. Answer the request in text, or call one of the tools.";

/**
 * Resolves a model reply, in this order:
 * 1. a refusal → stop model_refused
 * 2. finish_reason "length" or "content_filter" → stop model_output_truncated (a cut-off response may
 *    hold cut-off tool calls: none of them is dispatched)
 * 3. function tool calls (whatever the finish_reason, "stop" included) → tool_calls
 * 4. non-blank text → stop completed with that answer
 * 5. no usable output (no tool calls, and text null, empty or whitespace; any finish_reason, documented
 *    or not) → retry with {@link EMPTY_REPLY_NUDGE} once per run if a cycle is left, else stop model_error
 *    with `details.modelError.finishReason` (the rule in docs/providers.md)
 * @param context.cycle the cycle number (for ids of calls that came without one)
 * @param context.retried whether the run already spent its one corrective retry
 * @param context.cycleLeft whether the cycle budget allows another model call
 */
export function resolveReply(
  reply: ModelReply,
  context: { cycle: number; retried: boolean; cycleLeft: boolean },
): Resolution {
  if (reply.refusal) return { kind: "stop", stop: stops.modelRefused(reply.refusal), answer: null };
  const { finishReason } = reply;
  if (finishReason === "length" || finishReason === "content_filter") {
    return { kind: "stop", stop: stops.outputTruncated(finishReason), answer: null };
  }
  const calls = turnCallsOf(reply, context.cycle);
  if (calls.length > 0) {
    const message: AssistantMessage = {
      role: "assistant",
      content: reply.content ?? null,
      tool_calls: calls.map((call) => ({
        id: call.id,
        type: "function",
        function: { name: call.name, arguments: call.arguments },
      })),
    };
    return { kind: "tool_calls", calls, message };
  }
  if (reply.content !== null && reply.content.trim() !== "") {
    return { kind: "stop", stop: stops.completed(), answer: reply.content };
  }
  if (!context.retried && context.cycleLeft) {
    return { kind: "retry", message: { role: "user", content: EMPTY_REPLY_NUDGE } };
  }
  return { kind: "stop", stop: stops.noUsableOutput(finishReason), answer: null };
}

/**
 * The calls of a reply as the turn runs them (arguments as strings, ids made unique per
 * {@link withUniqueIds}); the run's events name calls by these ids (shared/runs/events.ts).
 */
export function turnCallsOf(reply: ModelReply, cycle: number): TurnCall[] {
  return withUniqueIds(reply.toolCalls.map(toTurnCall), cycle);
}

/**
 * A provider's tool call as a turn call whose `arguments` is always a string (the transcript sent back to
 * the provider must carry a string): a string is kept as is, blank text as `"{}"` (toolArgumentsText, so
 * servers that parse it back get JSON); a JSON object is serialized once (some
 * servers send the object itself) and then parsed and validated like any other; any other value (number,
 * array, boolean, null) keeps its JSON text and is marked `malformedArguments`, which the dispatcher
 * answers with validation_error MALFORMED_ARGUMENTS.
 */
function toTurnCall(call: ModelToolCall): TurnCall {
  const value = call.arguments;
  if (typeof value === "string") return { id: call.id, name: call.name, arguments: toolArgumentsText(value) };
  if (typeof value === "object" && value !== null && !Array.isArray(value)) {
    return { id: call.id, name: call.name, arguments: JSON.stringify(value) };
  }
  const type = value === null || value === undefined ? "null" : Array.isArray(value) ? "array" : typeof value;
  return {
    id: call.id,
    name: call.name,
    arguments: JSON.stringify(value) ?? "null",
    malformedArguments: type,
  };
}

/**
 * Gives every call of a turn a unique id, deterministically: the first holder of an id keeps it; a
 * repeated or empty id becomes `<id>~<n>` (or `call_<cycle>_<index>`), skipping ids already in use. The
 * assistant message and the tool messages both use the new ids, so the transcript stays valid.
 */
function withUniqueIds(calls: TurnCall[], cycle: number): TurnCall[] {
  const modelIds = new Set(calls.map((call) => call.id));
  const used = new Set<string>();
  return calls.map((call, index) => {
    if (call.id && !used.has(call.id)) {
      used.add(call.id);
      return call;
    }
    const base = call.id || `call_${cycle}_${index}`;
    let id = base;
    for (let n = 1; used.has(id) || modelIds.has(id); n++) id = `${base}~${n}`;
    used.add(id);
    return { ...call, id, originalId: call.id };
  });
}
