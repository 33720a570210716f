import type { PausingApprovalGate } from "../agent/approval.js";
import type { Deadline } from "../agent/deadline.js";
import { type RunOutcome, type RunPaused, runAgent } from "../agent/loop.js";
import { runInline, type StepRunner } from "../agent/step.js";
import type { SharedDeps } from "../deps.js";
import type { SecurityContext } from "../identity.js";
import { logInternalFailure } from "../observability.js";
import { admitSyncRun, finishBudget } from "../quotas/run-quota.js";
import type { ConversationHistory } from "./conversation.js";
import { RunLifecycle } from "./lifecycle.js";
import { type RequestedLimits, syncRunLimits } from "./run-bounds.js";

/**
 * One synchronous run.
 * - `runScope`: the client's Idempotency-Key, else `runId` (feeds tool idempotency keys)
 * - `deadline`: the run's deadline (from `runBudgetMs`, shared/runs/run-bounds.ts); the caller disposes it
 * - `conversation`: the earlier conversation this run continues (`loadConversation`), absent for a new one
 * - `conversationId`: the id of the new conversation a run that continues none starts (default its own)
 * - `step`, `approve`: passed to the loop; a pausing gate ends the run as {@link RunPaused}
 */
export interface SyncRunRequest extends RequestedLimits {
  security: SecurityContext;
  prompt: string;
  runId: string;
  runScope: string;
  deadline: Deadline;
  conversation?: ConversationHistory | undefined;
  conversationId?: string | undefined;
  step?: StepRunner | undefined;
  approve?: PausingApprovalGate | undefined;
}

/** What a synchronous run uses: the model, the tools, the config and what its lifecycle writes to. */
export type SyncRunDeps = Pick<
  SharedDeps,
  "config" | "model" | "tools" | "runs" | "logger" | "metrics" | "runObservers" | "quotas"
> &
  Partial<Pick<SharedDeps, "policies">>;

/**
 * Runs the agent inside one request through the run's {@link RunLifecycle}: start (record `running`; a
 * store failure stops the request before any model call), an audit step per cycle, then finish with the
 * transcript. A failed outcome write is logged at ERROR and does not change the outcome (the run's effects
 * have happened). A run that pauses for approval keeps its record `running` for the hand-over.
 * @returns the outcome, or {@link RunPaused}
 * @throws the store's error at the start; any unexpected error of the loop (after recording `failed`)
 */
export async function runSynchronously(
  deps: SyncRunDeps,
  request: SyncRunRequest,
): Promise<RunOutcome | RunPaused> {
  const { security, runId, conversation } = request;
  const life = new RunLifecycle(deps, { runId, tenantId: security.tenantId, userId: security.userId });
  const scope = {
    durable: false as const,
    conversationId: conversation?.conversationId ?? request.conversationId ?? runId,
    model: deps.model.telemetry,
  };
  return life.within(scope, () => runInLifecycle(deps, request, life));
}

/** {@link runSynchronously} inside its observers' scope (the run's agent span). */
async function runInLifecycle(
  deps: SyncRunDeps,
  request: SyncRunRequest,
  life: RunLifecycle,
): Promise<RunOutcome | RunPaused> {
  const { security, runId, conversation } = request;
  const limits = syncRunLimits(deps.config, request);
  const input = {
    model: deps.model,
    tools: deps.tools,
    security,
    prompt: request.prompt,
    runId,
    limits,
    ...(deps.config.prompts.system ? { systemPrompt: deps.config.prompts.system } : {}),
    ...(conversation ? { history: conversation.messages } : {}),
  };
  // Admission first: a refused run (429) has written nothing.
  const budget = await admitSyncRun(deps.quotas, { ...input, deadline: request.deadline });
  await life
    .start({
      prompt: request.prompt,
      limits,
      conversation,
      conversationId: request.conversationId,
      // On the clock its deadline and duration go by (the wall clock; a test's own).
      startedAt: request.deadline.clock.now(),
      syncDeadlineAt: request.deadline.at,
    })
    .catch(async (error: unknown) => {
      await finishBudget(budget, deps.logger);
      throw error;
    });
  let result: RunOutcome | RunPaused;
  try {
    result = await runAgent({
      ...input,
      runScope: request.runScope,
      deadline: request.deadline,
      grounding: deps.config.grounding.mode,
      step: life.steps(request.step ?? runInline),
      ...(request.approve ? { approve: life.approvals(request.approve) } : {}),
      ...(deps.policies ? { decide: deps.policies.decisions } : {}),
      ...(budget ? { budget } : {}),
      minCompletionTokens: deps.config.quotas.minCompletionTokens,
      hooks: { onCycle: (record) => life.cycle(record), onInternalFailure: logInternalFailure(deps.logger) },
    });
  } catch (error) {
    await Promise.all([finishBudget(budget, deps.logger), life.fail(error)]);
    throw error;
  }
  // A run paused for approval goes on as a durable run, which settles its budget.
  if (result.status === "paused") {
    await life.paused(result.approvals);
    return result;
  }
  // The budget's settle and the outcome's write are independent: one round trip for both.
  await Promise.all([
    finishBudget(budget, deps.logger),
    life
      .finish(result, result.durationMs)
      .catch((error: unknown) => deps.logger.error("run outcome not written", { error: error as Error })),
  ]);
  return result;
}
