import type { z } from "zod";
import type { SecurityContext } from "../identity.js";
import type { ApprovalGate, ApprovalRequest, PausingApprovalGate } from "./approval-gate.js";
import type { CallCost, ModelBudget, QuotaRefusal, QuotaWait } from "./budget.js";
import type { ContextLengthDetails } from "./context-length.js";
import type { Deadline } from "./deadline.js";
import type { ToolCallDecider } from "./decision.js";
import type { InternalFailure, ToolRegistry } from "./dispatcher.js";
import type { GroundingMode } from "./grounding.js";
import type { ChatMessage, Model, ModelUsage } from "./model.js";
import type { RunEffectSchema, RunOutcomeBodySchema, RunOutcomeDetailsSchema } from "./outcome-schema.js";
import type { ToolResult } from "./result.js";
import type { RunLimits } from "./run-limits.js";
import type { RunStatus } from "./run-status.js";
import type { StepRunner } from "./step.js";
import type { HistoryMessage } from "./transcript.js";

export type { RunStatus } from "./run-status.js";

/** Token usage summed over every model call of a run (from the provider's `usage`; zeros when absent). */
export type RunUsage = ModelUsage;

/**
 * Machine-readable facts about why a run stopped; only the entry for the run's status is set.
 * - `budget` (budget_exceeded): the budget that ran out, its limit and the amount used
 * - `permission` (permission_denied): the tool and the permission the caller lacks
 * - `loop` (loop_detected): the repeated tool, its canonical arguments, the error code, how many times it
 *   failed, and whether the model had been given a final hint
 * - `modelError` (model_error): the provider's HTTP status (null without an HTTP response) and message;
 *   `finishReason` when the model twice sent a reply with neither text nor tool calls (the provider's
 *   finish_reason of the last one, null when it sent none; see docs/providers.md); `code`, the adapter's
 *   stable code of the provider's failure when it knows one (Bedrock's, shared/model/bedrock.ts)
 * - `deadline` (deadline_exceeded): the phase the deadline hit and the deadline (epoch ms)
 * - `finishReason` (model_output_truncated): "length" or "content_filter"
 * - `summarized` (max_cycles_exceeded): whether the tool-less summary call produced `answer`
 * - `contextLength` (context_length_exceeded): the provider's refusal and the size of the history and
 *   request it refused, see {@link ContextLengthDetails}
 * - `effects` (any status but completed): what the run did before it stopped, see {@link RunEffect}
 * - `quota` (quota_exceeded): the limit that could not cover the next model call, see {@link QuotaRefusal}
 */
export type RunOutcomeDetails = z.infer<typeof RunOutcomeDetailsSchema>;

/**
 * A side effect a run had before it stopped without completing: a successful call of a mutating tool.
 * `summary` is the tool's sentence from its backend result (e.g. "recorded invoice inv_… for Acme Ltd,
 * gross total 1800.00 GBP"), never model text.
 */
export type RunEffect = z.infer<typeof RunEffectSchema>;

/**
 * The typed outcome of a run, with the partial transcript when it stopped early.
 * - `cycles`: model calls made (one cycle = one model call and the tool calls it asked for); the optional
 *   summary call at the cycle limit is not counted
 * - `answer`: the model's final text; null when the run did not complete (except a summary at the limit)
 * - `reason`: a human sentence on why a non-completed run stopped
 * - `toolResults`: one per tool call the model asked for, in call order (started or not)
 * - `messages`: the transcript (chat-completions messages), including the loop's corrective nudges
 * - `durationMs`: the run's time in ms, by its deadline's clock (`Deadline.clock`: the wall clock outside tests)
 * - `modelErrorStatus`: for `model_error`, the provider's HTTP status (e.g. 503; null when there was no
 *   HTTP response); null for every other status. The HTTP layer maps model_error to 502 MODEL_UNAVAILABLE.
 * - `details`: structured facts for the status, see {@link RunOutcomeDetails}
 * - `cost`: with a budget (shared/agent/budget.ts), the sum of the model calls' costs ("0.000000" in the
 *   price table's currency when no call was made); null when the model has no price (`costNote` says
 *   which); absent without a budget
 * - `grounding`: the check of the answer's numbers against the tool results and the prompt
 *   (shared/agent/grounding.ts); null when the model gave no answer
 */
export type RunOutcome = z.infer<typeof RunOutcomeBodySchema> & { messages: ChatMessage[] };

/**
 * What happened in one cycle, for the audit trail (handed to {@link RunHooks.onCycle} once per model
 * call, including the last one and one that failed).
 * - `request`: a summary of the model request (message count, tools offered), never the prompt text
 * - `finishReason`: the provider's finish_reason; null when the model call failed or the provider sent none
 * - `toolCalls`: each call's id (re-keyed when the model repeated an id or sent none; `originalId` then
 *   holds the model's, "" for none), name, arguments (as sent to the model again: always a string), and
 *   its tool result (status, error code, latencyMs, idempotencyKey)
 * - `modelLatencyMs`: wall time of the model call in ms
 * - `outcome`: the run's status when this cycle ended the run
 * - `summary`: true for the tool-less summary call at the cycle limit
 * - `cost`: the model call's cost, when the run has a budget (shared/agent/budget.ts)
 */
export interface CycleRecord {
  cycle: number;
  request: { messageCount: number; toolsOffered: string[] };
  finishReason: string | null;
  modelLatencyMs: number;
  usage: RunUsage;
  toolCalls: Array<{ id: string; originalId?: string; name: string; arguments: string; result: ToolResult }>;
  outcome?: RunStatus;
  summary?: boolean;
  cost?: CallCost;
}

/**
 * Optional observers of a run. A hook that throws is ignored: observers never change the outcome.
 * - `onCycle`: after each cycle, with its audit record
 * - `onInternalFailure`: the detail of a failure the model and the client only get a code and a fixed
 *   sentence for (a tool's error, a failed approval check, the provider's message), for the logs
 */
export interface RunHooks {
  onCycle?: (record: CycleRecord) => Promise<void> | void;
  onInternalFailure?: (failure: InternalFailure) => void;
}

/**
 * Everything one run needs, injected (no module singletons).
 * - `model`: the chat model behind the port (e.g. `OpenAIChatModel` over `createModelClient`)
 * - `runScope`: the client's Idempotency-Key, else `runId` (feeds tool idempotency keys)
 * - `limits`: the run's bounds (`clampRunLimits(config.limits, request)`); `limits.maxCycles` caps model calls
 * - `deadline`: the run's single deadline; its signal reaches every model and tool call. Build it from
 *   `Deadline.budgetMs(limits.runTimeoutMs, lambdaRemainingMs, config.limits.deadlineReserveMs)`.
 * - `step`: runs each model call and each turn of tool calls (see shared/agent/step.ts); default `runInline`
 * - `history`: an earlier conversation to continue (shared/runs/conversation.ts loads and trims it), sent
 *   between the system prompt and `prompt`; never holds a system message
 * - `approve`: where a call that needs approval waits for a person's decision (shared/agent/approval.ts);
 *   without it such a call does not run (business_error APPROVAL_UNAVAILABLE); a pausing gate makes the
 *   run end as {@link RunPaused}
 * - `systemPrompt`: the system message (config SYSTEM_PROMPT); default `DEFAULT_SYSTEM_PROMPT`
 * - `decide`: the policy decision service (docs/policies.md): which tools are offered, and every valid
 *   call's decision; absent: no policies (every call that passes its permission runs)
 * - `budget`: the run's quota budget, asked before every model call (shared/agent/budget.ts); without it
 *   only the run's own token budget bounds `max_tokens`
 * - `waitForQuota`: where a call the budget refused waits for budget (the durable runner); without it
 *   the run ends `quota_exceeded`
 * - `minCompletionTokens`: no model call is made for fewer completion tokens than this
 *   (MIN_COMPLETION_TOKENS; default `DEFAULT_MIN_COMPLETION_TOKENS`, 256)
 * - `grounding`: what an answer holding a number no tool result or prompt gave does (config
 *   ANSWER_GROUNDING, shared/agent/grounding.ts); default `report`
 */
export interface RunInput {
  model: Model;
  tools: ToolRegistry;
  security: SecurityContext;
  prompt: string;
  runId: string;
  runScope: string;
  limits: RunLimits;
  deadline: Deadline;
  systemPrompt?: string;
  history?: HistoryMessage[];
  hooks?: RunHooks;
  step?: StepRunner;
  approve?: ApprovalGate | PausingApprovalGate;
  decide?: ToolCallDecider;
  budget?: ModelBudget;
  waitForQuota?: QuotaWait;
  minCompletionTokens?: number;
  grounding?: GroundingMode;
}

/**
 * A run that stopped at a turn whose calls need a person's decision, which its gate could not wait for
 * ({@link PausingApprovalGate}): not an outcome, the run goes on elsewhere. `cycles`: model calls made;
 * `approvals`: the requests of the turn, in call order; `usage`: tokens so far.
 */
export interface RunPaused {
  status: "paused";
  runId: string;
  cycles: number;
  approvals: ApprovalRequest[];
  usage: RunUsage;
}
