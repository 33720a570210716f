import type { QuotaRefusal } from "./budget.js";
import type { ContextLengthDetails } from "./context-length.js";
import type { ChatMessage, ModelFailure } from "./model.js";
import { estimateTokens, type HistoryMessage } from "./transcript.js";
import type { RunOutcomeDetails, RunStatus } from "./types.js";

/** Why a run stops: its status, a human sentence (null for completed) and the structured details. */
export interface Stop {
  status: RunStatus;
  reason: string | null;
  details: RunOutcomeDetails;
}

/**
 * The catalogue of every way a run ends: one constructor per cause, so each status's sentence and details
 * are written once. Times are epoch ms; token counts are the provider's `usage` summed over the run.
 */
export const stops = {
  /** The model answered (non-empty text, no tool calls). */
  completed: (): Stop => ({ status: "completed", reason: null, details: {} }),

  /** The deadline (epoch ms `deadlineAt`) had passed when the next model call was due. */
  deadlineBeforeModelCall: (deadlineAt: number): Stop => ({
    status: "deadline_exceeded",
    reason: "The deadline passed before the next model call.",
    details: { deadline: { phase: "before_model_call", deadlineAt } },
  }),

  /** The deadline passed while a model call (or its retry backoff) was in flight. */
  deadlineDuringModelCall: (deadlineAt: number): Stop => ({
    status: "deadline_exceeded",
    reason: "The deadline passed during a model call.",
    details: { deadline: { phase: "model_call", deadlineAt } },
  }),

  /** The deadline passed while the turn's tool calls ran (read when they had settled). */
  deadlineDuringTools: (deadlineAt: number): Stop => ({
    status: "deadline_exceeded",
    reason: "The deadline passed during tool calls.",
    details: { deadline: { phase: "tool_calls", deadlineAt } },
  }),

  /**
   * A failed model call: a provider failure is model_error with its HTTP status; a context-window refusal
   * is context_length_exceeded (see {@link stops.contextLengthExceeded}; `request` is the refused
   * request: its messages and the history it carried); a call the deadline cut short is
   * deadline_exceeded, unless an attempt had already failed with an HTTP status (the provider was still
   * failing: model_error with that status).
   */
  modelFailed: (
    failure: ModelFailure,
    deadlineAt: number,
    request: { messages: readonly ChatMessage[]; history: readonly HistoryMessage[] },
  ): Stop => {
    const { status } = failure;
    if (failure.cause === "context_length") return stops.contextLengthExceeded(failure, request);
    if (failure.cause === "no_choices") {
      return {
        status: "model_error",
        reason: "The model returned no choices.",
        details: { modelError: { status, message: "no choices in the reply" } },
      };
    }
    // The provider's own message stays in the logs (the run's onInternalFailure hook): it can carry
    // account, request or prompt details; the client gets the status and a fixed sentence, the
    // adapter's own when it recognised the failure (with its stable code).
    if (failure.cause === "provider") {
      const { known } = failure;
      const fixed =
        known?.message ??
        (status ? `the provider answered HTTP ${status}` : "the provider could not be reached");
      return {
        status: "model_error",
        reason: `The model provider failed${status ? ` (HTTP ${status})` : ""}.${known ? ` ${known.message}` : ""}`,
        details: { modelError: { status, message: fixed, ...(known ? { code: known.code } : {}) } },
      };
    }
    if (status === null) return stops.deadlineDuringModelCall(deadlineAt);
    return {
      status: "model_error",
      reason: `The model provider was still failing (HTTP ${status}) at the deadline.`,
      details: { modelError: { status, message: `HTTP ${status}; retries were cut short by the deadline` } },
    };
  },

  /**
   * The provider refused the request as larger than the model's context window: context_length_exceeded
   * with {@link ContextLengthDetails} (the provider's status, message and stated sizes; the refused
   * request's and its history's message counts and estimated tokens, shared/agent/transcript.ts).
   */
  contextLengthExceeded: (
    failure: ModelFailure,
    request: { messages: readonly ChatMessage[]; history: readonly HistoryMessage[] },
  ): Stop => {
    const { messages, history } = request;
    const historyEstimatedTokens = estimateTokens(history);
    const requestEstimatedTokens = estimateTokens(messages);
    const contextLength: ContextLengthDetails = {
      providerStatus: failure.status,
      message: failure.message,
      historyMessages: history.length,
      historyEstimatedTokens,
      requestMessages: messages.length,
      requestEstimatedTokens,
      contextTokens: failure.contextLength?.contextTokens ?? null,
      requestTokens: failure.contextLength?.requestTokens ?? null,
    };
    return {
      status: "context_length_exceeded",
      reason:
        `The model's context window cannot hold this request (${messages.length} messages, about ` +
        `${requestEstimatedTokens} tokens estimated, of which ${history.length} history messages, about ` +
        `${historyEstimatedTokens} tokens).`,
      details: { contextLength },
    };
  },

  /**
   * The model sent, twice in a run, a reply with neither text nor tool calls (see docs/providers.md):
   * model_error without an HTTP status, carrying the last reply's finish_reason.
   */
  noUsableOutput: (finishReason: string | null): Stop => ({
    status: "model_error",
    reason:
      `The model replied with neither text nor tool calls (finish_reason ${finishReason ?? "absent"}), ` +
      "again after being asked to answer or call a tool.",
    details: {
      modelError: { status: null, message: "no text and no tool calls in the reply", finishReason },
    },
  }),

  /** The model sent a refusal. */
  modelRefused: (refusal: string): Stop => ({
    status: "model_refused",
    reason: `The model refused: ${refusal}`,
    details: {},
  }),

  /** finish_reason "length" or "content_filter": the output was cut off; none of its tool calls ran. */
  outputTruncated: (finishReason: string): Stop => ({
    status: "model_output_truncated",
    reason: `The model's output stopped early (finish_reason ${finishReason}); no tool call was run.`,
    details: { finishReason },
  }),

  /** A tool call was denied; the run ends once the turn has settled. */
  permissionDenied: (toolName: string, requiredPermission: string): Stop => ({
    status: "permission_denied",
    reason: `${toolName} needs the permission "${requiredPermission}", which the caller lacks.`,
    details: { permission: { toolName, requiredPermission } },
  }),

  /** The run's tokens (`used`) reached its token budget (`limit`, config MAX_TOTAL_TOKENS). */
  tokenBudget: (limit: number, used: number): Stop => ({
    status: "budget_exceeded",
    reason: `The run used ${used} tokens, its budget is ${limit}.`,
    details: { budget: { name: "maxTotalTokens", limit, used } },
  }),

  /**
   * The run's token budget (`limit`, MAX_TOTAL_TOKENS) leaves fewer than the minimum completion tokens
   * (MIN_COMPLETION_TOKENS) once the next request's estimated `promptTokens` are counted: the call is not made.
   */
  tokenBudgetBeforeCall: (limit: number, used: number, promptTokens: number): Stop => ({
    status: "budget_exceeded",
    reason: `The run used ${used} tokens of its budget of ${limit}; the next request (about ${promptTokens} tokens) would leave too few for an answer, so it was not sent.`,
    details: { budget: { name: "maxTotalTokens", limit, used } },
  }),

  /** A quota could not cover the next model call (or could not be checked): the call is not made. */
  quotaExceeded: (refusal: QuotaRefusal): Stop => ({
    status: "quota_exceeded",
    reason: refusal.message,
    details: { quota: refusal },
  }),

  /** A call was refused because the run had started `limit` tool calls (config MAX_TOOL_CALLS_PER_RUN). */
  toolCallBudget: (limit: number, used: number): Stop => ({
    status: "budget_exceeded",
    reason: `The run reached its limit of ${limit} tool calls.`,
    details: { budget: { name: "maxToolCallsPerRun", limit, used } },
  }),

  /** The loop breaker: the same failure again after the model was given the final hint. */
  loopDetected: (loop: NonNullable<RunOutcomeDetails["loop"]>): Stop => ({
    status: "loop_detected",
    reason:
      `${loop.toolName} failed with ${loop.errorCode} ${loop.failures} times with the same arguments, ` +
      "after the model was told the next identical failure would end the run.",
    details: { loop },
  }),

  /**
   * ANSWER_GROUNDING=refuse: the answer held numbers no tool result or prompt gave (as written in
   * `ungrounded`); it is withheld.
   */
  answerUngrounded: (ungrounded: readonly string[]): Stop => ({
    status: "answer_ungrounded",
    reason:
      `The answer held numbers that no tool result or prompt gave (${ungrounded.join(", ")}); ` +
      "it was withheld (ANSWER_GROUNDING=refuse).",
    details: {},
  }),

  /** `limit` model calls made (config MAX_CYCLES); `summarized`: the summary call produced the answer. */
  maxCycles: (limit: number, summarized: boolean): Stop => ({
    status: "max_cycles_exceeded",
    reason: `The run reached its limit of ${limit} cycles.`,
    details: { summarized },
  }),
};
