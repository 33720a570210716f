import {
  type CounterChange,
  type CounterState,
  counterWindow,
  type TotalCondition,
  totalName,
} from "../store/counters.js";

/**
 * The quota's counter item (shared/store/counters.ts): one per tenant and UTC day (`COUNTER#quota#d<day>`),
 * holding the tenant's totals (`t_…`) and each active user's (`u<hash>_…`), and one marker per run in
 * flight (`run:<runId>`). The metrics, with one-letter names (the item is bounded at 400 KB):
 * - `n` runs started today; `m` the current minute's runs, as a slot: `minuteOfDay × SLOT + count`
 * - `l` (tenant only) runs in flight
 * - `k` tokens used + reserved, `kh` of which reserved (in flight); `c` cost in micro-units used +
 *   reserved, `ch` of which reserved
 * This module builds the changes and reads the item; it writes nothing itself.
 */

/** The counter family of the quotas. */
export const QUOTA_COUNTER = "quota";

/** The metrics' names in the item (see the module doc). */
export const METRIC = {
  runs: "n",
  minute: "m",
  live: "l",
  tokens: "k",
  tokensHeld: "kh",
  cost: "c",
  costHeld: "ch",
};

/** A minute slot's multiplier: `m = minuteOfDay × SLOT + runs in that minute` (< a million a minute). */
export const SLOT = 1_000_000;

/** The names of one scope's totals in the item. */
export interface ScopeNames {
  runs: string;
  minute: string;
  tokens: string;
  tokensHeld: string;
  cost: string;
  costHeld: string;
}

/** The totals' names of the tenant (with `live`) and of one user. */
export function namesOf(userId: string): { tenant: ScopeNames & { live: string }; user: ScopeNames } {
  const of = (scope: Parameters<typeof totalName>[0]) => ({
    runs: totalName(scope, METRIC.runs),
    minute: totalName(scope, METRIC.minute),
    tokens: totalName(scope, METRIC.tokens),
    tokensHeld: totalName(scope, METRIC.tokensHeld),
    cost: totalName(scope, METRIC.cost),
    costHeld: totalName(scope, METRIC.costHeld),
  });
  return {
    tenant: { ...of({ kind: "tenant" }), live: totalName({ kind: "tenant" }, METRIC.live) },
    user: of({ kind: "user", userId }),
  };
}

/** The quota item of `tenantId` for the UTC day holding `atMs`. */
export function quotaRef(tenantId: string, atMs: number) {
  return { tenantId, name: QUOTA_COUNTER, window: counterWindow("day", atMs) };
}

/** The minute of the UTC day holding `atMs` (0-1439), and the first slot value of that minute. */
export function minuteOf(atMs: number): { minute: number; base: number } {
  const minute = Math.floor((atMs - counterWindow("day", atMs).startMs) / 60_000);
  return { minute, base: minute * SLOT };
}

/** Runs counted in the minute of `atMs` by a slot value (0 when the slot holds an earlier minute). */
export function runsThisMinute(slot: number | undefined, atMs: number): number {
  const { base } = minuteOf(atMs);
  return slot !== undefined && slot >= base ? slot - base : 0;
}

/** What a run holds for one model call: tokens (prompt estimate + max_tokens) and cost (micro-units). */
export interface Hold {
  tokens: number;
  costMicro: number;
}

/** A run's token and cost totals of a hold, for both scopes: the amounts the hold adds. */
export function holdAmounts(names: ReturnType<typeof namesOf>, hold: Hold): Record<string, number> {
  const amounts: Record<string, number> = {};
  for (const scope of [names.tenant, names.user]) {
    amounts[scope.tokens] = hold.tokens;
    amounts[scope.tokensHeld] = hold.tokens;
    if (hold.costMicro > 0) {
      amounts[scope.cost] = hold.costMicro;
      amounts[scope.costHeld] = hold.costMicro;
    }
  }
  return amounts;
}

/**
 * The deltas that settle a hold to what the call used: the used totals move from the hold to `used`, the
 * held totals lose the hold.
 */
export function settleAmounts(
  names: ReturnType<typeof namesOf>,
  hold: Hold,
  used: Hold,
): Record<string, number> {
  const amounts: Record<string, number> = {};
  for (const scope of [names.tenant, names.user]) {
    amounts[scope.tokens] = used.tokens - hold.tokens;
    amounts[scope.tokensHeld] = -hold.tokens;
    amounts[scope.cost] = used.costMicro - hold.costMicro;
    amounts[scope.costHeld] = -hold.costMicro;
  }
  return amounts;
}

/** `a + b`, total by total. */
export function sum(
  a: Readonly<Record<string, number>>,
  b: Readonly<Record<string, number>>,
): Record<string, number> {
  const result: Record<string, number> = { ...a };
  for (const [total, amount] of Object.entries(b)) result[total] = (result[total] ?? 0) + amount;
  return result;
}

/**
 * Conditions keeping each limited total (a total name → its limit) within the limit once `delta` is
 * added to it (`delta[total]`, 0 when absent).
 */
export function within(
  limits: Readonly<Record<string, number>>,
  delta: Readonly<Record<string, number>>,
): TotalCondition[] {
  return Object.entries(limits).map(([total, limit]) => ({
    total,
    op: "<=",
    value: limit - (delta[total] ?? 0),
  }));
}

/**
 * A minute slot's part of an admission: a fresh minute (the slot holds an earlier one, or none) is SET
 * to `base + 1`, on condition that it still holds an earlier minute; the current minute is ADDed to, on
 * condition that it holds this minute and, with a limit, fewer than `limit` runs. A slot of this minute
 * holds `base + runs` with at least one run, so "an earlier minute" is `≤ base`: in the day's first minute
 * (base 0) that is an absent slot, which `< base` would never let through.
 */
export function minuteChange(
  total: string,
  fresh: boolean,
  base: number,
  limit: number | null,
): { set?: Record<string, number>; add?: Record<string, number>; conditions: TotalCondition[] } {
  if (fresh) return { set: { [total]: base + 1 }, conditions: [{ total, op: "<=", value: base }] };
  const conditions: TotalCondition[] = [{ total, op: ">=", value: base }];
  if (limit !== null) conditions.push({ total, op: "<", value: base + limit });
  return { add: { [total]: 1 }, conditions };
}

/** Merges the parts of a change (adds summed, sets and conditions joined). */
export function joinChange(
  reservation: CounterChange["reservation"],
  parts: Array<{ add?: Record<string, number>; set?: Record<string, number>; conditions?: TotalCondition[] }>,
): CounterChange {
  let add: Record<string, number> = {};
  let set: Record<string, number> = {};
  const conditions: TotalCondition[] = [];
  for (const part of parts) {
    add = sum(add, part.add ?? {});
    set = { ...set, ...part.set };
    conditions.push(...(part.conditions ?? []));
  }
  return { reservation, add, set, conditions };
}

/** The reservation key of a run's marker (one per run, moved on by every change the run makes). */
export function runKey(runId: string): string {
  return `run:${runId}`;
}

/** A total as it stands in a read or refused item (0 when absent). */
export function totalIn(state: CounterState, total: string): number {
  return state.totals[total] ?? 0;
}

/**
 * What a run holds in its quota item, as its budget records it (plain JSON, in every model step's
 * checkpoint): the day of the item its marker is in (`dayStartMs`, epoch ms), the marker's `version`
 * (0: no marker), whether it holds a slot among the runs in flight (`live`), its open hold (null when
 * none), what the calls made under that hold used (`spent`, summed; absent: nothing, as in a checkpoint
 * written before runs held for more than one call) and whether no further call may be granted from the
 * hold (`consumed`: a hold adopted from a marker, whose calls are not known). The next write settles
 * the hold to `spent`.
 */
export interface BudgetState {
  dayStartMs: number;
  version: number;
  live: boolean;
  hold: Hold | null;
  spent?: Hold | undefined;
  consumed: boolean;
}

/** Nothing spent. */
export const NOTHING: Hold = { tokens: 0, costMicro: 0 };

/** The marker's open amounts for a state: the slot in flight and the hold, so a prune can take them back. */
export function openOf(
  names: ReturnType<typeof namesOf>,
  live: boolean,
  hold: Hold | null,
): Record<string, number> {
  return { ...(live ? { [names.tenant.live]: 1 } : {}), ...(hold ? holdAmounts(names, hold) : {}) };
}

/**
 * A run's usage so far (every call it made, tokens and cost in micro-units) as its marker records it at
 * each write (`ReservationMarker.counted`): all of it is counted in the item by that write, the calls
 * made after it are spent from the open hold.
 */
export function countedOf(used: Hold): Record<string, number> {
  return { [METRIC.tokens]: used.tokens, [METRIC.cost]: used.costMicro };
}

/** The usage a marker's `counted` records (nothing for a marker written without it, e.g. admission's). */
export function usedIn(counted: Readonly<Record<string, number>> | undefined): Hold {
  return { tokens: counted?.[METRIC.tokens] ?? 0, costMicro: counted?.[METRIC.cost] ?? 0 };
}
