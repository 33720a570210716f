/**
 * Continuing a conversation (docs/conversations.md): given the caller's security context and a `previousRunId`,
 * load that run's transcript, check who may continue it and whether it can be, and cut it to the
 * history cap. Callable from any run starter (the synchronous `POST /v1/runs`, async/durable runs);
 * nothing here writes.
 */
import { HistoryMessagesSchema } from "../agent/chat-messages.js";
import { DEFAULT_SYSTEM_PROMPT } from "../agent/loop.js";
import { estimateTokens, type HistoryMessage, trimHistory } from "../agent/transcript.js";
import type { Clock } from "../clock.js";
import { DomainError } from "../domain-errors.js";
import type { SecurityContext } from "../identity.js";
import type { HistorySummary, RunShapes, RunStore } from "../store/runs.js";
import { RUN_ABANDONED_STATUS } from "./abandoned.js";

/**
 * The history a continuing run starts from.
 * - `previousRunId`: the run it continues
 * - `messages`: the previous run's transcript (its own history, prompt, assistant messages, tool calls
 *   and tool results), cut to the cap; sent between today's system prompt and the new prompt
 * - `summary`: sizes for the run record and response, see {@link HistorySummary}
 */
export interface ConversationHistory {
  previousRunId: string;
  /** The conversation's id: the id of its first run (`gen_ai.conversation.id` on the run's spans). */
  conversationId: string;
  messages: HistoryMessage[];
  summary: HistorySummary;
}

/**
 * Loads the conversation a new run continues.
 *
 * Checks, in this order (each failure a {@link DomainError}, nothing written):
 * 1. the run exists in the caller's tenant and was started by the caller (`sub`): otherwise 404
 *    NOT_FOUND, the same answer for another tenant's run, another user's run and an unknown id;
 * 2. its records have not expired (RUN_TTL_SECONDS; an item past its `ttl` that DynamoDB has not yet
 *    deleted counts as expired): otherwise 404 NOT_FOUND whose detail says it expired and when;
 * 3. it failed on the server (`failed`), or it finished without a stored transcript, or it is
 *    `abandoned` (a synchronous run killed mid-run: shared/runs/abandoned.ts, the store's reads apply
 *    the rule): 409 PREVIOUS_RUN_NOT_CONTINUABLE;
 * 4. it has not finished (`running`, or any later non-terminal status such as awaiting approval): 409
 *    PREVIOUS_RUN_IN_PROGRESS with `Retry-After` (seconds to its deadline, at least 1).
 *
 * The transcript is then cut ({@link trimHistory}: oldest whole turns first, no tool message without
 * its call) to the smaller of `historyMaxTokens` (HISTORY_MAX_TOKENS) and what `maxTotalTokens` leaves
 * after the system prompt and the new prompt (estimated), so the history never takes the run's whole
 * token budget.
 * @param input.systemPrompt the run's system prompt (default the loop's) for the budget estimate
 * The records' expiry is judged on the run store's own clock (the one it dates and expires them by).
 * @param input.runClock the clock runs' deadlines go by (`deps.clock`), for the Retry-After of a run in
 *   progress; default the wall clock
 * @throws DomainError as above; the store's error when it cannot be read
 */
export async function loadConversation<S extends RunShapes>(
  runs: RunStore<S>,
  security: SecurityContext,
  input: {
    previousRunId: string;
    prompt: string;
    historyMaxTokens: number;
    maxTotalTokens: number;
    runTtlSeconds: number;
    systemPrompt?: string | undefined;
    runClock?: Clock | undefined;
  },
  signal?: AbortSignal,
): Promise<ConversationHistory> {
  const { previousRunId } = input;
  const read = await runs.readContinuation(security.tenantId, previousRunId, undefined, signal);
  if (read.kind === "missing" || read.run.userId !== security.userId) {
    throw new DomainError("NOT_FOUND", `There is no run ${previousRunId} to continue.`);
  }
  if (read.kind === "expired") {
    throw new DomainError(
      "NOT_FOUND",
      `Run ${previousRunId} has expired (its records were kept until ${read.run.expiresAt}, RUN_TTL_SECONDS = ${input.runTtlSeconds}) and cannot be continued; start a new conversation.`,
      { facts: { expired: true, expiresAt: read.run.expiresAt } },
    );
  }
  const { run } = read;
  if (read.transcript === undefined) {
    // Time spent waiting for approvals moved the run's deadline later (shared/durable/runner.ts).
    const deadline = Date.parse(run.startedAt) + run.limits.timeoutMs + read.approvalWaitedMs;
    const stale = run.status === RUN_ABANDONED_STATUS;
    if (run.status === "failed" || run.finishedAt !== null || stale) {
      throw new DomainError(
        "PREVIOUS_RUN_NOT_CONTINUABLE",
        run.status === "failed"
          ? `Run ${previousRunId} failed on the server and left no transcript to continue; start a new conversation.`
          : stale
            ? `Run ${previousRunId} stopped without recording an outcome (it is past its deadline) and cannot be continued; start a new conversation.`
            : `Run ${previousRunId} stored no transcript and cannot be continued; start a new conversation.`,
        { facts: { previousRunStatus: run.status } },
      );
    }
    const retryAfter = Math.max(1, Math.ceil((deadline - (input.runClock?.now() ?? Date.now())) / 1000));
    throw new DomainError(
      "PREVIOUS_RUN_IN_PROGRESS",
      `Run ${previousRunId} has not finished (status ${run.status}); continue it once it has.`,
      { facts: { previousRunStatus: run.status }, retryAfterSeconds: retryAfter },
    );
  }
  const parsed = HistoryMessagesSchema.safeParse(read.transcript);
  if (!parsed.success) {
    throw new DomainError(
      "PREVIOUS_RUN_NOT_CONTINUABLE",
      `The stored transcript of run ${previousRunId} is unreadable; start a new conversation.`,
      { facts: { previousRunStatus: run.status } },
    );
  }
  return fitted(
    { previousRunId, conversationId: read.conversationId },
    parsed.data as HistoryMessage[],
    read.transcriptDroppedMessages,
    input,
  );
}

/**
 * The previous run's transcript cut to the smaller of `historyMaxTokens` and what `maxTotalTokens` leaves
 * after the system prompt and the new prompt (estimated); `storedDropped`: messages its run already left
 * out when storing it.
 */
function fitted(
  ids: { previousRunId: string; conversationId: string },
  transcript: HistoryMessage[],
  storedDropped: number,
  input: {
    prompt: string;
    historyMaxTokens: number;
    maxTotalTokens: number;
    systemPrompt?: string | undefined;
  },
): ConversationHistory {
  const ownTokens = estimateTokens([
    { role: "system", content: input.systemPrompt ?? DEFAULT_SYSTEM_PROMPT },
    { role: "user", content: input.prompt },
  ]);
  const trimmed = trimHistory(transcript, Math.min(input.historyMaxTokens, input.maxTotalTokens - ownTokens));
  return {
    ...ids,
    messages: trimmed.messages,
    summary: {
      messages: trimmed.messages.length,
      estimatedTokens: trimmed.estimatedTokens,
      droppedMessages: trimmed.droppedMessages + storedDropped,
    },
  };
}
