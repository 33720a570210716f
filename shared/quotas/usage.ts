import type { QuotaLimits } from "../config/quotas.js";
import { amountOfMicro } from "../money/micro.js";
import type { CounterState } from "../store/counters.js";
import { type namesOf, quotaRef, runsThisMinute, type ScopeNames } from "./item.js";

/**
 * One scope's usage (GET /v1/usage): the UTC day's tokens (`used` settled, `reserved` held by calls in
 * flight, `limit`), cost (`used`, settled, and `limit`, both as every cost is shown: shared/money/micro.ts;
 * `currency`: the price table's, null without prices) and runs started; the UTC minute's runs and limit.
 * The tenant's also has `inFlight`, its runs in flight and the limit. Limits are the ones in force
 * (null: none).
 */
export interface ScopeUsage {
  day: {
    start: string;
    tokens: { used: number; reserved: number; limit: number | null };
    cost: { used: string; limit: string | null; currency: string | null };
    runs: number;
  };
  minute: { start: string; runs: number; limit: number | null };
}

/** The body of GET /v1/usage: the caller's usage, and the tenant's (null without billing:read). */
export interface UsageView {
  user: ScopeUsage;
  tenant: (ScopeUsage & { inFlight: { runs: number; limit: number | null } }) | null;
}

/**
 * The usage view of a quota item's state at `now` (see {@link UsageView}), as a prune would leave it: a
 * run whose marker has expired (it crashed: a synchronous run's marker expires when the run reads
 * `abandoned`, shared/runs/abandoned.ts) is no longer in flight and holds nothing, though the prune that
 * takes its slot and hold back from the item itself waits until a limit is next hit. The tenant's runs in
 * flight include `inFlightBefore`, those the day before's item still counts (shared/quotas/admission.ts).
 * `limits` are as shown (shared/quotas/limits.ts `limitsInForce`), and shown as they are.
 */
export function usageOf(
  names: ReturnType<typeof namesOf>,
  limits: QuotaLimits,
  stored: CounterState,
  context: { now: number; currency: string | null; tenantWide: boolean; inFlightBefore?: number },
): UsageView {
  const { now } = context;
  const state = withoutLapsed(stored, now);
  const user = scopeUsage(names.user, state, now, {
    runsPerMinute: limits.user.runsPerMinute,
    tokensPerDay: limits.user.tokensPerDay,
    costPerDay: limits.user.costPerDay,
    currency: context.currency,
  });
  if (!context.tenantWide) return { user, tenant: null };
  const tenant = scopeUsage(names.tenant, state, now, { ...limits.tenant, currency: context.currency });
  const runs = (state.totals[names.tenant.live] ?? 0) + (context.inFlightBefore ?? 0);
  const inFlight = { runs, limit: limits.tenant.concurrentRuns };
  return { user, tenant: { ...tenant, inFlight } };
}

/** `state` with the open amounts (slot in flight, hold) of the markers expired at epoch ms `now` taken back. */
function withoutLapsed(state: CounterState, now: number): CounterState {
  const nowSeconds = Math.floor(now / 1000);
  const totals = { ...state.totals };
  for (const marker of state.markers.values()) {
    // The store's prune takes back exactly these (shared/store/counters.ts `prune`).
    if (marker.expiresAtSeconds > nowSeconds) continue;
    for (const [total, amount] of Object.entries(marker.open)) totals[total] = (totals[total] ?? 0) - amount;
  }
  return { ...state, totals };
}

/** One scope's {@link ScopeUsage}. */
function scopeUsage(
  names: ScopeNames,
  state: CounterState,
  now: number,
  limits: {
    runsPerMinute: number | null;
    tokensPerDay: number | null;
    costPerDay: string | null;
    currency: string | null;
  },
): ScopeUsage {
  const total = (name: string) => state.totals[name] ?? 0;
  const day = quotaRef("", now).window;
  return {
    day: {
      start: new Date(day.startMs).toISOString(),
      tokens: {
        used: total(names.tokens) - total(names.tokensHeld),
        reserved: total(names.tokensHeld),
        limit: limits.tokensPerDay,
      },
      cost: {
        used: amountOfMicro(total(names.cost) - total(names.costHeld)),
        limit: limits.costPerDay,
        currency: limits.currency,
      },
      runs: total(names.runs),
    },
    minute: {
      start: new Date(Math.floor(now / 60_000) * 60_000).toISOString(),
      runs: runsThisMinute(state.totals[names.minute], now),
      limit: limits.runsPerMinute,
    },
  };
}
