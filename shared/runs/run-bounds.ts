/**
 * The bounds of a run on each path (synchronous, durable): its limits, the server's caps clamped by the
 * request's own, and the time it may take (docs/http-api.md). Not the quota budget, which is
 * shared/quotas/run-budget.ts.
 */
import { Deadline } from "../agent/deadline.js";
import { clampRunLimits, type RunLimits } from "../agent/run-limits.js";
import type { Config } from "../config.js";

/** A request's own caps (ms for time), which only tighten the server's (a larger value is clamped). */
export interface RequestedLimits {
  maxCycles?: number | undefined;
  timeoutMs?: number | undefined;
}

/**
 * The limits of a synchronous run: the server's caps (`config.limits`) lowered by the request's
 * `maxCycles` and `timeoutMs` (ms), through `clampRunLimits`.
 */
export function syncRunLimits(config: Pick<Config, "limits">, request: RequestedLimits): RunLimits {
  return clampRunLimits(config.limits, { maxCycles: request.maxCycles, runTimeoutMs: request.timeoutMs });
}

/**
 * The limits of a durable run (started asynchronously, or a synchronous run handed over to one): the
 * server's caps with the run timeout of durable runs (config `durable.runTimeoutMs`: ASYNC_RUN_TIMEOUT_MS
 * capped by the execution timeout), lowered by the request's `maxCycles` and `timeoutMs` (ms).
 */
export function durableRunLimits(
  config: Pick<Config, "limits" | "durable">,
  request: RequestedLimits,
): RunLimits {
  return clampRunLimits(
    { ...config.limits, runTimeoutMs: config.durable.runTimeoutMs },
    { maxCycles: request.maxCycles, runTimeoutMs: request.timeoutMs },
  );
}

/**
 * The instant (epoch ms) after which no execution of a durable run that starts at `startedAt` (epoch ms)
 * is left to write its outcome: Lambda ends an execution at its timeout (`durable.executionTimeoutMs`),
 * and never before its deadline plus one approval wait and one budget wait (the stack's execution
 * timeout is at least that, infra/durable-runner.ts; the local runner has no timeout and is held to it).
 * Past it, still unfinished, the run reads `abandoned` (shared/runs/abandoned.ts).
 */
export function durableEndOf(
  config: Pick<Config, "durable" | "approvals" | "quotas">,
  startedAt: number,
  runTimeoutMs: number,
): number {
  const waitsMs = (config.approvals.timeoutSeconds + config.quotas.waitSeconds) * 1000;
  return startedAt + Math.max(config.durable.executionTimeoutMs, runTimeoutMs + waitsMs);
}

/**
 * A synchronous run's time budget in ms: the smaller of its timeout and the Lambda's remaining time
 * (`lambdaRemainingMs`, undefined outside Lambda) minus DEADLINE_RESERVE_MS; see `Deadline.budgetMs`.
 */
export function runBudgetMs(
  config: Pick<Config, "limits">,
  request: RequestedLimits,
  lambdaRemainingMs: number | undefined,
): number {
  return Deadline.budgetMs(
    syncRunLimits(config, request).runTimeoutMs,
    lambdaRemainingMs,
    config.limits.deadlineReserveMs,
  );
}
