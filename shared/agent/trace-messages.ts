import type { ChatMessage, ModelReply } from "./model.js";

/**
 * The opt-in content attributes `gen_ai.input.messages` and `gen_ai.output.messages` in the shape the
 * OpenTelemetry GenAI conventions define for them (semantic-conventions-genai,
 * model/gen-ai/gen-ai-input-messages.json and gen-ai-output-messages.json): each message is
 * `{ role, parts }`, an output message also has `finish_reason`. A trace viewer that reads the
 * conventions shows these as a conversation; the transcript's own chat-completions shape
 * (`{ role, content, tool_calls }`) it cannot read.
 */

/**
 * One part of a message (the conventions' TextPart, ToolCallRequestPart, ToolCallResponsePart, and a
 * GenericPart `refusal` for a provider's refusal text). Tool arguments and responses stay the JSON text
 * the model sent and read, so nothing is re-encoded or lost.
 */
export type MessagePart =
  | { type: "text"; content: string }
  | { type: "refusal"; content: string }
  | { type: "tool_call"; id: string; name: string; arguments: unknown }
  | { type: "tool_call_response"; id: string; response: string };

/** A message of `gen_ai.input.messages`. */
export interface InputMessage {
  role: ChatMessage["role"];
  parts: MessagePart[];
}

/**
 * A message of `gen_ai.output.messages`: `finish_reason` is the conventions' value for the provider's
 * (`tool_calls` and `function_call` are `tool_call`; `stop`, `length`, `content_filter` and any other
 * value as sent; `unknown` when the provider sent none, as the field is required).
 */
export interface OutputMessage {
  role: "assistant";
  parts: MessagePart[];
  finish_reason: string;
}

const text = (content: string | null): MessagePart[] => (content ? [{ type: "text", content }] : []);

/** The transcript sent to the model as `gen_ai.input.messages` (system, user, assistant, tool). */
export function inputMessages(messages: readonly ChatMessage[]): InputMessage[] {
  return messages.map((message): InputMessage => {
    switch (message.role) {
      case "tool":
        return {
          role: "tool",
          parts: [{ type: "tool_call_response", id: message.tool_call_id, response: message.content }],
        };
      case "assistant":
        return {
          role: "assistant",
          parts: [
            ...text(message.content),
            ...(message.tool_calls ?? []).map(
              (call): MessagePart => ({
                type: "tool_call",
                id: call.id,
                name: call.function.name,
                arguments: call.function.arguments,
              }),
            ),
          ],
        };
      default:
        return { role: message.role, parts: text(message.content) };
    }
  });
}

/** A model reply as `gen_ai.output.messages`: one assistant message (see {@link OutputMessage}). */
export function outputMessages(reply: ModelReply): OutputMessage[] {
  const parts: MessagePart[] = [
    ...text(reply.content),
    ...(reply.refusal ? [{ type: "refusal" as const, content: reply.refusal }] : []),
    ...reply.toolCalls.map(
      (call): MessagePart => ({ type: "tool_call", id: call.id, name: call.name, arguments: call.arguments }),
    ),
  ];
  return [{ role: "assistant", parts, finish_reason: finishReasonOf(reply.finishReason) }];
}

function finishReasonOf(reason: string | null): string {
  if (reason === null) return "unknown";
  return reason === "tool_calls" || reason === "function_call" ? "tool_call" : reason;
}
