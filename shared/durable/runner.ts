import {
  type DurableContext,
  type DurableLambdaHandler,
  withDurableExecution,
} from "@aws/durable-execution-sdk-js";
import * as z from "zod";
import type { ApprovalDecision, ApprovalGate, ApprovalRequest } from "../agent/approval.js";
import { Deadline, raceAbort } from "../agent/deadline.js";
import { type RunOutcome, runAgent } from "../agent/loop.js";
import { type StepRunner, steps } from "../agent/step.js";
import type { RunnerDeps } from "../deps.js";
import { flushMetrics, logInternalFailure } from "../observability.js";
import { finishBudget, subjectOf } from "../quotas/run-quota.js";
import { expireApproval, requestApproval } from "../runs/approval-service.js";
import { RunLifecycle } from "../runs/lifecycle.js";
import type { RunSoFar } from "../store/runs.js";
import { loadDurableHistory } from "./conversation-load.js";
import { type DurableRunPayload, DurableRunPayloadSchema } from "./executions.js";
import { quotaWaitGate } from "./quota-wait.js";
import { isCallbackTimeout, STEP_RETRY } from "./step-retry.js";

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

export { STEP_RETRY } from "./step-retry.js";

/**
 * Builds the durable runner: `withDurableExecution` around the same `runAgent` the synchronous path runs.
 * Per execution (event = {@link DurableRunPayload}, validated; an invalid one fails the execution):
 * 0. a continuation (`payload.conversation`) first loads the earlier conversation in the step
 *    `history:load` (shared/durable/conversation-load.ts): its checkpoint fixes the history for every replay;
 * 1. every model call and every turn of tool calls is a `ctx.step` (`cycle-<n>:model`, `cycle-<n>:tools`,
 *    `summary:model`); a replay returns their checkpoints without calling the model or the tools again;
 * 2. the deadline is `payload.deadlineAt` (absolute, fixed at start), so every invocation shares it; it
 *    and the run's duration go by `deps.clock` (the wall clock; a test's own);
 * 3. each cycle's audit step is written with a conditional put: on replay the cycles already written
 *    are skipped (their logs and metrics too);
 * 4. the outcome is written in the `run:finish` step, only while the run record is `running` (a
 *    cancelled run keeps `cancelled`), with the run's transcript (its history, prompt, assistant messages
 *    and tool results) for runs that continue it, as the synchronous path stores it; the execution
 *    returns {@link DurableRunResult}.
 * A stop ends the run `cancelled` without writing anything. Any other failure (a step still throwing
 * after {@link STEP_RETRY}, `run:finish` and the approval wait's steps included) marks the run `failed` in
 * the `run:fail` step, from whichever unfinished status it is in (`awaiting_approval` too), and fails the
 * execution, which the stack's failed-executions alarm reports; a run `run:finish` already ended keeps
 * its outcome.
 * @param deps the dependencies (config, model, tools, runs, logger, metrics), built once per container;
 *   a factory is called on the first invocation
 */
export function createDurableRunHandler(
  deps: RunnerDeps | (() => RunnerDeps),
  options: DurableRunOptions = {},
): DurableLambdaHandler {
  let resolved: RunnerDeps | undefined = typeof deps === "function" ? undefined : deps;
  return withDurableExecution(async (event: unknown, ctx: DurableContext) => {
    resolved ??= (deps as () => RunnerDeps)();
    try {
      const payload = DurableRunPayloadSchema.parse(event) as DurableRunPayload;
      return await durableRun(payload, ctx, resolved as RunnerDeps, options);
    } finally {
      flushMetrics(resolved.metrics);
      resolved.logger.resetKeys();
    }
  });
}

/**
 * One invocation of a durable run inside its observers' scope: every span of it joins the run's trace,
 * under its agent span (shared/run-trace.ts), whose ids the payload carries.
 */
function durableRun(
  payload: DurableRunPayload,
  ctx: DurableContext,
  deps: RunnerDeps,
  options: DurableRunOptions,
): Promise<DurableRunResult> {
  const { security, runId } = payload;
  const life = new RunLifecycle(deps, { runId, tenantId: security.tenantId, userId: security.userId });
  const scope = {
    durable: true as const,
    conversationId: runId,
    model: deps.model.telemetry,
    carried: payload.trace,
    startedAt: payload.startedAt,
  };
  return life.within(scope, () => runDurably(payload, ctx, deps, options, life));
}

/** The work of one invocation of a durable run; see {@link createDurableRunHandler}. */
async function runDurably(
  payload: DurableRunPayload,
  ctx: DurableContext,
  deps: RunnerDeps,
  options: DurableRunOptions,
  life: RunLifecycle,
): Promise<DurableRunResult> {
  const { security, runId } = payload;
  const stopped = () => options.stopSignal?.aborted === true;
  const step = life.steps(durableStep(ctx, payload, options));
  const deadline = Deadline.until(payload.deadlineAt, deps.clock);
  const budget = runnerBudget(deps, payload, deadline);
  await life.resumed({
    startedAt: payload.startedAt,
    limits: { maxCycles: payload.limits.maxCycles, timeoutMs: payload.limits.runTimeoutMs },
    previousRunId: payload.conversation?.previousRunId ?? null,
  });
  try {
    const history = await loadHistory(step, deps, payload);
    if (history) await life.conversationLoaded(history.conversationId);
    const outcome: RunOutcome = await runAgent({
      model: deps.model,
      tools: deps.tools,
      security,
      prompt: payload.prompt,
      runId,
      runScope: payload.runScope,
      limits: payload.limits,
      deadline,
      step,
      ...(deps.config.prompts.system ? { systemPrompt: deps.config.prompts.system } : {}),
      grounding: deps.config.grounding.mode,
      ...(history ? { history: history.messages } : {}),
      approve: life.approvals(approvalGate({ ctx, deps, payload, deadline, life }, options.stopSignal)),
      decide: deps.policies.decisions,
      ...(budget
        ? { budget, waitForQuota: quotaWaitGate(ctx, deps, payload, deadline, options.stopSignal) }
        : {}),
      minCompletionTokens: deps.config.quotas.minCompletionTokens,
      hooks: {
        onCycle: (record) => life.cycle(record, stopped),
        onInternalFailure: logInternalFailure(deps.logger),
      },
    });
    if (stopped()) return { runId, status: "cancelled" };
    const { messages: _transcript, ...result } = outcome;
    const durationMs = await ctx.step(
      "run:finish",
      async () => {
        const ms = Math.max(0, deps.clock.now() - payload.startedAt);
        // Independent writes (a retried step finds each done: the marker gone, the record no longer running).
        await Promise.all([budget?.finish(), life.finish(outcome, ms)]);
        return ms;
      },
      { retryStrategy: STEP_RETRY },
    );
    return { ...result, durationMs };
  } catch (error) {
    if (stopped()) return { runId, status: "cancelled" };
    // Also for a failed run:finish: a record it did not end would otherwise stay `running` for good.
    await ctx.step("run:fail", async () => {
      // Approvals the failed run left pending can never be decided into a run: they are withdrawn
      // before the record says `failed`, so whoever sees it failed sees none pending.
      await deps.approvals.cancelPending(security.tenantId, runId).catch(() => []);
      await finishBudget(budget, deps.logger);
      await life.fail(error);
      return true;
    });
    throw error;
  } finally {
    deadline.dispose();
  }
}

/**
 * A durable run's quota budget (shared/quotas/run-budget.ts) from what its admission left; its marker
 * outlives the deadline by the longest wait it may make (an approval, budget). A store failure throws, so
 * the step is retried.
 */
function runnerBudget(deps: RunnerDeps, payload: DurableRunPayload, deadline: Deadline) {
  const { quotas } = deps;
  if (!quotas) return undefined;
  const waits = deps.config.approvals.timeoutSeconds + deps.config.quotas.waitSeconds;
  return quotas.budget(subjectOf(payload.security, payload.runId), quotas.admittedState(payload.startedAt), {
    expiresAtSeconds: () => Math.floor(deadline.at / 1000) + waits,
    onStoreFailure: "throw",
    bounds: { maxCycles: payload.limits.maxCycles, maxTotalTokens: payload.limits.maxTotalTokens },
  });
}

/**
 * The runner's {@link StepRunner}: `ctx.step` with {@link STEP_RETRY}; a step the synchronous run
 * completed before its hand-over (`payload.carried`) returns its carried result; each attempt checks the
 * stop signal, runs the test faults, and refuses a result over {@link MAX_STEP_RESULT_BYTES}.
 */
function durableStep(
  ctx: DurableContext,
  payload: DurableRunPayload,
  options: DurableRunOptions,
): StepRunner {
  const { stopSignal, faults } = options;
  const throwIfStopped = () => {
    if (stopSignal?.aborted) throw new RunStoppedError();
  };
  const carried = new Map((payload.carried ?? []).map((entry) => [entry.name, entry.result]));
  return ({ name }, fn) =>
    ctx.step(
      name,
      async () => {
        throwIfStopped();
        if (carried.has(name)) return carried.get(name) as Awaited<ReturnType<typeof fn>>;
        await faults?.beforeStep?.(name);
        const result = await (stopSignal ? raceAbort(fn(), stopSignal) : fn());
        await faults?.afterStep?.(name);
        throwIfStopped();
        const bytes = Buffer.byteLength(JSON.stringify(result) ?? "", "utf8");
        if (bytes > MAX_STEP_RESULT_BYTES) throw new StepResultTooLargeError(name, bytes);
        return result;
      },
      { retryStrategy: STEP_RETRY },
    );
}

/** A continuation's earlier conversation, loaded in the step `history:load`; undefined for a new one. */
async function loadHistory(step: StepRunner, deps: RunnerDeps, payload: DurableRunPayload) {
  const { conversation } = payload;
  if (!conversation) return undefined;
  return step(steps.history(), () =>
    loadDurableHistory(deps.runs, payload.security, {
      previousRunId: conversation.previousRunId,
      prompt: payload.prompt,
      historyMaxTokens: conversation.historyMaxTokens,
      maxTotalTokens: payload.limits.maxTotalTokens,
      runTtlSeconds: deps.config.runs.ttlSeconds,
    }),
  );
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
 * submitter ({@link waitForDecision}) stores the approval and moves the run to `awaiting_approval`; a
 * submitter that throws (a throttled or failed store write) is retried by {@link STEP_RETRY}, and when it
 * still fails the run fails (`run:fail`): the approval never expires for it. The decision is the
 * callback's result; only the SDK's CallbackTimeoutError means nobody decided in time: the step
 * `<name>:expire` then marks the approval expired, or returns the decision that won the race with the
 * timeout. Then the step `<name>:resume` moves the run back to `running` once none of its approvals is
 * pending, and the deadline moves later by the time the run waited.
 */
function approvalGate(
  run: {
    ctx: DurableContext;
    deps: RunnerDeps;
    payload: DurableRunPayload;
    deadline: Deadline;
    life: RunLifecycle;
  },
  stopSignal: AbortSignal | undefined,
): ApprovalGate {
  const { ctx, deps, payload, deadline, life } = run;
  const { security, runId } = payload;
  // Both ends of a wait are read from the deps' clock: `requestedAt`/`expiresAt` (the submitter) and
  // `decidedAt` (a decision, or the `:expire` step); the deadline moves by their difference. Only the
  // SDK's timeout runs on real time: under a test clock an approval past `expiresAt` already refuses
  // decisions (APPROVAL_EXPIRED), but its run waits until that timer fires (or a cancel ends the wait).
  return async (request: ApprovalRequest): Promise<ApprovalDecision> => {
    const deadlineAtRequest = deadline.at;
    let decision: ApprovalDecision;
    try {
      const waiting = ctx.waitForCallback(
        request.name,
        (callbackId) => waitForDecision(deps, payload, request, callbackId, life.waitingAt(request.cycle)),
        { timeout: { seconds: deps.config.approvals.timeoutSeconds }, retryStrategy: STEP_RETRY },
      );
      // A local stop (no StopDurableExecution in the testing SDK) ends the wait at once; the invocation
      // that replays a stopped execution (local/durable-executions.ts fails its waits) never starts it.
      if (stopSignal?.aborted) throw stopSignal.reason;
      const raw = await (stopSignal ? raceAbort(Promise.resolve(waiting), stopSignal) : waiting);
      decision = ApprovalCallbackSchema.parse(JSON.parse(raw));
    } catch (error) {
      if (stopSignal?.aborted || !isCallbackTimeout(error)) throw error;
      decision = await ctx.step(
        `${request.name}:expire`,
        () => expireApproval(deps.approvals, security.tenantId, runId, request.approvalId),
        { retryStrategy: STEP_RETRY },
      );
    }
    await ctx.step(
      `${request.name}:resume`,
      async () => {
        const pending = await deps.approvals.pendingForRun(security.tenantId, runId);
        if (pending.length === 0) await deps.runs.setWaiting(security.tenantId, runId, false);
        // The wait's end, told once (this step's checkpoint keeps a replay from repeating it): its span.
        await life.approvalWaitEnded(request, decision);
        return pending.length;
      },
      { retryStrategy: STEP_RETRY },
    );
    // The time the run waited does not count against its deadline.
    const left = Math.max(0, deadlineAtRequest - Date.parse(decision.requestedAt));
    deadline.extendTo(Date.parse(decision.decidedAt) + left);
    deps.logger.info("approval decided", { approvalId: request.approvalId, decision: decision.decision });
    return decision;
  };
}

/**
 * The approval wait's submitter, run once per attempt with the callback id: asks the person through the
 * approval service (shared/runs/approval-service.ts: the APPROVAL item with the callback id stored
 * server-side only, a retried attempt finding the one written before; the announcement) and moves the
 * run to `awaiting_approval`, its record counting every model call made so far (`soFar`: the one that
 * asked for this call too).
 * @throws the store's error (the wait's retry strategy retries it)
 */
async function waitForDecision(
  deps: RunnerDeps,
  payload: DurableRunPayload,
  request: ApprovalRequest,
  callbackId: string,
  soFar: RunSoFar,
): Promise<void> {
  const { security, runId } = payload;
  const service = { ...deps, timeoutSeconds: deps.config.approvals.timeoutSeconds };
  await requestApproval(service, { security, runId, request, callbackId });
  await deps.runs.setWaiting(security.tenantId, runId, true, undefined, soFar);
}
