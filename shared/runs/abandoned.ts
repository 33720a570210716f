/**
 * The one rule for a synchronous run whose server died mid-run (docs/reliability.md, "A run killed
 * mid-run"): a run that is not durable (a `POST /v1/runs` answered in the request or streamed, an MCP
 * call's one-cycle run) and is still `running` more than {@link STALE_RUN_GRACE_MS} after its own deadline
 * was killed (a Lambda timeout, out of memory, a crash) and will never write its outcome: every reader
 * sees it `abandoned` with {@link RUN_ABANDONED_REASON}, through the run store's read rule
 * ({@link abandonedRunRule}, wired once in shared/deps.ts), so a GET, a listing and its status filter, the
 * events feed, A2A, AG-UI, the console, a continuation and a cancel all say the same.
 *
 * Only a record that carries its synchronous deadline (`syncDeadlineAt`, written at its start) is judged:
 * a durable run's execution may outlive the deadline of any one invocation (it waits for approvals and
 * budget, and Lambda replays it after a crash), so it is never called dead here; a record written before
 * the deadline was kept cannot be told apart from a durable one and is not judged either.
 */
import type { Clock } from "../clock.js";
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
 * recorded)
 * when it is `running` with a synchronous deadline more than {@link STALE_RUN_GRACE_MS} behind `now`;
 * otherwise as stored.
 */
export function abandonedView(
  run: AgentRunRecord,
  syncDeadlineAt: string | undefined,
  now: number,
): AgentRunRecord {
  if (run.status !== "running" || syncDeadlineAt === undefined) return run;
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
 * {@link abandonedView}; a listing's status filter and the store's writes to a running run take a
 * synchronous deadline before `now - STALE_RUN_GRACE_MS` as abandoned, so what a filter keeps agrees with
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
