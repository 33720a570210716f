import type { BudgetCall, BudgetDecision, CallCost, ModelBudget, QuotaRefusal } from "../agent/budget.js";
import type { ModelUsage } from "../agent/model.js";
import type { ModelPrice } from "../config/quotas.js";
import { QUOTA_UNAVAILABLE_MESSAGE, QuotaUnavailableError } from "../domain-errors.js";
import { type CounterChange, type CounterStore, DAY_MS, markerName } from "../store/counters.js";
import { holdLimits, secondsToDayEnd } from "./admission.js";
import { callHold, holdConditions, RUN_HOLD_SHARE, type RunBounds, runHold, tokensLeftIn } from "./holds.js";
import {
  type BudgetState,
  countedOf,
  type Hold,
  holdAmounts,
  NOTHING,
  namesOf,
  openOf,
  quotaRef,
  runKey,
  settleAmounts,
  sum,
} from "./item.js";
import type { EffectiveLimits } from "./limits.js";
import { affordableTokens, callCostMicro, noPriceNote } from "./prices.js";
import { refusalOf } from "./refusal.js";

/**
 * The quota budget of one run (the loop's `ModelBudget`, shared/agent/budget.ts; docs/quotas.md
 * "Reservations"). Before every model call, inside its step: when what is left of the run's open hold
 * covers the call's worst case (the prompt's estimate + at least MIN_COMPLETION_TOKENS), the call is
 * granted from it without a write, `max_tokens` lowered to what is left. Otherwise ONE conditional write
 * to the tenant's quota item of the day settles the open hold (to what its calls used) and holds anew
 * under the day's token and cost limits of the user and the tenant: the run's remaining calls' worst case
 * while that is at most a tenth of what the limits leave (shared/quotas/holds.ts), else the call's own.
 * The run's marker moves one version per write, so a retried step meets it already moved and holds
 * nothing twice. When the limits do not cover the call, the item the refusal returns says what is left:
 * `max_tokens` is lowered to fit (at least MIN_COMPLETION_TOKENS), else the open hold is settled alone
 * and the call refused. {@link finish} settles the open hold and frees the run's slot in flight.
 */

/** What a run's budget needs: the counters, the clock, the tenant's limits, the model's price and the minimum. */
export interface RunBudgetDeps {
  counters: CounterStore;
  now: () => number;
  limits: () => Promise<EffectiveLimits>;
  model: string;
  price: ModelPrice | undefined;
  minCompletionTokens: number;
  /** The run's own bounds (a hold covers at most its remaining calls); absent: one call's hold a write. */
  bounds?: RunBounds | undefined;
  /**
   * A store failure: `refuse` the call (`QUOTA_UNAVAILABLE`; a synchronous run then ends
   * `quota_exceeded`), or `throw` {@link QuotaUnavailableError} (a durable step is retried).
   */
  onStoreFailure: "refuse" | "throw";
}

/** Writes one reservation may take (a wrong version adopted, a prune, a smaller `max_tokens`, a lost marker). */
const ATTEMPTS = 5;

/** See the module doc. */
export class RunBudget implements ModelBudget {
  private state: BudgetState;
  private readonly names: ReturnType<typeof namesOf>;

  /**
   * @param initial what admission left (marker version 1 and the run's slot in flight, maybe a hold)
   * @param expiresAtSeconds when the run's marker may be pruned if it never ends (epoch s), asked at every write
   * @param seen the day's totals as admission's write left them, if known
   */
  constructor(
    private readonly deps: RunBudgetDeps,
    private readonly subject: { tenantId: string; userId: string; runId: string },
    initial: BudgetState,
    private readonly expiresAtSeconds: () => number,
    seen?: Readonly<Record<string, number>>,
  ) {
    this.state = initial;
    this.names = namesOf(subject.userId);
    this.seen = seen;
  }

  /** A call's cost from its usage: the price table's, or null with a note naming the unpriced model. */
  costOf(usage: ModelUsage): CallCost {
    const { price, model } = this.deps;
    if (!price) return { micro: null, note: noPriceNote(model) };
    return { micro: callCostMicro(price, usage), currency: price.currency };
  }

  /** Rebuilds what the run holds from a step's decision, and the usage of the call it made (spent from the hold). */
  observe(decision: BudgetDecision, usage: ModelUsage | null): void {
    const state = decision.state as BudgetState;
    const spent = state.spent ?? NOTHING;
    if (!usage) {
      this.state = { ...state, spent };
      return;
    }
    const cost = this.deps.price ? callCostMicro(this.deps.price, usage) : 0;
    this.state = {
      ...state,
      spent: { tokens: spent.tokens + usage.totalTokens, costMicro: spent.costMicro + cost },
    };
    this.used = { tokens: this.used.tokens + usage.totalTokens, costMicro: this.used.costMicro + cost };
  }

  /**
   * What every call of the run used, as observed (a replay observes them all again): each write records
   * it in the marker, so a cancel that stops the run knows which part of the open hold its calls spent.
   */
  private used: Hold = NOTHING;

  /** See the module doc; never throws unless `onStoreFailure` is `throw`. */
  async reserve(call: BudgetCall): Promise<BudgetDecision> {
    try {
      return await this.reserveOnce(call);
    } catch (error) {
      if (this.deps.onStoreFailure === "throw") throw new QuotaUnavailableError(error);
      const refusal: QuotaRefusal = {
        code: "QUOTA_UNAVAILABLE",
        limit: null,
        quota: null,
        used: null,
        unit: null,
        windowEndsAt: null,
        retryAfterSeconds: null,
        message: QUOTA_UNAVAILABLE_MESSAGE.replace("nothing was started", "no further model call was made"),
      };
      return { kind: "refused", refusal, state: this.state };
    }
  }

  /**
   * Settles the run's last call and frees its slot in flight, removing its marker (one write; nothing
   * for a run that holds nothing, or whose marker is gone: pruned, or finished before).
   * @throws the store's errors (a durable step retries them; a synchronous run logs them)
   */
  async finish(): Promise<void> {
    const { state } = this;
    if (state.version === 0) return;
    await this.deps.counters.change(quotaRef(this.subject.tenantId, state.dayStartMs), {
      reservation: { key: runKey(this.subject.runId), from: state.version, to: null },
      add: sum(this.settlement(), state.live ? { [this.names.tenant.live]: -1 } : {}),
    });
    this.state = { ...state, version: 0, live: false, hold: null, spent: NOTHING };
  }

  /** {@link reserve} without the store-failure mapping. */
  private async reserveOnce(call: BudgetCall): Promise<BudgetDecision> {
    const now = this.deps.now();
    const { state, deps } = this;
    const granted = this.fromHold(call, now);
    if (granted) return granted;
    const today = quotaRef(this.subject.tenantId, now);
    if (state.version > 0 && state.dayStartMs !== today.window.startMs) await this.closeDay();
    const limits = holdLimits(this.names, await deps.limits());
    let maxTokens = call.maxTokens;
    // The run's remaining calls while the limits leave ten times that; else (refused) the call's own.
    let wide = this.wideHold(call, limits);
    for (let attempt = 0; attempt < ATTEMPTS; attempt += 1) {
      const hold = wide ?? callHold(deps.price, call.promptTokens, maxTokens);
      const result = await deps.counters.change(today, this.holdChange(hold, limits, wide !== null));
      this.seen = result.kind === "applied" ? result.totals : result.state.totals;
      const version = this.state.version + 1;
      if (result.kind === "applied" || result.marker?.version === version) {
        this.lostUsage = undefined;
        // A retried step meets its own earlier write: what that write held is what the call may spend.
        const held = result.kind === "applied" ? hold : this.heldBy(result.marker?.open ?? {}, hold);
        const granted = Math.min(maxTokens, held.tokens - call.promptTokens);
        const dayStartMs = today.window.startMs;
        const next = { dayStartMs, version, live: true, hold: held, spent: NOTHING, consumed: false };
        return { kind: "granted", maxTokens: granted, state: next };
      }
      // A marker other than the one this run last wrote: adopt it. A run that holds no marker (version 0:
      // its day just changed, or a prune took it) and finds none was refused by a limit, as any other.
      const found = result.marker?.version ?? 0;
      if (found !== this.state.version) {
        if (found === 0 && this.state.version === 1) await this.closeAdmissionBefore(today.window.startMs);
        this.adopt(found, result.marker?.open ?? {});
        continue;
      }
      if (result.failed.length === 0) continue;
      if (wide) {
        wide = null;
        continue;
      }
      if ((await deps.counters.prune(today, result.state)) > 0) continue;
      const fit = this.fit(result.state.totals, limits, call.promptTokens);
      if (fit.tokens >= deps.minCompletionTokens && fit.tokens < maxTokens) {
        maxTokens = fit.tokens;
        continue;
      }
      return this.refuse(fit.limit, result.state.totals, now);
    }
    throw new Error(`The reservation of ${call.step} kept being refused.`);
  }

  /** The hold a marker's open amounts record (`fallback` when it records none). */
  private heldBy(open: Readonly<Record<string, number>>, fallback: Hold): Hold {
    const tokens = open[this.names.tenant.tokensHeld];
    if (tokens === undefined) return fallback;
    return { tokens, costMicro: open[this.names.tenant.costHeld] ?? 0 };
  }

  /** The amounts that settle the open hold to what its calls used (none without a hold). */
  private settlement(): Record<string, number> {
    const { hold, spent } = this.state;
    if (!hold) return {};
    return settleAmounts(this.names, hold, spent ?? NOTHING);
  }

  /**
   * The hold of the run's remaining calls to try first, null when it is no bigger than the call's own or
   * when the totals this run last saw already leave less than ten times it (a wasted write otherwise).
   */
  private wideHold(call: BudgetCall, limits: Readonly<Record<string, number>>): Hold | null {
    const wide = runHold(this.deps.price, call, this.deps.bounds);
    if (!wide || !this.seen) return wide;
    const settled = sum(this.seen, this.settlement());
    const amounts = holdAmounts(this.names, wide);
    const fits = Object.entries(limits).every(
      ([total, limit]) => (amounts[total] ?? 0) * RUN_HOLD_SHARE <= limit - (settled[total] ?? 0),
    );
    return fits ? wide : null;
  }

  /** The totals of the day's item as this run's last write saw them (none yet in this invocation). */
  private seen: Readonly<Record<string, number>> | undefined;

  /** The call granted from the open hold, without a write, when what is left of it covers the call today. */
  private fromHold(call: BudgetCall, now: number): BudgetDecision | undefined {
    const { state, deps } = this;
    if (!state.hold || state.consumed || state.dayStartMs !== Math.floor(now / DAY_MS) * DAY_MS) return;
    const fits = tokensLeftIn(deps.price, state.hold, state.spent ?? NOTHING, call.promptTokens);
    if (fits < deps.minCompletionTokens) return;
    return { kind: "granted", maxTokens: Math.min(call.maxTokens, fits), state };
  }

  /**
   * One write: settle the open hold, hold `hold` (null: settle only), limits as conditions (`shared`: the
   * hold at most a tenth of what they leave, shared/quotas/holds.ts).
   */
  private holdChange(hold: Hold | null, limits: Record<string, number>, shared = false): CounterChange {
    const { state, names } = this;
    const settle = this.lostUsage ?? this.settlement();
    const holdAdd = hold ? holdAmounts(names, hold) : {};
    const slot = state.version === 0 ? { [names.tenant.live]: 1 } : {};
    const delta = sum(sum(settle, holdAdd), slot);
    return {
      reservation: {
        key: runKey(this.subject.runId),
        from: state.version === 0 ? null : state.version,
        to: {
          version: state.version + 1,
          open: openOf(names, true, hold),
          expiresAtSeconds: this.expiresAtSeconds(),
          counted: countedOf(this.used),
        },
      },
      add: delta,
      conditions: hold ? holdConditions(names, limits, delta, hold, shared) : [],
    };
  }

  /** Usage of calls whose hold a prune took back: added as used (the marker that held it is gone). */
  private lostUsage: Record<string, number> | undefined;

  /**
   * The marker is not at the version this run expected: gone (pruned after its expiry, or its day's item
   * expired) or at another (a durable run resuming what admission wrote). Go on from what it is: a gone
   * marker is made again (the slot counted again) and what the calls under its hold spent added as used;
   * a hold adopted from another version is settled by the next write as unspent, and grants nothing.
   */
  private adopt(version: number, open: Readonly<Record<string, number>>): void {
    const spent = this.state.hold ? (this.state.spent ?? NOTHING) : NOTHING;
    this.lostUsage = undefined;
    if (version === 0) {
      this.lostUsage = {};
      for (const scope of [this.names.tenant, this.names.user]) {
        if (spent.tokens !== 0) this.lostUsage[scope.tokens] = spent.tokens;
        if (spent.costMicro !== 0) this.lostUsage[scope.cost] = spent.costMicro;
      }
    }
    const tokens = open[this.names.tenant.tokensHeld];
    const hold = version > 0 && tokens ? { tokens, costMicro: open[this.names.tenant.costHeld] ?? 0 } : null;
    const live = version > 0;
    this.state = { ...this.state, version, live, hold, spent: NOTHING, consumed: hold !== null };
  }

  /**
   * Gives back what admission's marker (version 1) holds in the item of the day before `dayStartMs`, if it
   * is there: a durable run's budget starts from its record's start, which is read after its admission, so
   * a run admitted in a day's last instant may be started in the next day with its marker in the first.
   * One read (and one write when the marker is found); a failure leaves the marker to expire.
   */
  private async closeAdmissionBefore(dayStartMs: number): Promise<void> {
    const ref = quotaRef(this.subject.tenantId, dayStartMs - 1);
    const key = runKey(this.subject.runId);
    try {
      const marker = (await this.deps.counters.read(ref)).markers.get(markerName(key));
      if (marker?.version !== 1) return;
      const back = Object.fromEntries(Object.entries(marker.open).map(([total, amount]) => [total, -amount]));
      await this.deps.counters.change(ref, { reservation: { key, from: 1, to: null }, add: back });
    } catch {
      // The marker expires with its run (its deadline plus its longest wait) and is pruned then.
    }
  }

  /** Closes the marker of an earlier day's item (settle, free the slot); the next write opens today's. */
  private async closeDay(): Promise<void> {
    await this.finish().catch(() => undefined);
    this.lostUsage = undefined;
    this.state = { ...this.state, version: 0, live: false, hold: null, spent: NOTHING, consumed: false };
  }

  /**
   * How many completion tokens the limits leave for a prompt of `promptTokens` once the open hold is
   * settled, and the limit that leaves the fewest.
   */
  private fit(
    totals: Readonly<Record<string, number>>,
    limits: Record<string, number>,
    promptTokens: number,
  ): { tokens: number; limit: string } {
    const settled = sum(totals, this.lostUsage ?? this.settlement());
    let best = { tokens: Number.POSITIVE_INFINITY, limit: "" };
    for (const [total, limit] of Object.entries(limits)) {
      const left = limit - (settled[total] ?? 0);
      const isCost = total === this.names.tenant.cost || total === this.names.user.cost;
      const price = this.deps.price;
      const tokens = isCost ? (price ? affordableTokens(price, left, promptTokens) : 0) : left - promptTokens;
      if (tokens < best.tokens) best = { tokens: Math.max(0, tokens), limit: total };
    }
    return best;
  }

  /** Settles the open hold alone, then refuses the call over `total`'s limit. */
  private async refuse(
    total: string,
    totals: Readonly<Record<string, number>>,
    now: number,
  ): Promise<BudgetDecision> {
    const { state } = this;
    let next = state;
    if (state.hold || this.lostUsage) {
      const settledTotals = sum(totals, this.lostUsage ?? this.settlement());
      const result = await this.deps.counters.change(
        quotaRef(this.subject.tenantId, now),
        this.holdChange(null, {}),
      );
      if (result.kind === "applied" || result.marker?.version === state.version + 1) {
        next = {
          ...state,
          version: state.version + 1,
          live: true,
          hold: null,
          spent: NOTHING,
          consumed: false,
        };
        this.lostUsage = undefined;
      }
      return this.refusal(total, settledTotals, next, now);
    }
    return this.refusal(total, totals, next, now);
  }

  /** The refusal of a call over `total`'s limit, with the totals as they stand once settled. */
  private async refusal(
    total: string,
    settled: Readonly<Record<string, number>>,
    next: BudgetState,
    now: number,
  ): Promise<BudgetDecision> {
    const limits = await this.deps.limits();
    const refusal = refusalOf(this.names, limits, total, settled, {
      currency: this.deps.price?.currency ?? null,
      retryAfterSeconds: secondsToDayEnd(this.subject.tenantId, now),
      windowEndsAt: new Date(quotaRef(this.subject.tenantId, now).window.endMs).toISOString(),
    });
    return { kind: "refused", refusal, state: next };
  }
}
