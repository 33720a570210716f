import type { DurableContext } from "@aws/durable-execution-sdk-js";
import type { QuotaWait } from "../agent/budget.js";
import { type Deadline, raceAbort } from "../agent/deadline.js";
import type { RunnerDeps } from "../deps.js";
import type { DurableRunPayload } from "./executions.js";
import { isCallbackTimeout, STEP_RETRY } from "./step-retry.js";

/**
 * The durable runner's {@link QuotaWait} (docs/quotas.md "Durable runs wait"): a run whose next model
 * call a daily limit cannot cover waits in ONE `ctx.waitForCallback` named `cycle-<n>:quota#<attempt>` —
 * a durable wait, no invocation runs meanwhile — whose timeout is the window's reset (the end of the UTC
 * day) or what is left of QUOTA_WAIT_SECONDS, whichever comes first. Its submitter records the wait
 * (the callback, for `PUT /v1/limits` to wake it) and moves the run to `awaiting_quota`. Either way out —
 * woken because the tenant's limits changed, or timed out — the step `<name>:resume` removes the wait,
 * moves the run back to `running` and reads the limits afresh; the call is then tried again (a new step),
 * and the time waited does not count against the run's deadline. Once QUOTA_WAIT_SECONDS are spent (the
 * waits' checkpointed lengths, so a replay counts the same), the run ends `quota_exceeded`. A store
 * failure (QUOTA_UNAVAILABLE) is not waited for here: the model step throws and is retried. The wait's
 * length is the quotas' (their clock decides the window and `retryAfterSeconds`); the run's own times —
 * its record's moves, the time it waited and so its deadline's extension, QUOTA_WAIT_SECONDS spent — are
 * on the run's clock (`deps.clock`), the one its deadline and records go by.
 */
export function quotaWaitGate(
  ctx: DurableContext,
  deps: RunnerDeps,
  payload: DurableRunPayload,
  deadline: Deadline,
  stopSignal: AbortSignal | undefined,
): QuotaWait {
  const { security, runId } = payload;
  const waitMs = deps.config.quotas.waitSeconds * 1000;
  const now = () => deps.clock.now();
  let waitedMs = 0;
  return async ({ cycle, attempt, refusal }) => {
    const left = waitMs - waitedMs;
    if (refusal.code !== "QUOTA_EXCEEDED" || left <= 0 || !deps.quotas) return false;
    const name = `cycle-${cycle}:quota#${attempt}`;
    const timeoutSeconds = Math.max(1, Math.min(refusal.retryAfterSeconds ?? 1, Math.ceil(left / 1000)));
    const startedAt = await ctx.step(`${name}:start`, async () => now());
    try {
      const waiting = ctx.waitForCallback(
        name,
        async (callbackId) => {
          const expiresAtSeconds = Math.floor(now() / 1000) + timeoutSeconds + 3_600;
          const since = new Date(startedAt).toISOString();
          await deps.quotas?.waits.put(
            security.tenantId,
            { runId, callbackId, waitName: name, since },
            expiresAtSeconds,
          );
          await deps.runs.setAwaitingQuota(security.tenantId, runId, true, new Date(now()));
          deps.logger.info("run awaiting quota", { limit: refusal.limit, timeoutSeconds });
        },
        { timeout: { seconds: timeoutSeconds }, retryStrategy: STEP_RETRY },
      );
      if (stopSignal?.aborted) throw stopSignal.reason;
      await (stopSignal ? raceAbort(Promise.resolve(waiting), stopSignal) : waiting);
    } catch (error) {
      if (stopSignal?.aborted || !isCallbackTimeout(error)) throw error;
    }
    const waited = await ctx.step(`${name}:resume`, async () => {
      await deps.quotas?.waits.delete(security.tenantId, runId);
      await deps.runs.setAwaitingQuota(security.tenantId, runId, false, new Date(now()));
      await deps.quotas?.limitsFor(security.tenantId, true);
      return Math.max(0, now() - startedAt);
    });
    waitedMs += waited;
    deadline.extendTo(deadline.at + waited);
    deps.logger.info("run resumed after quota wait", { waitedMs: waited });
    return true;
  };
}
