/**
 * The earlier conversation of a durable run (`previousRunId` with `Prefer: respond-async`,
 * docs/durable-runs.md, Conversations). The API checks and trims it before anything is written
 * (shared/runs/conversation.ts `loadConversation`, as for synchronous runs); the runner loads it again inside
 * the named step `history:load`, whose checkpoint then fixes it for every replay. The start payload
 * carries only the previous run's id and the cap, never the transcript (payloads are limited to 256 KB).
 * No import of the durable SDK here: the API bundle uses this module too.
 */
import { estimateTokens, halveHistory } from "../agent/transcript.js";
import type { SecurityContext } from "../identity.js";
import { type ConversationHistory, loadConversation } from "../runs/conversation.js";
import type { AgentRunShapes } from "../runs/run-shapes.js";
import type { RunStore } from "../store/runs.js";

/**
 * The most UTF-8 bytes of JSON a durable run's history may take, as the result of its `history:load`
 * step. Lambda durable functions accept at most 256 KB per checkpoint (the SDK's
 * CHECKPOINT_SIZE_LIMIT_BYTES); 240 KiB leaves room for the operation's envelope. At the default
 * HISTORY_MAX_TOKENS (8 000 estimated tokens at 3 bytes each, ~24 KB) this never binds; a larger cap
 * is cut further here, by whole turns, so the step never fails on its size.
 */
export const MAX_HISTORY_CHECKPOINT_BYTES = 240 * 1024;

/**
 * `conversation` cut until its JSON is at most `maxBytes` UTF-8 bytes, dropping the oldest whole turns
 * (shared/agent/transcript.ts `halveHistory`: no tool message without its call); `summary` is updated
 * (`messages`, `estimatedTokens`, and the extra messages added to `droppedMessages`). Deterministic:
 * the API (for the run record) and the runner (for the run) get the same result from the same input.
 * Returns the input itself when it fits.
 */
export function fitHistoryToCheckpoint(
  conversation: ConversationHistory,
  maxBytes: number = MAX_HISTORY_CHECKPOINT_BYTES,
): ConversationHistory {
  const bytes = (c: ConversationHistory) => Buffer.byteLength(JSON.stringify(c), "utf8");
  let fitted = conversation;
  while (bytes(fitted) > maxBytes && fitted.messages.length > 0) {
    const halved = halveHistory(fitted.messages);
    const messages = halved.length < fitted.messages.length ? halved : [];
    fitted = {
      previousRunId: conversation.previousRunId,
      conversationId: conversation.conversationId,
      messages,
      summary: {
        messages: messages.length,
        estimatedTokens: estimateTokens(messages),
        droppedMessages:
          conversation.summary.droppedMessages + conversation.messages.length - messages.length,
      },
    };
  }
  return fitted;
}

/**
 * The runner's `history:load` work: the conversation a durable run continues, loaded and trimmed as the
 * API did when it accepted the run (same caller, prompt, cap and token budget, all from the start
 * payload), then fitted to the checkpoint limit ({@link fitHistoryToCheckpoint}).
 * @param input as for `loadConversation`; `historyMaxTokens` is the HISTORY_MAX_TOKENS the API applied
 *   (carried in the payload)
 * @throws DomainError when the previous run can no longer be continued (e.g. it expired between the
 *   202 and this step; the run then ends `failed`); the store's error when it cannot be read (retried)
 */
export async function loadDurableHistory(
  runs: RunStore<AgentRunShapes>,
  security: SecurityContext,
  input: Parameters<typeof loadConversation>[2],
): Promise<ConversationHistory> {
  return fitHistoryToCheckpoint(await loadConversation(runs, security, input));
}
