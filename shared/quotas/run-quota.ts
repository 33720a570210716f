import type { Logger } from "@aws-lambda-powertools/logger";
import type { Deadline } from "../agent/deadline.js";
import { firstCallOf } from "../agent/model-turn.js";
import type { RunInput } from "../agent/types.js";
import { DomainError, QuotaUnavailableError } from "../domain-errors.js";
import type { SecurityContext } from "../identity.js";
import { STALE_RUN_GRACE_MS } from "../runs/abandoned.js";
import type { RunBudget } from "./run-budget.js";
import type { Quotas } from "./service.js";

/**
 * The quotas' seams in a run's start and end, for the runs layer (shared/runs/sync.ts, async-start.ts,
 * shared/durable/runner.ts) and the MCP adapter: one thin call each, the rules in shared/quotas/.
 */

/**
 * When a synchronous run's marker expires (epoch s) if the run never ends: its deadline (epoch ms) plus
 * STALE_RUN_GRACE_MS, rounded up, the moment the run reads `abandoned` (shared/runs/abandoned.ts): from
 * then on a prune may take its slot and hold back, and GET /v1/usage no longer counts them.
 */
const syncMarkerExpiry = (deadlineAt: number) => Math.ceil((deadlineAt + STALE_RUN_GRACE_MS) / 1000);

/**
 * Admits a synchronous run at the door (nothing written before it: a refusal is RateLimitedError, 429)
 * taking its first hold in the same write (its remaining calls' worst case when the day's budget is
 * ample, else its first call's: shared/quotas/holds.ts), and gives the run's budget.
 * @returns undefined when the deployment has no quotas
 * @throws RateLimitedError; QuotaUnavailableError
 */
export async function admitSyncRun(
  quotas: Quotas | undefined,
  run: Pick<RunInput, "model" | "tools" | "security" | "prompt" | "history" | "systemPrompt" | "limits"> & {
    runId: string;
    deadline: Deadline;
  },
): Promise<RunBudget | undefined> {
  if (!quotas) return undefined;
  const subject = subjectOf(run.security, run.runId);
  const expiresAtSeconds = () => syncMarkerExpiry(run.deadline.at);
  const bounds = { maxCycles: run.limits.maxCycles, maxTotalTokens: run.limits.maxTotalTokens };
  const admitted = await quotas.admit(subject, {
    expiresAtSeconds: expiresAtSeconds(),
    firstCall: firstCallOf(run),
    bounds,
  });
  return quotas.budget(subject, admitted.state, {
    expiresAtSeconds,
    onStoreFailure: "refuse",
    bounds,
    seen: admitted.totals,
  });
}

/**
 * Admits a durable run at the door of its start (its budget is made by the runner, from
 * {@link Quotas.admittedState}).
 * @param expiresAtSeconds when its marker may be pruned if it never ends: its deadline plus the longest
 *   it may wait (an approval, budget)
 * @param retried the run id derives from an Idempotency-Key, so an earlier start may have admitted it,
 *   maybe the UTC day before (shared/quotas/admission.ts `admit`)
 * @throws RateLimitedError; QuotaUnavailableError
 */
export async function admitDurableRun(
  quotas: Quotas | undefined,
  security: SecurityContext,
  runId: string,
  expiresAtSeconds: number,
  retried = false,
): Promise<void> {
  await quotas?.admit(subjectOf(security, runId), { expiresAtSeconds, retried });
}

/**
 * Settles a run's last model call and frees its slot in flight; a failure is logged (the marker then
 * expires, and a prune takes it back).
 */
export async function finishBudget(budget: RunBudget | undefined, logger: Logger): Promise<void> {
  await budget
    ?.finish()
    .catch((error: unknown) => logger.warn("quota not settled", { error: error as Error }));
}

/** The quotas' subject of a run: the verified caller's tenant and user, and the run. */
export function subjectOf(security: SecurityContext, runId: string) {
  return { tenantId: security.tenantId, userId: security.userId, runId };
}

/**
 * Admits an MCP tool call, a one-cycle run without a model call (runs per minute, runs in flight): the
 * budget to finish when the call ends (its slot in flight), or the tool error that refuses it (a
 * retryable fatal_error RATE_LIMITED with `retryAfterSeconds` and the policy, or QUOTA_UNAVAILABLE).
 */
export async function admitToolCall(
  quotas: Quotas | undefined,
  security: SecurityContext,
  callId: string,
  deadlineAt: number,
): Promise<
  | { kind: "admitted"; budget: RunBudget | undefined }
  | {
      kind: "refused";
      error: { code: string; message: string; retryable: true; details: Record<string, unknown> };
    }
> {
  if (!quotas) return { kind: "admitted", budget: undefined };
  const subject = subjectOf(security, callId);
  const expiresAtSeconds = () => syncMarkerExpiry(deadlineAt);
  try {
    const admitted = await quotas.admit(subject, { expiresAtSeconds: expiresAtSeconds() });
    return {
      kind: "admitted",
      budget: quotas.budget(subject, admitted.state, { expiresAtSeconds, onStoreFailure: "refuse" }),
    };
  } catch (error) {
    // The domain error as the call's tool error: its code, fixed sentence and facts (retryAfterSeconds,
    // policy, limit); anything else failed the store (fail closed).
    const refusal = error instanceof DomainError ? error : new QuotaUnavailableError(error);
    return {
      kind: "refused",
      error: { code: refusal.code, message: refusal.message, retryable: true, details: { ...refusal.facts } },
    };
  }
}
