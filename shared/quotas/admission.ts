import { type AdmissionPolicy, QuotaUnavailableError, RateLimitedError } from "../domain-errors.js";
import type { CounterRef, CounterState, CounterStore, TotalCondition } from "../store/counters.js";
import { markerName, secondsUntilEnd } from "../store/counters.js";
import { isStoreUnavailable } from "../store/errors.js";
import { holdConditions } from "./holds.js";
import {
  type BudgetState,
  type Hold,
  holdAmounts,
  joinChange,
  minuteChange,
  minuteOf,
  namesOf,
  openOf,
  quotaRef,
  runKey,
  runsThisMinute,
  totalIn,
  within,
} from "./item.js";
import type { EffectiveLimits } from "./limits.js";

/**
 * Admission (docs/quotas.md "Admission"): at the door of `POST /v1/runs` and MCP `tools/call`, ONE
 * conditional write to the tenant's quota item of the day counts the run (runs today, this minute's
 * runs of the user and of the tenant, runs in flight) and creates its marker, on condition that no limit
 * is reached; a run's first hold (shared/quotas/holds.ts) may be taken in the same write. Refused: {@link RateLimitedError}
 * and nothing is written. The minute slots are SET when a new minute starts and ADDed to within it; which
 * of the two a write does is guessed from the last slot this container saw, and a wrong guess is refused
 * by its own condition and made right from the item the refusal returns (one more request, never a
 * wrong count).
 */

/**
 * What admission needs: the counters, the limits in force, the clock, the container's minute guesses and
 * (with a limit on the runs in flight) the slots still held in the day before's item.
 */
export interface AdmissionDeps {
  counters: CounterStore;
  now: () => number;
  minutes: MinuteGuesses;
  dayBefore?: InFlightBefore | undefined;
}

/**
 * The runs in flight that the item of the UTC day before `now`'s still counts (runs admitted then that
 * have not ended, nor taken a hold in the new day since, which moves their slot: shared/quotas/run-budget.ts),
 * with its ref and state so a crashed run's slot can be pruned there.
 */
export type InFlightBefore = (
  tenantId: string,
  now: number,
) => Promise<{ runs: number; ref: CounterRef; state: CounterState }>;

/** The last minute (epoch minutes) each slot was seen holding, per tenant and slot (bounded). */
export class MinuteGuesses {
  private readonly seen = new Map<string, number>();
  /** True when the slot is believed to hold an earlier minute than `minute` (a SET starts it). */
  fresh(tenantId: string, slot: string, minute: number): boolean {
    return this.seen.get(`${tenantId}\n${slot}`) !== minute;
  }
  /** Remembers that the slot holds `minute`. */
  saw(tenantId: string, slot: string, minute: number): void {
    const key = `${tenantId}\n${slot}`;
    this.seen.delete(key);
    this.seen.set(key, minute);
    if (this.seen.size > 10_000) this.seen.delete(this.seen.keys().next().value as string);
  }
}

/**
 * A run admitted: its budget's state (marker version 1, a slot in flight, the hold if any), the
 * policies' remainders, and the day's totals as the admission's write left them.
 */
export interface Admitted {
  state: BudgetState;
  policies: AdmissionPolicy[];
  totals: Readonly<Record<string, number>>;
}

/** Why a condition of an admission write is there. */
type Purpose = "user-minute" | "tenant-minute" | "user-fresh" | "tenant-fresh" | "concurrent" | "hold";

/** Attempts of one admission (wrong minute guesses, a prune, holds narrowed or dropped) before it fails closed. */
const ATTEMPTS = 5;

/**
 * A hold admission may take, in order of preference: `shared` (the run's remaining calls) only while it
 * is at most a tenth of what the limits leave; the last (the first call's own) within them.
 */
export interface AdmissionHold {
  hold: Hold;
  shared: boolean;
}

/**
 * Admits the run `subject.runId` (see the module doc). A run id admitted before (a retried start) is
 * admitted again without counting twice: in the same UTC day by its marker there, and, with `retried`,
 * in the day before too (a start admitted just before midnight and retried after it). Of `holds`, the
 * first the day's token and cost limits cover is taken; when none is, the run is admitted holding
 * nothing (its first model call will find no budget).
 * @param options.expiresAtSeconds when the run's marker may be pruned if it never ends (epoch s)
 * @param options.retried the run id may have been admitted already (a durable start under an
 *   Idempotency-Key): the day before's item is read for its marker (one more request), and a marker
 *   found there is the admission, nothing counted again (`policies` then empty: none was checked)
 * @throws RateLimitedError over a runs-per-minute or runs-in-flight limit; QuotaUnavailableError when the
 *   store fails or keeps refusing
 */
export async function admit(
  deps: AdmissionDeps,
  subject: { tenantId: string; userId: string; runId: string },
  limits: EffectiveLimits,
  options: {
    expiresAtSeconds: number;
    holds?: readonly AdmissionHold[] | undefined;
    retried?: boolean | undefined;
  },
): Promise<Admitted> {
  let holds = options.holds ?? [];
  try {
    let before = await inFlightBefore(deps, subject.tenantId, limits);
    const earlier = options.retried ? await admittedDayBefore(deps, subject, before) : undefined;
    if (earlier) return earlier;
    for (let attempt = 0; attempt < ATTEMPTS; attempt += 1) {
      const now = deps.now();
      const carried = before?.runs ?? 0;
      const write = admissionWrite(deps, subject, limits, { ...options, hold: holds[0], carried }, now);
      const ref = quotaRef(subject.tenantId, now);
      const result = await deps.counters.change(ref, write.change);
      if (result.kind === "applied") return write.admitted(result.totals, now);
      learnSlots(deps, subject, result.state.totals, now);
      if (result.marker) return write.admitted(result.state.totals, now, result.marker.version);
      const purposes = new Set(result.failed.map((condition) => write.purposes.get(condition)));
      if (purposes.has("user-minute") || purposes.has("tenant-minute")) {
        throw write.refusal(
          purposes.has("user-minute") ? "user-minute" : "tenant-minute",
          result.state.totals,
          now,
        );
      }
      if (purposes.has("concurrent") && (await deps.counters.prune(ref, result.state)) === 0) {
        // A crashed run of the day before may hold a slot there: prune it and count again.
        if (!before || (await deps.counters.prune(before.ref, before.state)) === 0)
          throw write.refusal("tenant-concurrent", result.state.totals, now);
        before = await inFlightBefore(deps, subject.tenantId, limits);
      }
      if (purposes.has("hold")) holds = holds.slice(1);
    }
  } catch (error) {
    // Only a store that did not answer is QUOTA_UNAVAILABLE (transient, retry); any other error (a missing
    // table, a bug) propagates as itself: the run is refused either way, nothing was started.
    if (error instanceof RateLimitedError || !isStoreUnavailable(error)) throw error;
    throw new QuotaUnavailableError(error);
  }
  throw new QuotaUnavailableError(new Error(`Admission of ${subject.runId} kept being refused.`));
}

/**
 * The day before's runs in flight when the tenant's runs in flight are limited (undefined otherwise): at
 * midnight UTC the day's item starts from none, while the runs admitted just before are still in flight.
 */
async function inFlightBefore(deps: AdmissionDeps, tenantId: string, limits: EffectiveLimits) {
  if (limits.tenant.concurrentRuns === null || !deps.dayBefore) return undefined;
  return deps.dayBefore(tenantId, deps.now());
}

/**
 * The admission a retried run already has in the item of the UTC day before (its marker there), read
 * from `before` when admission read that item, else with one read; undefined when it has none.
 */
async function admittedDayBefore(
  deps: AdmissionDeps,
  subject: { tenantId: string; runId: string },
  before: Awaited<ReturnType<InFlightBefore>> | undefined,
): Promise<Admitted | undefined> {
  const ref = quotaRef(subject.tenantId, quotaRef(subject.tenantId, deps.now()).window.startMs - 1);
  const state =
    before?.ref.window.startMs === ref.window.startMs ? before.state : await deps.counters.read(ref);
  const marker = state.markers.get(markerName(runKey(subject.runId)));
  if (!marker) return undefined;
  const held = {
    dayStartMs: ref.window.startMs,
    version: marker.version,
    live: true,
    hold: null,
    consumed: false,
  };
  return { state: held, policies: [], totals: state.totals };
}

/** Remembers the minute each of the subject's slots holds, from an item's totals. */
function learnSlots(
  deps: AdmissionDeps,
  subject: { tenantId: string; userId: string },
  totals: Readonly<Record<string, number>>,
  now: number,
): void {
  const names = namesOf(subject.userId);
  const epochMinute = Math.floor(now / 60_000);
  const { minute } = minuteOf(now);
  for (const slot of [names.tenant.minute, names.user.minute]) {
    const value = totals[slot];
    if (value === undefined) continue;
    const held = Math.floor(value / 1_000_000);
    deps.minutes.saw(subject.tenantId, slot, epochMinute - (minute - held));
  }
}

/** The change of one admission attempt, what each condition is for, and how to read its outcome. */
function admissionWrite(
  deps: AdmissionDeps,
  subject: { tenantId: string; userId: string; runId: string },
  limits: EffectiveLimits,
  options: { expiresAtSeconds: number; hold?: AdmissionHold | undefined; carried: number },
  now: number,
) {
  const names = namesOf(subject.userId);
  const { base } = minuteOf(now);
  const epochMinute = Math.floor(now / 60_000);
  const purposes = new Map<TotalCondition, Purpose>();
  const tag = (purpose: Purpose, conditions: TotalCondition[]) => {
    for (const condition of conditions) purposes.set(condition, purpose);
    return conditions;
  };
  const minutePart = (slot: string, scope: "user" | "tenant", limit: number | null) => {
    const fresh = deps.minutes.fresh(subject.tenantId, slot, epochMinute);
    const part = minuteChange(slot, fresh, base, limit);
    const [first, ...rest] = part.conditions;
    if (first) tag(`${scope}-fresh` as Purpose, [first]);
    tag(`${scope}-minute` as Purpose, rest);
    return part;
  };
  const hold = options.hold?.hold;
  const holdAdd = hold ? holdAmounts(names, hold) : {};
  const counted = { [names.tenant.runs]: 1, [names.user.runs]: 1, [names.tenant.live]: 1 };
  const live = limits.tenant.concurrentRuns;
  const change = joinChange(
    {
      key: runKey(subject.runId),
      from: null,
      to: { version: 1, open: openOf(names, true, hold ?? null), expiresAtSeconds: options.expiresAtSeconds },
    },
    [
      minutePart(names.tenant.minute, "tenant", limits.tenant.runsPerMinute),
      minutePart(names.user.minute, "user", limits.user.runsPerMinute),
      { add: { ...counted, ...holdAdd } },
      {
        conditions: tag(
          "concurrent",
          live === null ? [] : within({ [names.tenant.live]: live - options.carried }, counted),
        ),
      },
      {
        conditions: tag(
          "hold",
          hold
            ? holdConditions(names, holdLimits(names, limits), holdAdd, hold, options.hold?.shared ?? false)
            : [],
        ),
      },
    ],
  );
  const policiesAt = (totals: Readonly<Record<string, number>>, at: number) =>
    admissionPolicies(names, limits, totals, at, options.carried);
  return {
    change,
    purposes,
    admitted(totals: Record<string, number>, at: number, version = 1): Admitted {
      learnSlots(deps, subject, totals, at);
      const dayStartMs = quotaRef(subject.tenantId, at).window.startMs;
      const state = { dayStartMs, version, live: true, hold: hold ?? null, consumed: false };
      return { state, policies: policiesAt(totals, at), totals };
    },
    refusal(id: AdmissionPolicy["id"], totals: Readonly<Record<string, number>>, at: number) {
      const policies = policiesAt({ ...totals }, at);
      const refused = policies.find((policy) => policy.id === id) as AdmissionPolicy;
      const retryAfter = refused.resetSeconds ?? 1;
      return new RateLimitedError(
        { ...refused, remaining: 0 },
        policies,
        retryAfter,
        // The runs the policy counts, not its limit: a limit lowered mid-minute may be far below them.
        countedBy(names, id, totals, at, options.carried),
      );
    },
  };
}

/** The token and cost limits of a hold, by total name. */
export function holdLimits(
  names: ReturnType<typeof namesOf>,
  limits: EffectiveLimits,
): Record<string, number> {
  const entries: Array<[string, number | null]> = [
    [names.tenant.tokens, limits.tenant.tokensPerDay],
    [names.user.tokens, limits.user.tokensPerDay],
    [names.tenant.cost, limits.tenant.costMicroPerDay],
    [names.user.cost, limits.user.costMicroPerDay],
  ];
  return Object.fromEntries(entries.filter((entry): entry is [string, number] => entry[1] !== null));
}

/**
 * Every admission policy in force, with what is left of it given the item's totals at `now` and the runs
 * in flight the day before's item still counts (`carried`).
 */
export function admissionPolicies(
  names: ReturnType<typeof namesOf>,
  limits: EffectiveLimits,
  totals: Readonly<Record<string, number>>,
  now: number,
  carried = 0,
): AdmissionPolicy[] {
  const policies: AdmissionPolicy[] = [];
  const minuteReset = Math.max(1, Math.ceil((60_000 - (now % 60_000)) / 1000));
  const perMinute = (id: "user-minute" | "tenant-minute", quota: number | null) => {
    if (quota === null) return;
    const used = countedBy(names, id, totals, now);
    policies.push({
      id,
      quota,
      windowSeconds: 60,
      unit: "requests",
      remaining: Math.max(0, quota - used),
      resetSeconds: minuteReset,
    });
  };
  perMinute("user-minute", limits.user.runsPerMinute);
  perMinute("tenant-minute", limits.tenant.runsPerMinute);
  const live = limits.tenant.concurrentRuns;
  if (live !== null) {
    const inFlight = countedBy(names, "tenant-concurrent", totals, now, carried);
    policies.push({
      id: "tenant-concurrent",
      quota: live,
      windowSeconds: null,
      unit: "concurrent-requests",
      remaining: Math.max(0, live - inFlight),
      resetSeconds: null,
    });
  }
  return policies;
}

/**
 * The runs an admission policy counts in the item's totals at `now`: the user's or the tenant's runs
 * started this UTC minute, or the tenant's runs in flight (with the day before's `carried`).
 */
function countedBy(
  names: ReturnType<typeof namesOf>,
  id: AdmissionPolicy["id"],
  totals: Readonly<Record<string, number>>,
  now: number,
  carried = 0,
): number {
  if (id === "tenant-concurrent")
    return totalIn({ totals: { ...totals }, markers: new Map() }, names.tenant.live) + carried;
  return runsThisMinute(totals[id === "user-minute" ? names.user.minute : names.tenant.minute], now);
}

/** Seconds until the UTC day of `now` ends (a daily limit's `Retry-After`). */
export function secondsToDayEnd(tenantId: string, now: number): number {
  return secondsUntilEnd(quotaRef(tenantId, now).window, now);
}
