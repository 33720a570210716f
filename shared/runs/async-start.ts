import { randomUUID } from "node:crypto";
import { ConditionalCheckFailedException } from "@aws-sdk/client-dynamodb";
import { POLL_AFTER_SECONDS } from "../../functions/api/async-preference.js";
import { RUN_ROUTE, requestFingerprint, withRunIdempotency } from "../../functions/api/run-idempotency.js";
import { clampRunLimits, type RunLimits } from "../agent/limits.js";
import type { AgentRunShapes, AppDeps } from "../deps.js";
import {
  asyncRunId,
  type DurableExecutions,
  type DurableRunPayload,
  executionNameFor,
} from "../durable/executions.js";
import { fitHistoryToCheckpoint } from "../durable/history.js";
import { ProblemError } from "../errors.js";
import type { SecurityContext } from "../identity.js";
import { agentTraceOf } from "../run-trace.js";
import type { RunRecord, RunStep } from "../store/runs.js";
import type { CarriedTrace } from "../tracing.js";
import type { ConversationHistory } from "./conversation.js";

/**
 * The Idempotency-Key lease (ms) of an asynchronous start: the time one start request may take
 * (write the run record, invoke the runner), after which a retry may take the start over.
 */
export const ASYNC_START_LEASE_MS = 10_000;

/**
 * The effective limits of a durable run: the server's caps with the run timeout of durable runs
 * (config `durable.runTimeoutMs`: ASYNC_RUN_TIMEOUT_MS capped by the execution timeout), lowered by the
 * request's `maxCycles` and `timeoutMs` (ms) through `clampRunLimits`.
 */
export function asyncRunLimits(
  config: AppDeps["config"],
  request: { maxCycles?: number | undefined; timeoutMs?: number | undefined },
): RunLimits {
  return clampRunLimits(
    { ...config.limits, runTimeoutMs: config.durable.runTimeoutMs },
    { maxCycles: request.maxCycles, runTimeoutMs: request.timeoutMs },
  );
}

/**
 * Input of {@link startAsyncRun}: the verified caller, the validated body, the raw request for its keys,
 * and `conversation`, the earlier conversation of `body.previousRunId` as `loadConversation`
 * (shared/runs/conversation.ts) returned it — checked by the caller before anything is claimed or written.
 */
export interface AsyncStartInput {
  deps: AppDeps & { executions: DurableExecutions };
  security: SecurityContext;
  body: {
    prompt: string;
    maxCycles?: number | undefined;
    timeoutMs?: number | undefined;
    previousRunId?: string | undefined;
  };
  headers: Headers;
  event?: unknown;
  conversation?: ConversationHistory | undefined;
}

/**
 * Starts a durable run (`POST /v1/runs` with `Prefer: respond-async`) and answers 202 with the stored
 * run (status `running`, no steps yet), `Location: /v1/runs/{runId}`, `Retry-After` and
 * `Preference-Applied: respond-async`. Under an Idempotency-Key (run-idempotency.ts: replay of the 202,
 * 409 in progress, 422 other body) the run id, hence the execution name, derives from tenant + key +
 * body ({@link asyncRunId}); the run record (start time, limits) is written once and the execution's
 * input is read back from it, so a retried or taken-over start sends Lambda the same name and payload
 * and never starts a second execution. A continuation (`conversation`) is recorded with its history
 * summary after the history is fitted to the checkpoint limit (shared/durable/history.ts), exactly as the
 * runner will fit it; the payload names the previous run, the runner loads the transcript in a step.
 * @throws ProblemError (idempotency, STORE_UNAVAILABLE); the port's error when the execution cannot be
 *   started (a 500: the Idempotency-Key record is released, so a retry starts it)
 */
export async function startAsyncRun(input: AsyncStartInput): Promise<Response> {
  const { deps, security, body } = input;
  return withRunIdempotency(
    {
      deps,
      headers: input.headers,
      event: input.event,
      tenantId: security.tenantId,
      body,
      leaseExpiresAt: Date.now() + ASYNC_START_LEASE_MS,
    },
    async (clientKey) => {
      const runId = clientKey
        ? asyncRunId(security.tenantId, clientKey, requestFingerprint(RUN_ROUTE, body))
        : `run_${randomUUID()}`;
      const limits = asyncRunLimits(deps.config, body);
      const conversation = input.conversation && fitHistoryToCheckpoint(input.conversation);
      const run = await startOrReadRun(deps, security, runId, body.prompt, limits, conversation);
      const startedAt = Date.parse(run.startedAt);
      const payload: DurableRunPayload = {
        version: 1,
        runId,
        runScope: clientKey ?? runId,
        security: { userId: run.userId, tenantId: run.tenantId, permissions: [...security.permissions] },
        prompt: body.prompt,
        limits: { ...limits, runTimeoutMs: run.limits.timeoutMs },
        startedAt,
        deadlineAt: startedAt + run.limits.timeoutMs,
        ...(run.previousRunId
          ? {
              conversation: {
                previousRunId: run.previousRunId,
                historyMaxTokens: deps.config.history.maxTokens,
              },
            }
          : {}),
        ...withTrace(agentTraceOf(runId, false)),
      };
      await deps.executions.start(executionNameFor(runId), payload);
      deps.logger.info("durable run started", { runId, deadlineAt: payload.deadlineAt });
      const steps: RunStep<AgentRunShapes>[] = [];
      return Response.json(
        { ...run, steps },
        {
          status: 202,
          headers: {
            location: `/v1/runs/${runId}`,
            "retry-after": String(POLL_AFTER_SECONDS),
            "preference-applied": "respond-async",
          },
        },
      );
    },
  );
}

/**
 * Writes the run record (`running`, with `previousRunId` and the history summary of a continuation);
 * when it already exists (a retried start), reads it back.
 */
async function startOrReadRun(
  deps: AppDeps,
  security: SecurityContext,
  runId: string,
  prompt: string,
  limits: RunLimits,
  conversation: ConversationHistory | undefined,
): Promise<RunRecord<AgentRunShapes>> {
  try {
    return await deps.runs.start({
      tenantId: security.tenantId,
      runId,
      userId: security.userId,
      prompt,
      limits: { maxCycles: limits.maxCycles, timeoutMs: limits.runTimeoutMs },
      previousRunId: conversation?.previousRunId,
      history: conversation?.summary,
      conversationId: conversation?.conversationId,
    });
  } catch (error) {
    if (!(error instanceof ConditionalCheckFailedException)) throw error;
    const found = await deps.runs.get(security.tenantId, runId);
    if (!found) throw error;
    return found.run;
  }
}

/**
 * Cancels a durable run that is `running` or `awaiting_approval` (`POST /v1/runs/{runId}/cancel`): stops
 * its execution (also one waiting in `waitForCallback` for a decision), marks the record `cancelled`, then
 * withdraws the run's pending approvals (`cancelled`: they leave `GET /v1/approvals?status=pending`, and
 * a decision on them is 409 APPROVAL_CANCELLED). The execution is stopped first, so no approved call can
 * run after the cancel. The caller has already checked visibility.
 * @returns the record and its steps as they are after the cancel
 * @throws ProblemError RUN_NOT_RUNNING (409, `runStatus`) when the run already ended, or its execution
 *   has (a synchronous run, or one finishing right now); for a run already `cancelled` the pending
 *   approvals a failed earlier cancel left are withdrawn first
 */
export async function cancelRun(
  deps: AppDeps,
  security: SecurityContext,
  found: { run: RunRecord<AgentRunShapes>; steps: RunStep<AgentRunShapes>[] },
): Promise<{ run: RunRecord<AgentRunShapes>; steps: RunStep<AgentRunShapes>[] }> {
  const { runId } = found.run;
  const notRunning = (run: RunRecord<AgentRunShapes>) =>
    new ProblemError("RUN_NOT_RUNNING", `The run ${runId} is not running (its status is ${run.status}).`, {
      extensions: { runId, runStatus: run.status },
    });
  if (found.run.status !== "running" && found.run.status !== "awaiting_approval") {
    // A cancel whose withdrawal of the approvals failed is finished by the next one.
    if (found.run.status === "cancelled") await deps.approvals.cancelPending(security.tenantId, runId);
    throw notRunning(found.run);
  }
  const stopped = deps.executions ? await deps.executions.stop(executionNameFor(runId)) : "not_running";
  if (stopped === "stopped") {
    await deps.runs.cancel(security.tenantId, runId, `Cancelled by ${security.userId}.`);
  }
  const after = (await deps.runs.get(security.tenantId, runId)) ?? found;
  if (after.run.status !== "cancelled") throw notRunning(after.run);
  const withdrawn = await deps.approvals.cancelPending(security.tenantId, runId);
  deps.logger.info("durable run cancelled", { runId, approvalsCancelled: withdrawn.length });
  return after;
}

/** The payload member carrying the run's agent span, when tracing is on. */
export function withTrace(trace: CarriedTrace | undefined): { trace?: CarriedTrace } {
  return trace ? { trace } : {};
}
