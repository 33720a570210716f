import { z } from "zod";
import { COST_LIMIT_AMOUNT, COST_LIMIT_RULE, COUNT_LIMIT_MAX, type QuotaLimits } from "../config/quotas.js";
import { amountOfMicro, microOf } from "../money/micro.js";
import type { LimitField, QuotaLimitStore, StoredLimits } from "../store/quota-limits.js";

/**
 * The limits in force for a tenant: the deploy's (QuotaConfig.limits, from the environment) with the
 * tenant's own set over them (`PUT /v1/limits`, `npm run tenant -- limits`), read from the table and
 * cached per container for {@link LIMITS_CACHE_MS}.
 */

/** How long a container keeps a tenant's limits before reading them again (ms): changes reach it within a minute. */
export const LIMITS_CACHE_MS = 60_000;

/** Tenants whose limits one container keeps at most (the oldest read is dropped first). */
const CACHE_ENTRIES = 1_000;

/** A positive whole number limit, or null to fall back to the deploy's. */
const countLimit = (max: number) => z.number().int().positive().max(max).nullable().optional();

/** A positive decimal cost limit (COST_LIMIT_AMOUNT) in the price table's currency, or null. */
const costLimit = z
  .string()
  .regex(COST_LIMIT_AMOUNT, COST_LIMIT_RULE)
  .refine((value) => /[1-9]/.test(value), "more than 0")
  .nullable()
  .optional();

/**
 * A change of a tenant's limits (the body of `PUT /v1/limits`, what `npm run tenant -- limits` sends):
 * each field optional (absent: unchanged), null to fall back to the deploy setting. The bounds are the
 * environment variables' (COUNT_LIMIT_MAX, COST_LIMIT_AMOUNT).
 */
export const LimitsChangeSchema = z
  .object({
    tenant: z
      .object({
        runsPerMinute: countLimit(COUNT_LIMIT_MAX.runsPerMinute),
        concurrentRuns: countLimit(COUNT_LIMIT_MAX.concurrentRuns),
        tokensPerDay: countLimit(COUNT_LIMIT_MAX.tokensPerDay),
        costPerDay: costLimit,
      })
      .strict()
      .optional(),
    user: z
      .object({
        runsPerMinute: countLimit(COUNT_LIMIT_MAX.runsPerMinute),
        tokensPerDay: countLimit(COUNT_LIMIT_MAX.tokensPerDay),
        costPerDay: costLimit,
      })
      .strict()
      .optional(),
  })
  .strict();

/** A change of a tenant's limits, see {@link LimitsChangeSchema}. */
export type LimitsChange = z.infer<typeof LimitsChangeSchema>;

/** The limits in force in the units the quotas count: runs, tokens, cost in micro-units; null: none. */
export interface EffectiveLimits {
  tenant: {
    runsPerMinute: number | null;
    concurrentRuns: number | null;
    tokensPerDay: number | null;
    costMicroPerDay: number | null;
  };
  user: { runsPerMinute: number | null; tokensPerDay: number | null; costMicroPerDay: number | null };
}

/**
 * A cost limit as every surface shows it, whatever form it was set in (a {@link COST_LIMIT_AMOUNT}, from
 * the environment or the table): its micro-units as shared/money/micro.ts writes them, `"2.5"` →
 * `"2.500000"`, `"0.00002"` → `"0.000020"`.
 */
export function costShown<T extends string | null | undefined>(cost: T): T {
  return (typeof cost === "string" ? amountOfMicro(Number(microOf(cost))) : cost) as T;
}

/**
 * The limits in force as the API shows them (costs as {@link costShown}): the deploy's with the
 * tenant's over them.
 */
export function limitsInForce(defaults: QuotaLimits, stored: StoredLimits["limits"]): QuotaLimits {
  const pick = <T>(field: LimitField, fallback: T): T => (stored[field] ?? fallback) as T;
  return {
    tenant: {
      runsPerMinute: pick("tenantRunsPerMinute", defaults.tenant.runsPerMinute),
      concurrentRuns: pick("tenantConcurrentRuns", defaults.tenant.concurrentRuns),
      tokensPerDay: pick("tenantTokensPerDay", defaults.tenant.tokensPerDay),
      costPerDay: costShown(pick("tenantCostPerDay", defaults.tenant.costPerDay)),
    },
    user: {
      runsPerMinute: pick("userRunsPerMinute", defaults.user.runsPerMinute),
      tokensPerDay: pick("userTokensPerDay", defaults.user.tokensPerDay),
      costPerDay: costShown(pick("userCostPerDay", defaults.user.costPerDay)),
    },
  };
}

/** {@link QuotaLimits} in the quotas' units (costs in micro-units). */
export function effectiveOf(limits: QuotaLimits): EffectiveLimits {
  const micro = (cost: string | null) => (cost === null ? null : Number(microOf(cost)));
  return {
    tenant: { ...limits.tenant, costMicroPerDay: micro(limits.tenant.costPerDay) },
    user: { ...limits.user, costMicroPerDay: micro(limits.user.costPerDay) },
  };
}

/** A {@link LimitsChange} as the store's fields (absent: unchanged; null: removed). */
export function fieldsOf(change: LimitsChange): Partial<Record<LimitField, number | string | null>> {
  const fields: Partial<Record<LimitField, number | string | null>> = {};
  const put = (field: LimitField, value: number | string | null | undefined) => {
    if (value !== undefined) fields[field] = value;
  };
  put("tenantRunsPerMinute", change.tenant?.runsPerMinute);
  put("tenantConcurrentRuns", change.tenant?.concurrentRuns);
  put("tenantTokensPerDay", change.tenant?.tokensPerDay);
  put("tenantCostPerDay", change.tenant?.costPerDay);
  put("userRunsPerMinute", change.user?.runsPerMinute);
  put("userTokensPerDay", change.user?.tokensPerDay);
  put("userCostPerDay", change.user?.costPerDay);
  return fields;
}

/**
 * A tenant's stored limits, read through a per-container cache ({@link LIMITS_CACHE_MS}). A write through
 * {@link LimitsReader.remember} updates this container's entry at once; other containers see it within
 * the cache's age.
 */
export class LimitsReader {
  private readonly cache = new Map<string, { limits: StoredLimits; readAt: number }>();

  constructor(
    private readonly store: QuotaLimitStore,
    private readonly now: () => number,
  ) {}

  /**
   * The tenant's stored limits (a read when the cached ones are older than a minute, or `fresh`).
   * @throws the store's errors
   */
  async get(tenantId: string, options: { fresh?: boolean } = {}): Promise<StoredLimits> {
    const cached = this.cache.get(tenantId);
    if (cached && !options.fresh && this.now() - cached.readAt < LIMITS_CACHE_MS) return cached.limits;
    const limits = await this.store.get(tenantId);
    this.remember(tenantId, limits);
    return limits;
  }

  /** Keeps `limits` as the tenant's, read now. */
  remember(tenantId: string, limits: StoredLimits): void {
    this.cache.delete(tenantId);
    this.cache.set(tenantId, { limits, readAt: this.now() });
    if (this.cache.size > CACHE_ENTRIES) this.cache.delete(this.cache.keys().next().value as string);
  }
}
