import { randomUUID } from "node:crypto";
import type { ApiDeps } from "../deps.js";
import { fitHistoryToCheckpoint } from "../durable/conversation-load.js";
import { asyncRunId, type DurableExecutions, executionNameFor } from "../durable/executions.js";
import type { SecurityContext } from "../identity.js";
import { admitDurableRun } from "../quotas/run-quota.js";
import { agentTraceOf } from "../run-trace.js";
import { contextOf, withContext } from "../tracing.js";
import type { ConversationHistory } from "./conversation.js";
import { durableRunPayload } from "./durable-start.js";
import { RunLifecycle } from "./lifecycle.js";
import { durableEndOf, durableRunLimits } from "./run-bounds.js";
import type { RunBody, RunIdempotency, RunStart } from "./run-request.js";

/** What an asynchronous start uses. */
export type AsyncStartDeps = Pick<
  ApiDeps,
  "config" | "runs" | "logger" | "metrics" | "runObservers" | "quotas" | "clock"
> & {
  executions: DurableExecutions;
};

/**
 * Input of {@link startAsyncRun}: the verified caller, the validated body, the client's Idempotency-Key
 * with the request's fingerprint (when it sent one), and `conversation`, the earlier conversation of
 * `body.previousRunId` as `loadConversation` (shared/runs/conversation.ts) returned it;
 * `conversationId` names a new conversation (see `RunRequest`).
 */
export interface AsyncStartInput {
  security: SecurityContext;
  body: RunBody;
  idempotency: RunIdempotency | undefined;
  conversation?: ConversationHistory | undefined;
  conversationId?: string | undefined;
}

/**
 * Starts a durable run (`POST /v1/runs` with `Prefer: respond-async`). Under an Idempotency-Key the run
 * id, hence the execution name, derives from the caller (tenant, user), the key and the fingerprint ({@link asyncRunId}); the run
 * record (start time, limits) is written once through the run's lifecycle and the execution's input is
 * read back from it, so a retried or taken-over start sends Lambda the same name and payload and never
 * starts a second execution; such a start finds the record and is not admitted again (the quotas count
 * the run once, whatever UTC day the retry comes in). A continuation is recorded with its history summary after the history is
 * fitted to the checkpoint limit (shared/durable/conversation-load.ts), exactly as the runner will fit it; the
 * payload names the previous run, the runner loads the transcript in a step.
 * @returns `accepted` with the stored run (`running`)
 * @throws the store's error; the port's error when the execution cannot be started
 */
export async function startAsyncRun(deps: AsyncStartDeps, input: AsyncStartInput): Promise<RunStart> {
  const { security, body, idempotency } = input;
  const runId = idempotency
    ? asyncRunId(security, idempotency.key, idempotency.fingerprint)
    : `run_${randomUUID()}`;
  const limits = durableRunLimits(deps.config, body);
  const conversation = input.conversation && fitHistoryToCheckpoint(input.conversation);
  // Its own trace, named by the run id, so a retried start sends the same input. The writes that start
  // the run (admission, the run record) are made under the agent span, so they are in the run's trace.
  const trace = agentTraceOf(runId, false);
  const run = await withContext(trace && contextOf(trace), async () => {
    // A retried start (same key, a run record already written) is the run its first start admitted:
    // admitting it again would count it twice (in another UTC day, or once its marker is gone).
    const retried = idempotency ? await deps.runs.getRecord(security.tenantId, runId) : undefined;
    // Admission first: a refused run (429) has written nothing. Its marker outlives the longest the run may take.
    const { approvals, quotas } = deps.config;
    const longest = limits.runTimeoutMs / 1000 + approvals.timeoutSeconds + quotas.waitSeconds;
    // Under a key, an earlier start may have admitted the run and failed before writing its record.
    if (retried?.userId !== security.userId) {
      const expiresAtSeconds = Math.floor(deps.clock.now() / 1000 + longest);
      await admitDurableRun(deps.quotas, security, runId, expiresAtSeconds, idempotency !== undefined);
    }
    // On the clock the runner keeps the deadline and the duration by (the wall clock; a test's own). Read
    // after the admission, since the runner takes it for the admission's day: a start across midnight is
    // then admitted the day before it starts, whose slot the runner's budget gives back (run-budget.ts).
    const startedAt = deps.clock.now();
    const life = new RunLifecycle(deps, { runId, tenantId: security.tenantId, userId: security.userId });
    return life.start({
      prompt: body.prompt,
      limits,
      conversation,
      conversationId: input.conversationId,
      startedAt,
      // Past its execution's latest end, still unfinished, it reads `abandoned` (shared/runs/abandoned.ts).
      syncDeadlineAt: durableEndOf(deps.config, startedAt, limits.runTimeoutMs),
    });
  });
  const payload = durableRunPayload({
    runId,
    runScope: idempotency?.key ?? runId,
    security: { ...security },
    prompt: body.prompt,
    limits: { ...limits, runTimeoutMs: run.limits.timeoutMs },
    startedAt: Date.parse(run.startedAt),
    previousRunId: run.previousRunId,
    historyMaxTokens: deps.config.history.maxTokens,
    trace,
  });
  await deps.executions.start(executionNameFor(runId), payload);
  deps.logger.info("durable run started", { runId, deadlineAt: payload.deadlineAt });
  return { kind: "accepted", run };
}
