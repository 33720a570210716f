/**
 * The one rule for a run whose writer died without writing its outcome (docs/reliability.md, "A run
 * killed mid-run"): a run still unfinished (`running`, `awaiting_approval`, `awaiting_quota`) more than
 * {@link STALE_RUN_GRACE_MS} after the instant its writer must have ended by will never write its outcome:
 * every reader sees it `abandoned` with {@link RUN_ABANDONED_REASON}, through the run store's read rule
 * ({@link abandonedRunRule}, wired once in shared/deps.ts), so a GET, a listing and its status filter, the
 * events feed, A2A, AG-UI, the console, a continuation and a cancel all say the same.
 *
 * That instant is kept on the record (`syncDeadlineAt`, written at its start): a synchronous run's own
 * deadline (its Lambda was killed: a timeout, out of memory, a crash); a durable run's execution's latest
 * end (shared/runs/run-bounds.ts `durableEndOf`: Lambda timed the execution out, it was stopped outside
 * the API, or it failed where the runner could not record it). A durable run may outlive the deadline of
 * any one invocation (it waits for approvals and budget, Lambda replays it after a crash), never its
 * execution. A record written before the instant was kept is not judged.
 */
import type { Clock } from "../clock.js";
import { UNFINISHED_STATUSES } from "../store/run-records.js";
import type { RunReadRule } from "../store/runs.js";
import type { AgentRunRecord, AgentRunShapes } from "./run-shapes.js";

/**
 * Milliseconds past a `running` run's own deadline after which it is taken as stopped without an
 * outcome (its Lambda was killed) rather than still running: the outcome write takes well under a second
 * after the deadline; 30 s leaves room for a slow store.
 */
export const STALE_RUN_GRACE_MS = 30_000;

/** The status an abandoned run reads as: a terminal status, never written (see the module comment). */
export const RUN_ABANDONED_STATUS = "abandoned";

/** The fixed `reason` of an abandoned run (the same sentence on every surface). */
export const RUN_ABANDONED_REASON =
  "The run stopped without recording an outcome: the server running it was stopped (a timeout, out of memory or a crash) before it finished, and it is past its deadline. Its steps show how far it got; start a new run.";

/**
 * The synchronous deadline a run's record keeps from its start (ISO 8601 UTC): the instant its request
 * must have ended by, epoch ms `deadlineAt`.
 */
export function syncDeadlineOf(deadlineAt: number): string {
  return new Date(deadlineAt).toISOString();
}

/**
 * The run as a reader sees it at epoch ms `now`: abandoned (status {@link RUN_ABANDONED_STATUS}, reason
 * {@link RUN_ABANDONED_REASON}, `finishedAt` and `updatedAt` the instant it became so, `cycles` the cycles it
 * recorded) when it is unfinished with a writer's deadline (`syncDeadlineAt`) more than
 * {@link STALE_RUN_GRACE_MS} behind `now`; otherwise as stored.
 */
export function abandonedView(
  run: AgentRunRecord,
  syncDeadlineAt: string | undefined,
  now: number,
): AgentRunRecord {
  if (!UNFINISHED_STATUSES.includes(run.status) || syncDeadlineAt === undefined) return run;
  const abandonedAt = Date.parse(syncDeadlineAt) + STALE_RUN_GRACE_MS;
  if (!(now > abandonedAt)) return run;
  return {
    ...run,
    status: RUN_ABANDONED_STATUS,
    reason: RUN_ABANDONED_REASON,
    finishedAt: new Date(abandonedAt).toISOString(),
    updatedAt: new Date(abandonedAt).toISOString(),
    cycles: run.cyclesRecorded,
  };
}

/**
 * The run store's read rule (shared/store/runs.ts `RunReadRule`) on `clock`: reads apply
 * {@link abandonedView}; a listing's status filter and the store's writes to an unfinished run take a
 * writer's deadline before `now - STALE_RUN_GRACE_MS` as abandoned, so what a filter keeps agrees with
 * what a GET shows and an abandoned run never changes again (a late outcome write is refused); a
 * listing of runs changed after an instant keeps those abandoned since (deadline after instant − grace).
 */
export function abandonedRunRule(clock: Pick<Clock, "now">): RunReadRule<AgentRunShapes> {
  return {
    view: (run, syncDeadlineAt) => abandonedView(run, syncDeadlineAt, clock.now()),
    abandonedBefore: () => new Date(clock.now() - STALE_RUN_GRACE_MS).toISOString(),
    deadlineAbandonedAt: (instant) => new Date(Date.parse(instant) - STALE_RUN_GRACE_MS).toISOString(),
  };
}
