/**
 * The chat messages of a run's transcript, schema first: one zod schema per message kind, the types are
 * their `z.infer`. The loop keeps these messages, the provider adapter sends them as they are (a
 * structural subset of OpenAI chat-completions message params), the run store keeps the transcript, and
 * a continued conversation parses a stored transcript with {@link HistoryMessagesSchema} before it is used.
 */
import * as z from "zod";

/** A function tool call in an assistant message; `arguments` is JSON text (always a string here). */
export const ChatToolCallSchema = z
  .object({
    id: z.string(),
    type: z.literal("function"),
    function: z.object({ name: z.string(), arguments: z.string() }).strict(),
  })
  .strict();
/** See {@link ChatToolCallSchema}. */
export type ChatToolCall = z.infer<typeof ChatToolCallSchema>;

/** The run's instructions (first message). */
export const SystemMessageSchema = z.object({ role: z.literal("system"), content: z.string() }).strict();
/** See {@link SystemMessageSchema}. */
export type SystemMessage = z.infer<typeof SystemMessageSchema>;

/** A user turn: the prompt, or the loop's corrective nudge after a reply with no usable output. */
export const UserMessageSchema = z.object({ role: z.literal("user"), content: z.string() }).strict();
/** See {@link UserMessageSchema}. */
export type UserMessage = z.infer<typeof UserMessageSchema>;

/** An assistant turn the loop keeps: text and/or the function tool calls it ran. */
export const AssistantMessageSchema = z
  .object({
    role: z.literal("assistant"),
    content: z.string().nullable(),
    tool_calls: z.array(ChatToolCallSchema).optional(),
  })
  .strict();
/** See {@link AssistantMessageSchema}. */
export type AssistantMessage = z.infer<typeof AssistantMessageSchema>;

/** The answer to one tool call: `content` is the capped ToolResult JSON. */
export const ToolMessageSchema = z
  .object({ role: z.literal("tool"), tool_call_id: z.string(), content: z.string() })
  .strict();
/** See {@link ToolMessageSchema}. */
export type ToolMessage = z.infer<typeof ToolMessageSchema>;

/** One message of a run's transcript (valid as an OpenAI `ChatCompletionMessageParam`). */
export type ChatMessage = SystemMessage | UserMessage | AssistantMessage | ToolMessage;

/**
 * One message of a stored transcript: a user prompt, an assistant message (text and/or tool calls), or a
 * tool result answering one tool call. The system message is not kept: every run starts with today's
 * system prompt. Each is a valid chat-completions message as it is.
 */
export const HistoryMessageSchema = z.discriminatedUnion("role", [
  UserMessageSchema,
  AssistantMessageSchema,
  ToolMessageSchema,
]);
/** See {@link HistoryMessageSchema}. */
export type HistoryMessage = z.infer<typeof HistoryMessageSchema>;

/** A stored transcript: checked on every load of a conversation's history (shared/runs/conversation.ts). */
export const HistoryMessagesSchema = z.array(HistoryMessageSchema);
