import type { ApprovalGate } from "../agent/approval.js";
import { Deadline } from "../agent/deadline.js";
import { transcriptOf } from "../agent/history.js";
import { clampRunLimits, type RunLimits } from "../agent/limits.js";
import { type RunOutcome, type RunUsage, runAgent, type StepRunner } from "../agent/loop.js";
import type { AppDeps } from "../deps.js";
import type { SecurityContext } from "../identity.js";
import { observeToolResults, recordRunMetrics } from "../observability.js";
import { type RunSpan, type RunTraceInfo, startRunSpan } from "../run-trace.js";
import { withContext } from "../tracing.js";
import type { ConversationHistory } from "./conversation.js";

/**
 * One run as the HTTP layer asks for it.
 * - `maxCycles`, `timeoutMs` (ms): the request's own caps, which only tighten the server's
 * - `runScope`: the client's Idempotency-Key, else `runId` (feeds tool idempotency keys)
 * - `deadline`: the run's deadline, made by the caller from {@link runBudgetMs} (the HTTP layer also
 *   uses it as the Idempotency-Key lease); the caller disposes it
 * - `conversation`: the earlier conversation this run continues (`loadConversation` in
 *   shared/runs/conversation.ts, called before the run starts), absent for a new conversation
 * - `step`, `approve`: passed to the loop (a run that may pause for approval, shared/runs/handover.ts); an
 *   error the gate throws (the hand-over) leaves the run record `running` for the durable execution
 */
export interface RunRequest {
  security: SecurityContext;
  prompt: string;
  runId: string;
  runScope: string;
  maxCycles?: number | undefined;
  timeoutMs?: number | undefined;
  deadline: Deadline;
  conversation?: ConversationHistory | undefined;
  step?: StepRunner | undefined;
  approve?: ApprovalGate | undefined;
  /** True for the error `approve` throws to hand the run over (the run is then not marked failed). */
  isHandoff?: (error: unknown) => boolean;
}

/**
 * The effective limits of a run: the server's caps (`config.limits`) lowered by the request's
 * `maxCycles` and `timeoutMs` (ms), through `clampRunLimits` — a request can only tighten them (a
 * larger value is clamped, not rejected).
 */
export function effectiveLimits(
  config: AppDeps["config"],
  request: Pick<RunRequest, "maxCycles" | "timeoutMs">,
): RunLimits {
  return clampRunLimits(config.limits, { maxCycles: request.maxCycles, runTimeoutMs: request.timeoutMs });
}

/**
 * The run's time budget in ms: the smaller of its effective timeout and the Lambda's remaining time
 * (`lambdaRemainingMs`, undefined outside Lambda) minus DEADLINE_RESERVE_MS; see `Deadline.budgetMs`.
 */
export function runBudgetMs(
  config: AppDeps["config"],
  request: Pick<RunRequest, "maxCycles" | "timeoutMs">,
  lambdaRemainingMs: number | undefined,
): number {
  return Deadline.budgetMs(
    effectiveLimits(config, request).runTimeoutMs,
    lambdaRemainingMs,
    config.limits.deadlineReserveMs,
  );
}

/**
 * Runs the agent with an audit trail, logs and metrics:
 * 1. writes the run record (`running`) — a store failure here stops the request before any model call
 * 2. runs the bounded loop; after each cycle appends an audit step, logs each tool result (INFO:
 *    toolName, status, error code, latencyMs) and emits its metrics
 * 3. writes the outcome with the run's transcript (for runs that continue it; never logged), logs "run
 *    finished" and stores the run metrics
 * A failed step or outcome write is logged (WARN/ERROR) and does not change the outcome: the effects of
 * the run have happened, so the caller still gets them. Prompts and answers are never logged.
 * @throws the store's error when the run record cannot be written at the start; any unexpected error
 *   of the loop (after marking the run `failed`, best effort)
 */
export async function executeRun(deps: AppDeps, request: RunRequest): Promise<RunOutcome> {
  const span = startRunSpan(runTraceInfo(deps, request, false));
  return withContext(span.context, () => executeRunIn(span, deps, request));
}

/**
 * The trace facts of a run ({@link RunTraceInfo}): its conversation is the one it continues, or a new
 * one named after it.
 */
export function runTraceInfo(
  deps: Pick<AppDeps, "model">,
  request: Pick<RunRequest, "security" | "runId" | "conversation">,
  durable: boolean,
): RunTraceInfo {
  return {
    tenantId: request.security.tenantId,
    runId: request.runId,
    conversationId: request.conversation?.conversationId ?? request.runId,
    durable,
    model: deps.model.telemetry,
  };
}

/** {@link executeRun} inside the run's agent span (ended here, except for a hand-over). */
async function executeRunIn(span: RunSpan, deps: AppDeps, request: RunRequest): Promise<RunOutcome> {
  const { config, logger, metrics, runs } = deps;
  const { security, runId } = request;
  const limits = effectiveLimits(config, request);
  logger.appendKeys({ runId, tenantId: security.tenantId });

  await runs.start({
    tenantId: security.tenantId,
    runId,
    userId: security.userId,
    prompt: request.prompt,
    limits: { maxCycles: limits.maxCycles, timeoutMs: limits.runTimeoutMs },
    previousRunId: request.conversation?.previousRunId,
    history: request.conversation?.summary,
    conversationId: request.conversation?.conversationId,
  });
  logger.info("run started", {
    userId: security.userId,
    maxCycles: limits.maxCycles,
    timeoutMs: limits.runTimeoutMs,
    promptChars: request.prompt.length,
  });

  const usageSoFar: RunUsage = { promptTokens: 0, completionTokens: 0, totalTokens: 0 };
  const { deadline } = request;
  let outcome: RunOutcome;
  try {
    outcome = await runAgent({
      model: deps.model,
      tools: deps.tools,
      security,
      prompt: request.prompt,
      runId,
      runScope: request.runScope,
      limits,
      deadline,
      ...(request.conversation ? { history: request.conversation.messages } : {}),
      ...(request.step ? { step: request.step } : {}),
      ...(request.approve ? { approve: request.approve } : {}),
      hooks: {
        onCycle: async (record) => {
          usageSoFar.promptTokens += record.usage.promptTokens;
          usageSoFar.completionTokens += record.usage.completionTokens;
          usageSoFar.totalTokens += record.usage.totalTokens;
          observeToolResults({ logger, metrics }, record);
          try {
            await runs.appendStep(security.tenantId, runId, record, { ...usageSoFar });
          } catch (error) {
            logger.warn("audit step not written", { cycle: record.cycle, error: error as Error });
          }
        },
      },
    });
  } catch (error) {
    // A hand-over leaves the agent span open: the durable execution ends it (shared/run-trace.ts).
    if (request.isHandoff?.(error)) throw error;
    span.fail("INTERNAL");
    await runs
      .fail(security.tenantId, runId, "The server failed during the run.")
      .catch(() => logger.warn("run failure not recorded"));
    throw error;
  }

  try {
    await runs.finish(security.tenantId, runId, {
      status: outcome.status,
      cycles: outcome.cycles,
      answer: outcome.answer,
      reason: outcome.reason,
      usage: outcome.usage,
      durationMs: outcome.durationMs,
      transcript: transcriptOf(outcome.messages, outcome.answer),
    });
  } catch (error) {
    logger.error("run outcome not written", { error: error as Error });
  }
  recordRunMetrics(metrics, outcome);
  span.finish(outcome);
  logger.info("run finished", {
    status: outcome.status,
    cycles: outcome.cycles,
    toolResults: outcome.toolResults.length,
    totalTokens: outcome.usage.totalTokens,
    latencyMs: outcome.durationMs,
  });
  return outcome;
}
