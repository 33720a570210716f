import type { Logger } from "@aws-lambda-powertools/logger";
import type { QuotaLimits } from "../config/quotas.js";
import { DomainError } from "../domain-errors.js";
import { type DurableExecutions, executionNameFor } from "../durable/executions.js";
import type { SecurityContext } from "../identity.js";
import { BILLING_READ, requirePermission } from "../runs/access.js";
import type { StoredLimits } from "../store/quota-limits.js";
import { costShown, type LimitsChange } from "./limits.js";
import type { Quotas } from "./service.js";
import type { UsageView } from "./usage.js";

/**
 * The quotas' use cases behind `GET /v1/usage`, `GET /v1/limits` and `PUT /v1/limits` (docs/quotas.md),
 * for any surface (the HTTP API, `npm run tenant -- limits`):
 * the access rules and the side effects (waking runs that wait for budget) are here, the HTTP mapping in
 * functions/api/routes/quotas.ts.
 */

/** The permission that changes a tenant's own limits. */
export const LIMITS_ADMIN = "limits:admin";

/** What the use cases need: the quotas, the durable executions (to wake waiting runs), a logger. */
export interface QuotaApiDeps {
  quotas?: Quotas | undefined;
  executions?: DurableExecutions | undefined;
  logger: Logger;
}

/** The quotas, which every deployed function has (only a benchmark builds dependencies without them). */
function quotasOf(deps: QuotaApiDeps): Quotas {
  if (!deps.quotas) throw new Error("This deployment was built without quotas.");
  return deps.quotas;
}

/** The caller's usage today and this minute; the tenant's too when the caller holds billing:read. */
export function usageOfCaller(deps: QuotaApiDeps, security: SecurityContext): Promise<UsageView> {
  const tenantWide = security.permissions.includes(BILLING_READ);
  return quotasOf(deps).usage({ tenantId: security.tenantId, userId: security.userId }, tenantWide);
}

/**
 * What `GET /v1/limits` and `PUT /v1/limits` answer and `npm run tenant -- limits` prints: the limits
 * in force, what the tenant set itself, who set it and when (null for a tenant that never set any).
 */
export interface LimitsView {
  limits: QuotaLimits;
  tenantSet: { tenant: Partial<QuotaLimits["tenant"]>; user: Partial<QuotaLimits["user"]> };
  updatedBy: string | null;
  updatedAt: string | null;
}

/**
 * The caller's tenant's limits as {@link limitsChange} answers them, read afresh from the table (not a
 * container's cached copy, so a change made elsewhere shows at once); writes nothing. Readers are the
 * administrators who change them (`limits:admin`) and the tenant's billing readers (`billing:read`), who
 * see the limits in force in `GET /v1/usage` already.
 * @throws DomainError FORBIDDEN (`requiredPermission: limits:admin`) with neither permission
 */
export async function limitsView(deps: QuotaApiDeps, security: SecurityContext): Promise<LimitsView> {
  if (!security.permissions.includes(BILLING_READ)) requirePermission(security, LIMITS_ADMIN);
  const { inForce, stored } = await quotasOf(deps).limitsFor(security.tenantId, true);
  return viewOf(inForce, stored);
}

/** The {@link LimitsView} of the limits in force and what the tenant stored. */
function viewOf(inForce: QuotaLimits, stored: StoredLimits): LimitsView {
  return {
    limits: inForce,
    tenantSet: tenantSetOf(stored),
    updatedBy: stored.updatedBy,
    updatedAt: stored.updatedAt,
  };
}

/**
 * Changes the caller's tenant's own limits (absent fields unchanged, null: back to the deploy's) and
 * wakes every run of the tenant waiting for budget, so each tries its call again at once.
 * @throws DomainError FORBIDDEN without `limits:admin`; INVALID_REQUEST for a cost limit while the
 *   configured model has no price (it could never be checked: every run would be refused)
 */
export async function limitsChange(
  deps: QuotaApiDeps,
  security: SecurityContext,
  change: LimitsChange,
): Promise<LimitsView> {
  requirePermission(security, LIMITS_ADMIN);
  const quotas = quotasOf(deps);
  const costs = [change.tenant?.costPerDay, change.user?.costPerDay].filter(
    (cost) => typeof cost === "string",
  );
  if (costs.length > 0 && !quotas.price) {
    const message = `The model ${quotas.config.model} has no price in MODEL_PRICES, so a cost limit cannot be checked: give it one there (docs/quotas.md) or set token limits.`;
    throw new DomainError("INVALID_REQUEST", message, {
      facts: {
        errors: [
          { in: "body", path: change.tenant?.costPerDay ? "tenant.costPerDay" : "user.costPerDay", message },
        ],
      },
    });
  }
  const by = { userId: security.userId, at: new Date(quotas.now()).toISOString() };
  const { inForce, stored } = await quotas.setLimits(security.tenantId, change, by);
  if (deps.executions) await wakeWaiting(quotas, deps, security.tenantId);
  return viewOf(inForce, stored);
}

/**
 * Completes the budget wait of every run of the tenant that waits; a failure is logged (the wait times
 * out). Without `deps.executions` nothing is woken (the runs are only counted).
 * @returns how many runs were waiting, and how many of them this woke
 */
export async function wakeWaiting(
  quotas: Quotas,
  deps: QuotaApiDeps,
  tenantId: string,
): Promise<{ waiting: number; woken: number }> {
  const { executions } = deps;
  const waits = await quotas.waits.list(tenantId).catch((error: unknown) => {
    deps.logger.warn("quota waits not read", { error: error as Error });
    return [];
  });
  if (!executions) return { waiting: waits.length, woken: 0 };
  const outcomes = await Promise.all(
    waits.map(async (wait) => {
      const callback = {
        executionName: executionNameFor(wait.runId),
        callbackId: wait.callbackId,
        waitName: wait.waitName,
      };
      const woken = await executions
        .completeCallback(callback, JSON.stringify({ reason: "limits_changed" }))
        .catch((error: unknown) => {
          deps.logger.warn("run waiting for quota not woken", { runId: wait.runId, error: error as Error });
          return "not_waiting" as const;
        });
      deps.logger.info("run waiting for quota woken", { runId: wait.runId, woken });
      return woken;
    }),
  );
  return { waiting: waits.length, woken: outcomes.filter((woken) => woken !== "not_waiting").length };
}

/**
 * What the tenant set itself, in the shape of {@link QuotaLimits} (only the fields it set; costs as
 * shown, shared/quotas/limits.ts `costShown`): the `tenantSet` of `GET /v1/limits` and `PUT /v1/limits`.
 */
function tenantSetOf(stored: StoredLimits): LimitsView["tenantSet"] {
  const set = stored.limits as Record<string, number | string | undefined>;
  const only = (fields: Record<string, number | string | undefined>) =>
    Object.fromEntries(Object.entries(fields).filter(([, value]) => value !== undefined));
  return {
    tenant: only({
      runsPerMinute: set.tenantRunsPerMinute,
      concurrentRuns: set.tenantConcurrentRuns,
      tokensPerDay: set.tenantTokensPerDay,
      costPerDay: costShown(set.tenantCostPerDay as string | undefined),
    }),
    user: only({
      runsPerMinute: set.userRunsPerMinute,
      tokensPerDay: set.userTokensPerDay,
      costPerDay: costShown(set.userCostPerDay as string | undefined),
    }),
  };
}
