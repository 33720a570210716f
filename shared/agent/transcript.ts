/**
 * Conversation history: the transcript one run hands to the next, its token estimate, and
 * how it is cut to a cap. Pure functions, no I/O; the store keeps transcripts (shared/store/runs.ts),
 * shared/runs/conversation.ts loads and checks them for a new run.
 */
import type { ChatMessage, HistoryMessage } from "./chat-messages.js";

export type { HistoryMessage } from "./chat-messages.js";

/**
 * Bytes of UTF-8 text per token in {@link estimateTokens}. OpenAI documents ~4 characters per token
 * for English ("What are tokens and how to count them", OpenAI help center); JSON tool results, ids and
 * non-English text tokenize denser, so 3 bytes per token over-estimates typical text and keeps the
 * estimate on the safe side of a provider's real count. No tokenizer is bundled: one tokenizer's
 * vocabulary matches one model family only, while boundloop talks to any OpenAI-compatible server.
 */
export const ESTIMATE_BYTES_PER_TOKEN = 3;

/**
 * Tokens added per message for its role and framing. OpenAI's cookbook ("How to count tokens with
 * tiktoken") counts 3 per message for current chat models; 4 leaves room for tool-call framing.
 */
export const MESSAGE_OVERHEAD_TOKENS = 4;

/**
 * Estimated tokens of chat messages: per message {@link MESSAGE_OVERHEAD_TOKENS} plus its text (content,
 * tool call ids, names and arguments, tool_call_id) at {@link ESTIMATE_BYTES_PER_TOKEN} UTF-8 bytes a
 * token, rounded up. An estimate, deliberately high for English; never a provider's exact count.
 */
export function estimateTokens(messages: ReadonlyArray<ChatMessage>): number {
  let total = 0;
  for (const message of messages) total += messageTokens(message);
  return total;
}

function messageTokens(message: ChatMessage): number {
  let bytes = Buffer.byteLength(message.content ?? "", "utf8");
  if (message.role === "assistant") {
    for (const call of message.tool_calls ?? []) {
      bytes += Buffer.byteLength(`${call.id}${call.function.name}${call.function.arguments}`, "utf8");
    }
  }
  if (message.role === "tool") bytes += Buffer.byteLength(message.tool_call_id, "utf8");
  return MESSAGE_OVERHEAD_TOKENS + Math.ceil(bytes / ESTIMATE_BYTES_PER_TOKEN);
}

/**
 * The transcript a finished run hands to the next one: the run's messages without the system prompt, in
 * order (earlier history, the prompt, assistant messages with their tool calls, tool results, the loop's
 * corrective nudges), copied, plus the final `answer` as an assistant message when there is one (the
 * loop returns it as `answer`, not in its messages).
 */
export function transcriptOf(messages: ReadonlyArray<ChatMessage>, answer: string | null): HistoryMessage[] {
  const transcript = messages.flatMap((message): HistoryMessage[] => {
    if (message.role === "system") return [];
    if (message.role !== "assistant" || !message.tool_calls) return [{ ...message }];
    const tool_calls = message.tool_calls.map((call) => ({ ...call, function: { ...call.function } }));
    return [{ ...message, tool_calls }];
  });
  if (answer !== null) transcript.push({ role: "assistant", content: answer });
  return transcript;
}

/**
 * An indivisible unit of a transcript: a user prompt alone; an assistant message without tool calls;
 * or an assistant message with tool calls together with the one tool message answering each call.
 * `startsTurn`: the unit is a user prompt (a conversation turn begins there).
 */
interface Unit {
  messages: HistoryMessage[];
  tokens: number;
  startsTurn: boolean;
}

/**
 * Splits a transcript into {@link Unit}s, dropping anything that would be invalid for chat completions:
 * a tool message that answers no call of the assistant message before it, and an assistant message whose
 * tool calls are not all answered (with its tool messages). A transcript written by the loop has
 * neither; this keeps a damaged one from reaching a provider as a 400.
 */
function unitsOf(messages: ReadonlyArray<HistoryMessage>): Unit[] {
  const units: Unit[] = [];
  let index = 0;
  while (index < messages.length) {
    const message = messages[index] as HistoryMessage;
    index += 1;
    if (message.role === "tool") continue; // an orphan: its call is not right before it
    if (message.role === "user" || !message.tool_calls || message.tool_calls.length === 0) {
      units.push({
        messages: [message],
        tokens: estimateTokens([message]),
        startsTurn: message.role === "user",
      });
      continue;
    }
    const open = new Set(message.tool_calls.map((call) => call.id));
    const group: HistoryMessage[] = [message];
    const duplicateIds = open.size !== message.tool_calls.length;
    while (index < messages.length) {
      const next = messages[index] as HistoryMessage;
      if (next.role !== "tool") break;
      index += 1;
      if (open.delete(next.tool_call_id)) group.push(next);
    }
    if (open.size === 0 && !duplicateIds) {
      units.push({ messages: group, tokens: estimateTokens(group), startsTurn: false });
    }
  }
  return units;
}

/**
 * A transcript cut to a token cap.
 * - `messages`: what is kept, in order; a suffix of the (valid part of the) transcript
 * - `estimatedTokens`: {@link estimateTokens} of `messages` (≤ the cap)
 * - `droppedMessages`: how many messages of the input were left out (cut, or invalid)
 */
export interface TrimmedHistory {
  messages: HistoryMessage[];
  estimatedTokens: number;
  droppedMessages: number;
}

/**
 * Cuts a transcript to at most `maxTokens` estimated tokens ({@link estimateTokens}) by dropping the
 * oldest whole units: a tool message is never kept without the assistant message that called it, nor an
 * assistant tool call without its tool message. Whole conversation turns (a user prompt and all that
 * followed it) go first: the kept part starts at a user prompt when any such cut fits. Only when the
 * newest turn alone is over the cap is that turn cut too, from its oldest unit (its prompt first), so
 * the most recent exchanges survive. Nothing fits: empty.
 * @param maxTokens the cap; 0 or less keeps nothing
 */
export function trimHistory(messages: ReadonlyArray<HistoryMessage>, maxTokens: number): TrimmedHistory {
  const units = unitsOf(messages);
  const suffixTokens = new Array<number>(units.length + 1).fill(0);
  for (let i = units.length - 1; i >= 0; i -= 1) {
    suffixTokens[i] = (suffixTokens[i + 1] as number) + (units[i] as Unit).tokens;
  }
  const fits = (i: number) => (suffixTokens[i] as number) <= maxTokens;
  // Everything fits: keep it all (even a transcript that starts mid-turn, after an earlier cut).
  let start = fits(0) ? 0 : units.findIndex((unit, i) => unit.startsTurn && fits(i));
  if (start < 0) start = units.findIndex((_, i) => fits(i));
  if (start < 0) start = units.length;
  const kept = units.slice(start).flatMap((unit) => unit.messages);
  return {
    messages: kept,
    estimatedTokens: suffixTokens[start] as number,
    droppedMessages: messages.length - kept.length,
  };
}

/**
 * A transcript cut to about half its estimated tokens by {@link trimHistory} (oldest whole turns
 * first): the run store's `shortenTranscript` (shared/deps.ts), applied while a transcript is too large
 * to store even compressed (shared/store/runs.ts MAX_STORED_TRANSCRIPT_BYTES).
 */
export function halveHistory(messages: ReadonlyArray<HistoryMessage>): HistoryMessage[] {
  return trimHistory(messages, Math.floor(estimateTokens(messages) / 2)).messages;
}
