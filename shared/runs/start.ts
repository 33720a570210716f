import { randomUUID } from "node:crypto";
import { Deadline } from "../agent/deadline.js";
import type { ApiDeps } from "../deps.js";
import { type ConversationHistory, loadConversation } from "./conversation.js";
import { pausingParts } from "./pausing.js";
import { runBudgetMs } from "./run-bounds.js";
import type { PreparedRun, RunIdempotency, RunRequest, RunStart } from "./run-request.js";
import { runSynchronously } from "./sync.js";

export type { PreparedRun, RunBody, RunIdempotency, RunRequest, RunStart } from "./run-request.js";

/**
 * The Idempotency-Key lease (ms) of an asynchronous start: the time one start request may take (write
 * the run record, start the execution), after which a retry may take the start over.
 */
export const ASYNC_START_LEASE_MS = 10_000;

/**
 * Checks a run before anything is claimed or written, and prepares its start: a continuation's
 * conversation is loaded first (404 / 409 leave no trace). `prefersAsync` with a runner starts a durable
 * run (shared/runs/async-start.ts, loaded then); without one the preference is ignored (RFC 7240 lets a
 * server do so) and the run is synchronous: its deadline is the run's budget, and, with a runner, a pause
 * for approval (APPROVAL_RULES or a policy's) is handed over to a durable execution
 * (shared/runs/handover.ts, loaded then). The Idempotency-Key
 * lease of a synchronous run ends at its deadline, and so does the wait of a hand-over, so a retry after
 * the lease finds the answer stored instead of taking the run over.
 * @throws DomainError from `loadConversation`; the store's error
 */
export async function prepareRun(deps: ApiDeps, request: RunRequest): Promise<PreparedRun> {
  const { security, body } = request;
  const conversation =
    body.previousRunId === undefined
      ? undefined
      : await loadConversation(deps.runs, security, {
          previousRunId: body.previousRunId,
          prompt: body.prompt,
          historyMaxTokens: deps.config.history.maxTokens,
          maxTotalTokens: deps.config.limits.maxTotalTokens,
          runTtlSeconds: deps.config.runs.ttlSeconds,
          systemPrompt: deps.config.prompts.system,
          runClock: deps.clock,
        });
  const { executions } = deps;
  if (executions && request.prefersAsync) {
    return {
      // The start request's own time, not the run's (whose deadline is fixed later, by the start): on the
      // wall clock, which the idempotency store reads leases by, as the synchronous run's wallClockAt().
      leaseExpiresAt: Date.now() + ASYNC_START_LEASE_MS,
      start: async (idempotency) =>
        (await import("./async-start.js")).startAsyncRun(
          { ...deps, executions },
          {
            security,
            body,
            idempotency,
            conversation,
            conversationId: request.conversationId,
          },
        ),
      dispose: () => {},
    };
  }
  const deadline = new Deadline(runBudgetMs(deps.config, body, request.lambdaRemainingMs), deps.clock);
  return {
    // The idempotency store reads leases on the wall clock (as the asynchronous start's above).
    leaseExpiresAt: deadline.wallClockAt(),
    start: (idempotency) => startSync(deps, request, { deadline, conversation, idempotency }),
    dispose: () => deadline.dispose(),
  };
}

/** A synchronous run; one that pauses for approval is handed over (see {@link prepareRun}). */
async function startSync(
  deps: ApiDeps,
  request: RunRequest,
  run: {
    deadline: Deadline;
    conversation: ConversationHistory | undefined;
    idempotency: RunIdempotency | undefined;
  },
): Promise<RunStart> {
  const { security, body } = request;
  const { executions } = deps;
  // Any call may need approval (APPROVAL_RULES, or a policy of the default or the tenant's set): with a
  // runner to hand a pause over to, every synchronous run records its steps so that it can pause.
  const pausing = executions ? pausingParts() : undefined;
  const runId = request.runId ?? `run_${randomUUID()}`;
  const runScope = run.idempotency?.key ?? runId;
  const { deadline, conversation } = run;
  const result = await runSynchronously(deps, {
    security,
    prompt: body.prompt,
    maxCycles: body.maxCycles,
    timeoutMs: body.timeoutMs,
    runId,
    runScope,
    deadline,
    conversation,
    conversationId: request.conversationId,
    step: pausing?.step,
    approve: pausing?.approve,
  });
  if (result.status !== "paused") return { kind: "completed", outcome: result, conversation };
  if (!(pausing && executions)) throw new Error(`The run ${runId} paused without a hand-over.`);
  return (await import("./handover.js")).handOver(
    { ...deps, executions },
    { security, runId, runScope, body, carried: pausing.carried, conversation, deadline },
  );
}
