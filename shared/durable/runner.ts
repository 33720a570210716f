import {
  createRetryStrategy,
  type DurableContext,
  type DurableLambdaHandler,
  JitterStrategy,
  withDurableExecution,
} from "@aws/durable-execution-sdk-js";
import { ConditionalCheckFailedException } from "@aws-sdk/client-dynamodb";
import * as z from "zod";
import type { ApprovalDecision, ApprovalGate, ApprovalRequest } from "../agent/approval.js";
import { Deadline, raceAbort } from "../agent/deadline.js";
import { transcriptOf } from "../agent/history.js";
import { type CycleRecord, type RunOutcome, type RunUsage, runAgent } from "../agent/loop.js";
import type { StepRunner } from "../agent/step.js";
import type { AppDeps } from "../deps.js";
import { flushMetrics, observeToolResults, recordRunMetrics } from "../observability.js";
import { agentTraceOf, carriedContext, emitApprovalWait, finishCarriedRunSpan } from "../run-trace.js";
import { type CarriedTrace, withContext } from "../tracing.js";
import { type DurableRunPayload, DurableRunPayloadSchema } from "./executions.js";
import { loadDurableHistory } from "./history.js";

/**
 * What a durable run's execution returns: the run's outcome without its transcript (the same fields as
 * the synchronous `POST /v1/runs` 200 body), or `{runId, status: "cancelled"}` when it was stopped.
 */
export type DurableRunResult =
  | (Omit<RunOutcome, "messages" | "details"> & { details: RunOutcome["details"] })
  | { runId: string; status: "cancelled" };

/**
 * Lambda durable functions' limit on one checkpoint's payload: 256 KB (the SDK's
 * CHECKPOINT_SIZE_LIMIT_BYTES; "Maximum checkpoint payload" in the durable functions quotas). A step
 * result larger than this, less 1 KiB for the operation's envelope, is refused before it is sent.
 */
export const MAX_STEP_RESULT_BYTES = 256 * 1024 - 1024;

/**
 * Raised inside a step whose result is over {@link MAX_STEP_RESULT_BYTES} (never retried: the same work
 * gives the same size). The run then ends `failed` (the `run:fail` step).
 */
export class StepResultTooLargeError extends Error {
  constructor(
    readonly stepName: string,
    readonly bytes: number,
  ) {
    super(
      `The result of step ${stepName} is ${bytes} bytes, over the ${MAX_STEP_RESULT_BYTES}-byte checkpoint limit.`,
    );
    this.name = new.target.name;
  }
}

/**
 * Errors a step attempt is not retried for (by name: the SDK may hand the retry strategy a copy).
 * `ProblemError`: a refusal of `history:load` (the previous run can no longer be continued) gives the
 * same answer on every attempt.
 */
const NOT_RETRIED = new Set(["RunStoppedError", "StepResultTooLargeError", "ProblemError"]);

/** Raised (as an abort reason, and inside a step) when the execution was stopped; never retried. */
export class RunStoppedError extends Error {
  constructor(message = "The durable run was stopped.") {
    super(message);
    this.name = new.target.name;
  }
}

/**
 * Options of {@link createDurableRunHandler}.
 * - `stopSignal`: aborted when the execution is stopped. In AWS it is not needed (after
 *   StopDurableExecution the service refuses the execution's checkpoints, so no step result of it is
 *   kept); the local runner (local/durable-executions.ts) passes one, and the run then ends at once:
 *   the step in flight rejects, nothing after it runs or is written.
 * - `faults`: fault injection for tests, called inside every step attempt: `beforeStep` before its work
 *   and `afterStep` after it (the work done, its result not yet checkpointed). Throwing from either cuts
 *   the attempt off as a crash would; the step is then retried (see {@link STEP_RETRY}).
 */
export interface DurableRunOptions {
  stopSignal?: AbortSignal;
  faults?: {
    beforeStep?: (name: string) => Promise<void> | void;
    afterStep?: (name: string) => Promise<void> | void;
  };
}

/**
 * Retries of a step attempt that threw (cut off, or failed before its checkpoint): 3 attempts in all,
 * 1 s then 2 s apart (no jitter: one execution retries alone). A model call or tool turn never throws for
 * model or tool failures (those are results), so a throw means the attempt was interrupted; tool
 * idempotency keys make the repeated turn's effects exactly-once. A stop, or a result over the checkpoint
 * limit, is never retried.
 */
export const STEP_RETRY = (() => {
  const base = createRetryStrategy({
    maxAttempts: 3,
    initialDelay: { seconds: 1 },
    maxDelay: { seconds: 10 },
    backoffRate: 2,
    jitter: JitterStrategy.NONE,
  });
  return (error: Error, attempt: number) =>
    NOT_RETRIED.has(error?.name) ? { shouldRetry: false } : base(error, attempt);
})();

/**
 * Builds the durable runner: `withDurableExecution` around the same `runAgent` the synchronous path runs.
 * Per execution (event = {@link DurableRunPayload}, validated; an invalid one fails the execution):
 * 0. a continuation (`payload.conversation`) first loads the earlier conversation in the step
 *    `history:load` (shared/durable/history.ts): its checkpoint fixes the history for every replay;
 * 1. every model call and every turn of tool calls is a `ctx.step` (`cycle-<n>:model`, `cycle-<n>:tools`,
 *    `summary:model`); a replay returns their checkpoints without calling the model or the tools again;
 * 2. the deadline is `payload.deadlineAt` (absolute, fixed at start), so every invocation shares it;
 * 3. each cycle's audit step is written with a conditional put: on replay the cycles already written
 *    are skipped (their logs and metrics too);
 * 4. the outcome is written in the `run:finish` step, only while the run record is `running` (a
 *    cancelled run keeps `cancelled`), with the run's transcript (its history, prompt, assistant messages
 *    and tool results) for runs that continue it, as the synchronous path stores it; the execution
 *    returns {@link DurableRunResult}.
 * A stop ends the run `cancelled` without writing anything. Any other failure (a step still throwing
 * after {@link STEP_RETRY}) marks the run `failed` in the `run:fail` step and fails the execution, which
 * the stack's failed-executions alarm reports.
 * @param deps the dependencies (config, model, tools, runs, logger, metrics), built once per container;
 *   a factory is called on the first invocation
 */
export function createDurableRunHandler(
  deps: AppDeps | (() => AppDeps),
  options: DurableRunOptions = {},
): DurableLambdaHandler {
  let resolved: AppDeps | undefined = typeof deps === "function" ? undefined : deps;
  return withDurableExecution(async (event: unknown, ctx: DurableContext) => {
    resolved ??= (deps as () => AppDeps)();
    try {
      const payload = DurableRunPayloadSchema.parse(event) as DurableRunPayload;
      // Every invocation's spans join the run's trace, under its agent span (shared/run-trace.ts).
      const carried = payload.trace ?? agentTraceOf(payload.runId, false);
      return await withContext(carriedContext(carried), () =>
        durableRun(payload, ctx, resolved as AppDeps, { ...options, carried }),
      );
    } finally {
      flushMetrics(resolved.metrics);
      resolved.logger.resetKeys();
    }
  });
}

/** One durable run; see {@link createDurableRunHandler}. */
async function durableRun(
  payload: DurableRunPayload,
  ctx: DurableContext,
  deps: AppDeps,
  options: DurableRunOptions & { carried: CarriedTrace | undefined },
): Promise<DurableRunResult> {
  const { runs, logger, metrics } = deps;
  const { security, runId } = payload;
  const stopSignal = options.stopSignal;
  const stopped = () => stopSignal?.aborted === true;
  const throwIfStopped = () => {
    if (stopped()) throw new RunStoppedError();
  };
  // Steps a synchronous run completed before it was handed over (shared/runs/handover.ts).
  const carried = new Map((payload.carried ?? []).map((entry) => [entry.name, entry.result]));
  const step: StepRunner = (name, fn) =>
    ctx.step(
      name,
      async () => {
        throwIfStopped();
        if (carried.has(name)) return carried.get(name) as Awaited<ReturnType<typeof fn>>;
        await options.faults?.beforeStep?.(name);
        const result = await (stopSignal ? raceAbort(fn(), stopSignal) : fn());
        await options.faults?.afterStep?.(name);
        throwIfStopped();
        const bytes = Buffer.byteLength(JSON.stringify(result) ?? "", "utf8");
        if (bytes > MAX_STEP_RESULT_BYTES) throw new StepResultTooLargeError(name, bytes);
        return result;
      },
      { retryStrategy: STEP_RETRY },
    );

  logger.appendKeys({ runId, tenantId: security.tenantId });
  const deadline = Deadline.until(payload.deadlineAt);
  const usageSoFar: RunUsage = { promptTokens: 0, completionTokens: 0, totalTokens: 0 };
  let outcome: RunOutcome;
  const traceInfo = {
    tenantId: security.tenantId,
    runId,
    conversationId: runId,
    durable: true,
    model: deps.model.telemetry,
  };
  try {
    const { conversation } = payload;
    const history = conversation
      ? await step("history:load", () =>
          loadDurableHistory(runs, security, {
            previousRunId: conversation.previousRunId,
            prompt: payload.prompt,
            historyMaxTokens: conversation.historyMaxTokens,
            maxTotalTokens: payload.limits.maxTotalTokens,
            runTtlSeconds: deps.config.runs.ttlSeconds,
          }),
        )
      : undefined;
    if (history) traceInfo.conversationId = history.conversationId;
    outcome = await runAgent({
      model: deps.model,
      tools: deps.tools,
      security,
      prompt: payload.prompt,
      runId,
      runScope: payload.runScope,
      limits: payload.limits,
      deadline,
      step,
      ...(history ? { history: history.messages } : {}),
      approve: approvalGate(ctx, deps, payload, deadline, stopSignal, options.carried),
      hooks: { onCycle: (record) => writeAuditStep(deps, payload, record, usageSoFar, stopped) },
    });
  } catch (error) {
    if (stopped()) return { runId, status: "cancelled" };
    await ctx.step("run:fail", async () => {
      await runs.fail(security.tenantId, runId, "The server failed during the run.").catch(() => false);
      finishCarriedRunSpan(options.carried, traceInfo, payload.startedAt, { failed: "INTERNAL" });
      return true;
    });
    logger.error("durable run failed", { error: error as Error });
    throw error;
  } finally {
    deadline.dispose();
  }
  if (stopped()) return { runId, status: "cancelled" };

  const { messages: _transcript, ...result } = outcome;
  const finished = await ctx.step("run:finish", async () => {
    const durationMs = Math.max(0, Date.now() - payload.startedAt);
    const written = await runs.finish(security.tenantId, runId, {
      status: outcome.status,
      cycles: outcome.cycles,
      answer: outcome.answer,
      reason: outcome.reason,
      usage: outcome.usage,
      durationMs,
      transcript: transcriptOf(outcome.messages, outcome.answer),
    });
    // In this step, so the agent span is emitted once, by the invocation that records the outcome.
    finishCarriedRunSpan(options.carried, traceInfo, payload.startedAt, outcome);
    return { durationMs, written };
  });
  if (finished.written) {
    recordRunMetrics(metrics, { ...outcome, durationMs: finished.durationMs });
    logger.info("run finished", {
      status: outcome.status,
      cycles: outcome.cycles,
      toolResults: outcome.toolResults.length,
      totalTokens: outcome.usage.totalTokens,
      latencyMs: finished.durationMs,
    });
  }
  return { ...result, durationMs: finished.durationMs };
}

/** The callback result the API sends when a person decides (shared/runs/approvals.ts). */
export const ApprovalCallbackSchema = z
  .object({
    decision: z.enum(["approved", "rejected"]),
    decidedBy: z.string().min(1),
    decidedAt: z.string(),
    reason: z.string().nullable(),
    requestedAt: z.string(),
  })
  .strict();

/**
 * The durable runner's {@link ApprovalGate} (docs/approvals.md): one `ctx.waitForCallback` named
 * `request.name` (`cycle-<n>:approval:<toolCallId>`) with the timeout APPROVAL_TIMEOUT_SECONDS. Its
 * submitter, which runs once and gets the callback id, writes the APPROVAL item (callback id stored
 * server-side only), moves the run to `awaiting_approval` and announces the approval (a failed event is
 * logged, never fatal). The decision is the callback's result; when the wait times out instead, the
 * step `<name>:expire` marks the approval expired, or returns the decision that won the race with the
 * timeout. Then the step `<name>:resume` moves the run back to `running` once none of its approvals is
 * pending, and the deadline moves later by the time the run waited.
 */
function approvalGate(
  ctx: DurableContext,
  deps: AppDeps,
  payload: DurableRunPayload,
  deadline: Deadline,
  stopSignal: AbortSignal | undefined,
  carried: CarriedTrace | undefined,
): ApprovalGate {
  const { security, runId } = payload;
  const timeoutSeconds = deps.config.approvals.timeoutSeconds;
  return async (request: ApprovalRequest): Promise<ApprovalDecision> => {
    const deadlineAtRequest = deadline.at;
    let decision: ApprovalDecision;
    try {
      const waiting = ctx.waitForCallback(
        request.name,
        async (callbackId) => {
          const now = Date.now();
          const approval = await deps.approvals.request({
            approvalId: request.approvalId,
            runId,
            tenantId: security.tenantId,
            toolName: request.toolName,
            toolCallId: request.toolCallId,
            arguments: request.arguments,
            preview: { ...request.preview },
            requestedBy: security.userId,
            requestedAt: new Date(now).toISOString(),
            expiresAt: new Date(now + timeoutSeconds * 1000).toISOString(),
            callbackId,
            waitName: request.name,
          });
          await deps.runs.setWaiting(security.tenantId, runId, true);
          deps.logger.info("approval requested", {
            approvalId: approval.approvalId,
            toolName: request.toolName,
          });
          await deps.approvalEvents
            .requested({
              tenantId: security.tenantId,
              runId,
              approvalId: approval.approvalId,
              toolName: approval.toolName,
              preview: approval.preview,
              requestedBy: approval.requestedBy,
              requestedAt: approval.requestedAt,
              expiresAt: approval.expiresAt,
            })
            .catch((error: unknown) =>
              deps.logger.warn("approval event not sent", {
                approvalId: approval.approvalId,
                error: error as Error,
              }),
            );
        },
        { timeout: { seconds: timeoutSeconds } },
      );
      // A local stop (no StopDurableExecution in the testing SDK) ends the wait at once; the invocation
      // that replays a stopped execution (local/durable-executions.ts fails its waits) never starts it.
      if (stopSignal?.aborted) throw stopSignal.reason;
      const raw = await (stopSignal ? raceAbort(Promise.resolve(waiting), stopSignal) : waiting);
      decision = ApprovalCallbackSchema.parse(JSON.parse(raw));
    } catch (error) {
      if (stopSignal?.aborted || error instanceof z.ZodError || error instanceof SyntaxError) throw error;
      // The wait timed out: the approval expires, unless a decision was written first.
      decision = await ctx.step(`${request.name}:expire`, async () => {
        const approval = await deps.approvals.expire(security.tenantId, runId, request.approvalId);
        if (!approval) throw new Error(`The approval ${request.approvalId} is missing.`);
        return {
          decision:
            approval.status === "approved" || approval.status === "rejected" ? approval.status : "expired",
          decidedBy: approval.decidedBy,
          decidedAt: approval.decidedAt ?? approval.expiresAt,
          reason: approval.reason,
          requestedAt: approval.requestedAt,
        } satisfies ApprovalDecision;
      });
    }
    await ctx.step(`${request.name}:resume`, async () => {
      const pending = await deps.approvals.pendingForRun(security.tenantId, runId);
      if (pending.length === 0) await deps.runs.setWaiting(security.tenantId, runId, false);
      // The wait as its own span, emitted once (this step's checkpoint keeps a replay from repeating it).
      emitApprovalWait(
        carried,
        { ...request, decision: decision.decision },
        Date.parse(decision.requestedAt),
        Date.parse(decision.decidedAt),
      );
      return pending.length;
    });
    // The time the run waited does not count against its deadline.
    const left = Math.max(0, deadlineAtRequest - Date.parse(decision.requestedAt));
    deadline.extendTo(Date.parse(decision.decidedAt) + left);
    deps.logger.info("approval decided", { approvalId: request.approvalId, decision: decision.decision });
    return decision;
  };
}

/**
 * The onCycle hook of a durable run: writes the cycle's audit step (a conditional put, so a replayed
 * cycle, already written, is skipped with its logs and metrics) and moves the run record's progress.
 * Nothing is written once the run was stopped. A failed write is logged and never changes the run.
 */
async function writeAuditStep(
  deps: AppDeps,
  payload: DurableRunPayload,
  record: CycleRecord,
  usageSoFar: RunUsage,
  stopped: () => boolean,
): Promise<void> {
  usageSoFar.promptTokens += record.usage.promptTokens;
  usageSoFar.completionTokens += record.usage.completionTokens;
  usageSoFar.totalTokens += record.usage.totalTokens;
  if (stopped()) return;
  try {
    await deps.runs.appendStep(payload.security.tenantId, payload.runId, record, { ...usageSoFar });
  } catch (error) {
    if (error instanceof ConditionalCheckFailedException) return; // a replayed cycle: written before
    deps.logger.warn("audit step not written", { cycle: record.cycle, error: error as Error });
    return;
  }
  observeToolResults(deps, record);
}
