import type { DynamoDBDocumentClient } from "@aws-sdk/lib-dynamodb";
import type { QuotaConfig, QuotaLimits } from "../config/quotas.js";
import { QuotaUnavailableError } from "../domain-errors.js";
import {
  type CounterState,
  CounterStore,
  markerName,
  type ReservationMarker,
  totalName,
} from "../store/counters.js";
import { isStoreUnavailable } from "../store/errors.js";
import { QuotaLimitStore, type StoredLimits } from "../store/quota-limits.js";
import { QuotaWaitStore } from "../store/quota-waits.js";
import { type Admitted, admit, MinuteGuesses } from "./admission.js";
import { callHold, type HoldCall, type RunBounds, runHold } from "./holds.js";
import { type BudgetState, type Hold, METRIC, namesOf, quotaRef, runKey, sum, usedIn } from "./item.js";
import {
  type EffectiveLimits,
  effectiveOf,
  fieldsOf,
  type LimitsChange,
  LimitsReader,
  limitsInForce,
} from "./limits.js";
import { priceOf } from "./prices.js";
import { RunBudget, type RunBudgetDeps } from "./run-budget.js";
import { type UsageView, usageOf } from "./usage.js";

/**
 * The quotas of the application layer (docs/quotas.md), one per container: the limits in force per
 * tenant, admission at the door of every run and MCP tool call, each run's budget around its model calls,
 * the usage a caller may see, and a tenant's own limits. Built once in shared/deps.ts over the table.
 */
export class Quotas {
  readonly counters: CounterStore;
  readonly limitStore: QuotaLimitStore;
  readonly waits: QuotaWaitStore;
  private readonly reader: LimitsReader;
  private readonly minutes = new MinuteGuesses();
  /** Per tenant, the last day (its start, epoch ms) whose day before was seen with no run in flight. */
  private readonly quietBefore = new Map<string, number>();

  /**
   * @param config the quota section of the configuration and `model`, the model name calls are priced by
   * @param now the clock (epoch ms); tests inject one so windows and `Retry-After` do not depend on luck
   */
  constructor(
    client: DynamoDBDocumentClient,
    tableName: string,
    readonly config: QuotaConfig & { model: string },
    readonly now: () => number = Date.now,
  ) {
    this.counters = new CounterStore(client, tableName, { now });
    this.limitStore = new QuotaLimitStore(client, tableName);
    this.waits = new QuotaWaitStore(client, tableName);
    this.reader = new LimitsReader(this.limitStore, now);
  }

  /** The price of the model calls are made with, undefined when the table has none for it. */
  get price() {
    return priceOf(this.config.prices, this.config.model);
  }

  /**
   * The tenant's limits in force: as the API shows them, in the quotas' units, and what the tenant set.
   * @param fresh read the table even when this container read it within the last minute
   * @throws the store's errors
   */
  async limitsFor(
    tenantId: string,
    fresh = false,
  ): Promise<{ inForce: QuotaLimits; effective: EffectiveLimits; stored: StoredLimits }> {
    const stored = await this.reader.get(tenantId, { fresh });
    const inForce = limitsInForce(this.config.limits, stored.limits);
    return { inForce, effective: effectiveOf(inForce), stored };
  }

  /**
   * Admits a run or an MCP tool call (shared/quotas/admission.ts); with `firstCall`, the run's first
   * hold is taken in the same write: with `bounds`, its remaining calls' while the limits leave ten times
   * that (shared/quotas/holds.ts), else the first call's worst case (its estimated prompt and `max_tokens`).
   * @throws RateLimitedError; QuotaUnavailableError (the store failed: fail closed)
   */
  async admit(
    subject: { tenantId: string; userId: string; runId: string },
    options: {
      expiresAtSeconds: number;
      firstCall?: { promptTokens: number; maxTokens: number } | undefined;
      bounds?: RunBounds | undefined;
      /** The run id may have been admitted already, maybe the UTC day before (shared/quotas/admission.ts). */
      retried?: boolean | undefined;
    },
  ): Promise<Admitted> {
    const { effective } = await this.limitsOrFailClosed(subject.tenantId);
    const deps = {
      counters: this.counters,
      now: this.now,
      minutes: this.minutes,
      dayBefore: (tenantId: string, at: number) => this.inFlightBefore(tenantId, at),
    };
    const holds = options.firstCall
      ? this.firstHolds({ ...options.firstCall, cycle: 1 }, options.bounds)
      : [];
    return admit(deps, subject, effective, {
      expiresAtSeconds: options.expiresAtSeconds,
      holds,
      retried: options.retried,
    });
  }

  /**
   * The runs in flight the item of the UTC day before `at`'s still counts (shared/quotas/admission.ts
   * InFlightBefore): one read, until it is seen with none; after midnight no run is admitted into it, so
   * from then on it is not read again that day.
   */
  private async inFlightBefore(tenantId: string, at: number) {
    const today = quotaRef(tenantId, at).window.startMs;
    const ref = quotaRef(tenantId, today - 1);
    if (this.quietBefore.get(tenantId) === today) return { runs: 0, ref, state: EMPTY };
    const state = await this.counters.read(ref);
    const runs = Math.max(0, state.totals[TENANT_LIVE] ?? 0);
    if (runs === 0) {
      this.quietBefore.delete(tenantId);
      this.quietBefore.set(tenantId, today);
      if (this.quietBefore.size > 10_000)
        this.quietBefore.delete(this.quietBefore.keys().next().value as string);
    }
    return { runs, ref, state };
  }

  /** The holds admission tries for a run's first call (none when fewer than MIN_COMPLETION_TOKENS fit). */
  private firstHolds(call: HoldCall, bounds: RunBounds | undefined) {
    if (call.maxTokens < this.config.minCompletionTokens) return [];
    const own = { hold: callHold(this.price, call.promptTokens, call.maxTokens), shared: false };
    const wide = runHold(this.price, call, bounds);
    return wide ? [{ hold: wide, shared: true }, own] : [own];
  }

  /**
   * The budget of one run, from what its admission left (`initial`; a durable run starts from
   * {@link Quotas.admittedState}).
   */
  budget(
    subject: { tenantId: string; userId: string; runId: string },
    initial: BudgetState,
    options: {
      expiresAtSeconds: () => number;
      onStoreFailure: RunBudgetDeps["onStoreFailure"];
      bounds?: RunBounds | undefined;
      /** The day's totals admission's write left (Admitted.totals), so the first hold is sized without a wasted write. */
      seen?: Readonly<Record<string, number>> | undefined;
    },
  ): RunBudget {
    const deps: RunBudgetDeps = {
      counters: this.counters,
      now: this.now,
      limits: async () => (await this.limitsFor(subject.tenantId)).effective,
      model: this.config.model,
      price: this.price,
      minCompletionTokens: this.config.minCompletionTokens,
      onStoreFailure: options.onStoreFailure,
      bounds: options.bounds,
    };
    return new RunBudget(deps, subject, initial, options.expiresAtSeconds, options.seen);
  }

  /** What admission leaves for a run admitted at `admittedAt` (epoch ms) without a hold: marker version 1, its slot. */
  admittedState(admittedAt: number): BudgetState {
    const dayStartMs = quotaRef("", admittedAt).window.startMs;
    return { dayStartMs, version: 1, live: true, hold: null, consumed: false };
  }

  /**
   * Takes back what a run still holds (its slot in flight, an open hold) and removes its marker, in the
   * day's item of each of `days` (epoch ms) where it has one: a cancelled or failed run whose budget is
   * not at hand. With `used` (the run's user and what all its calls used, as its record shows it) the
   * part of the hold its calls spent since the marker's last write (`used` less what that write counted)
   * stays counted as used, at most the hold; without it the whole hold goes back. The run itself stays
   * counted (admission counted it). One read and at most one write per day; a marker already removed
   * (the run finished, or a release before) is left alone, so a retried release changes nothing.
   * @returns how many markers were removed
   */
  async releaseRun(
    tenantId: string,
    runId: string,
    days: readonly number[],
    used?: { userId: string; usage: Hold },
  ): Promise<number> {
    let released = 0;
    for (const day of new Set(days.map((at) => quotaRef(tenantId, at).window.startMs))) {
      const ref = quotaRef(tenantId, day);
      const marker = (await this.counters.read(ref)).markers.get(markerOf(runId));
      if (!marker) continue;
      const back = sum({}, Object.fromEntries(Object.entries(marker.open).map(([k, v]) => [k, -v])));
      const result = await this.counters.change(ref, {
        reservation: { key: runKey(runId), from: marker.version, to: null },
        add: used ? sum(back, spentUnder(marker, used)) : back,
      });
      if (result.kind === "applied") released += 1;
    }
    return released;
  }

  /**
   * The caller's usage today and, with `tenantWide`, the tenant's (GET /v1/usage; shared/quotas/usage.ts).
   * @throws the store's errors
   */
  async usage(subject: { tenantId: string; userId: string }, tenantWide: boolean): Promise<UsageView> {
    const now = this.now();
    const [{ inForce }, state, before] = await Promise.all([
      this.limitsFor(subject.tenantId),
      this.counters.read(quotaRef(subject.tenantId, now)),
      tenantWide ? this.inFlightBefore(subject.tenantId, now) : undefined,
    ]);
    return usageOf(namesOf(subject.userId), inForce, state, {
      now,
      currency: this.price?.currency ?? null,
      tenantWide,
      inFlightBefore: before?.runs ?? 0,
    });
  }

  /**
   * Changes the tenant's own limits (absent fields unchanged, null: back to the deploy's) and keeps them
   * as this container's at once.
   * @returns the limits in force afterwards and what the tenant set
   * @throws the store's errors
   */
  async setLimits(
    tenantId: string,
    change: LimitsChange,
    by: { userId: string; at: string },
  ): Promise<{ inForce: QuotaLimits; stored: StoredLimits }> {
    const stored = await this.limitStore.update(tenantId, fieldsOf(change), by);
    this.reader.remember(tenantId, stored);
    return { inForce: limitsInForce(this.config.limits, stored.limits), stored };
  }

  /** {@link limitsFor}, a store that did not answer being QUOTA_UNAVAILABLE (fail closed); other errors as they are. */
  private async limitsOrFailClosed(tenantId: string) {
    try {
      return await this.limitsFor(tenantId);
    } catch (error) {
      if (!isStoreUnavailable(error)) throw error;
      throw new QuotaUnavailableError(error);
    }
  }
}

/**
 * The used totals a released run's open hold keeps: what its calls used since the marker's last write,
 * at most what the hold holds (a marker without a hold keeps nothing).
 */
function spentUnder(
  marker: ReservationMarker,
  used: { userId: string; usage: Hold },
): Record<string, number> {
  // Only admission writes a marker without `counted` (nothing counted yet); a later one without it was
  // written before markers kept it, and what its run had counted is unknown: the whole hold goes back.
  if (!marker.counted && marker.version > 1) return {};
  const names = namesOf(used.userId);
  const counted = usedIn(marker.counted);
  const clamp = (amount: number, held: number | undefined) => Math.max(0, Math.min(amount, held ?? 0));
  const tokens = clamp(used.usage.tokens - counted.tokens, marker.open[names.tenant.tokensHeld]);
  const costMicro = clamp(used.usage.costMicro - counted.costMicro, marker.open[names.tenant.costHeld]);
  const amounts: Record<string, number> = {};
  for (const scope of [names.tenant, names.user]) {
    amounts[scope.tokens] = tokens;
    amounts[scope.cost] = costMicro;
  }
  return amounts;
}

/** An item that is not there. */
const EMPTY: CounterState = { totals: {}, markers: new Map() };

/** The tenant's runs in flight, as a total's name. */
const TENANT_LIVE = totalName({ kind: "tenant" }, METRIC.live);

/** The attribute name of a run's marker. */
function markerOf(runId: string): string {
  return markerName(runKey(runId));
}
