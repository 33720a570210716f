import type { ApiDeps } from "../deps.js";
import { DomainError } from "../domain-errors.js";
import { executionNameFor } from "../durable/executions.js";
import type { SecurityContext } from "../identity.js";
import { microOf } from "../money/micro.js";
import { agentTraceOf, finishCarriedRunSpan } from "../run-trace.js";
import { DAY_MS } from "../store/counters.js";
import { UNFINISHED_STATUSES } from "../store/run-records.js";
import { canCancelRun, runIfAllowed } from "./access.js";
import type { AgentRunRecord, AgentRunStep } from "./run-shapes.js";

/**
 * Cancels a durable run that is `running`, `awaiting_approval` or `awaiting_quota` (`POST
 * /v1/runs/{runId}/cancel`): stops its execution (also one waiting in `waitForCallback` for a decision or
 * for budget), marks the record `cancelled`, then gives back what it held of the quotas (its slot, and
 * its hold less what its calls used, which stays counted: docs/quotas.md) and withdraws the
 * run's pending approvals (`cancelled`: they leave `GET /v1/approvals?status=pending`, and
 * a decision on them is 409 APPROVAL_CANCELLED). The execution is stopped first, so no approved call can
 * run after the cancel. The user who started the run may cancel it, and every billing writer of the
 * tenant; for anyone else the run does not exist. A record that waits while no execution runs (a cancel
 * interrupted after its stop, an execution timed out by Lambda or lost with a local runner's process)
 * is cancelled all the same: nothing else would ever end it.
 * @returns the record and its steps as they are after the cancel
 * @throws DomainError NOT_FOUND (no such run, or not the caller's to cancel); RUN_NOT_RUNNING (`runStatus`) when the run already ended, or its execution
 *   has (a synchronous run, or one finishing right now); for a run already `cancelled` the pending
 *   approvals a failed earlier cancel left are withdrawn first
 */
export async function cancelRun(
  deps: Pick<ApiDeps, "runs" | "approvals" | "executions" | "logger" | "quotas" | "model" | "clock">,
  security: SecurityContext,
  runId: string,
): Promise<{ run: AgentRunRecord; steps: AgentRunStep[] }> {
  const found = runIfAllowed(
    await deps.runs.get(security.tenantId, runId),
    (stored) => canCancelRun(security, stored.run),
    runId,
  );
  const notRunning = (run: AgentRunRecord) =>
    new DomainError("RUN_NOT_RUNNING", `The run ${runId} is not running (its status is ${run.status}).`, {
      facts: { runId, runStatus: run.status },
    });
  if (!UNFINISHED_STATUSES.includes(found.run.status)) {
    // A cancel whose withdrawal of the approvals failed is finished by the next one.
    if (found.run.status === "cancelled") await deps.approvals.cancelPending(security.tenantId, runId);
    throw notRunning(found.run);
  }
  const stopped = deps.executions ? await deps.executions.stop(executionNameFor(runId)) : "not_running";
  // A record that waits (for a person or for budget) was put there by its execution; with none running
  // (an earlier cancel stopped it and died before writing, Lambda timed it out, a local runner's process
  // restarted) nothing will ever move it again, so this cancel ends it. A `running` record without an
  // execution may be a synchronous run in flight, which cannot be cancelled.
  const stranded = stopped === "not_running" && deps.executions !== undefined && isWaiting(found.run.status);
  const won =
    (stopped === "stopped" || stranded) &&
    (await deps.runs.cancel(security.tenantId, runId, `Cancelled by ${security.userId}.`));
  const after = (await deps.runs.get(security.tenantId, runId)) ?? found;
  if (after.run.status !== "cancelled") throw notRunning(after.run);
  // The stopped execution never reaches its run:finish step, which emits the run's agent span: the
  // cancel that won emits it, under the ids the execution's spans already name as their parent.
  if (won) {
    const { run } = after;
    finishCarriedRunSpan(
      agentTraceOf(runId, false),
      {
        tenantId: security.tenantId,
        runId,
        conversationId: run.conversationId,
        durable: true,
        model: deps.model.telemetry,
      },
      Date.parse(run.startedAt),
      { status: "cancelled", cycles: run.cyclesRecorded, usage: run.usage, cost: run.cost },
      deps.clock.now(),
    );
  }
  const withdrawn = await deps.approvals.cancelPending(security.tenantId, runId);
  // What the stopped run held (its slot in flight, its hold) goes back to the quotas, less what its
  // calls spent from the hold: the record, read after the stop, has every call the run made.
  const used = {
    userId: after.run.userId,
    usage: { tokens: after.run.usage.totalTokens, costMicro: Number(microOf(after.run.cost?.amount ?? "0")) },
  };
  // Its marker is in the day it started or the day it last held (today, by the quotas' own clock), or,
  // before its first model step, still in its admission's day: admission precedes the record's start,
  // so a run admitted just before midnight UTC and started after it has its marker in the day before.
  const { quotas } = deps;
  const startedAt = Date.parse(found.run.startedAt);
  const days = [startedAt - DAY_MS, startedAt, quotas?.now() ?? startedAt];
  await quotas
    ?.releaseRun(security.tenantId, runId, days, used)
    .catch((error: unknown) => deps.logger.warn("quota not released", { runId, error: error as Error }));
  deps.logger.info("durable run cancelled", { runId, approvalsCancelled: withdrawn.length });
  return after;
}

/** Whether a live record waits in a durable wait (a person's decision, budget): only an execution puts it there. */
function isWaiting(status: string): boolean {
  return UNFINISHED_STATUSES.includes(status) && status !== "running";
}
