/**
 * The shapes and names of the counter items (shared/store/counters.ts): UTC windows, total and marker
 * names, the refs, states, conditions and changes the store's writes take and the outcomes they give.
 */
import { sha256Hex } from "../hash.js";

/** The windows a counter item can span, aligned to UTC (epoch ms are UTC; no leap seconds). */
export type CounterWindowKind = "minute" | "hour" | "day";

/** A UTC day in ms: the `day` window, the quota item's and the policy totals' (no leap seconds). */
export const DAY_MS = 86_400_000;

/** Length of each {@link CounterWindowKind} in ms. */
const WINDOW_MS: Record<CounterWindowKind, number> = { minute: 60_000, hour: 3_600_000, day: DAY_MS };

/**
 * One UTC window: `startMs` (inclusive) and `endMs` (exclusive), epoch ms; `id` names it in keys:
 * `d20260102` (day), `h2026010213` (hour 13:00-14:00), `m202601021305` (minute 13:05).
 */
export interface CounterWindow {
  readonly kind: CounterWindowKind;
  readonly startMs: number;
  readonly endMs: number;
  readonly id: string;
}

/** The {@link CounterWindow} of `kind` holding the instant `atMs` (epoch ms). */
export function counterWindow(kind: CounterWindowKind, atMs: number): CounterWindow {
  const size = WINDOW_MS[kind];
  const startMs = Math.floor(atMs / size) * size;
  const iso = new Date(startMs).toISOString();
  const digits = `${iso.slice(0, 4)}${iso.slice(5, 7)}${iso.slice(8, 10)}${iso.slice(11, 13)}${iso.slice(14, 16)}`;
  const length = { day: 8, hour: 10, minute: 12 }[kind];
  return { kind, startMs, endMs: startMs + size, id: `${kind[0]}${digits.slice(0, length)}` };
}

/**
 * Whole seconds from `nowMs` until the window ends, at least 1: when a fixed window admits again (an
 * HTTP `Retry-After` value).
 */
export function secondsUntilEnd(window: CounterWindow, nowMs: number): number {
  return Math.max(1, Math.ceil((window.endMs - nowMs) / 1000));
}

/** Whose total a name belongs to: the tenant's, or one user's of the tenant. */
export type CounterScope = { kind: "tenant" } | { kind: "user"; userId: string };

/** A metric's name inside a total's name: a lower-case letter, then up to 23 letters or digits. */
const METRIC = /^[a-z][A-Za-z0-9]{0,23}$/;

/**
 * The attribute name of one total: `t_<metric>` for the tenant's, `u<12 hex of SHA-256(userId)>_<metric>`
 * for a user's (compact, any user id fits, and no user id is stored). The item's partition is the
 * tenant's, so a total is never another tenant's.
 * @throws RangeError when `metric` is not a letter followed by up to 23 letters or digits
 */
export function totalName(scope: CounterScope, metric: string): string {
  if (!METRIC.test(metric)) throw new RangeError(`Counter metric ${JSON.stringify(metric)} is not a name.`);
  return scope.kind === "tenant" ? `t_${metric}` : `u${sha256Hex(scope.userId).slice(0, 12)}_${metric}`;
}

/** A total's name as {@link totalName} builds it (markers and table attributes are not totals). */
export const TOTAL = /^(?:t|u[0-9a-f]{12})_[a-z][A-Za-z0-9]{0,23}$/;

/** The attribute name of a reservation's marker: `r_` + 16 hex of SHA-256 of its key. */
export function markerName(reservationKey: string): string {
  return `r_${sha256Hex(reservationKey).slice(0, 16)}`;
}

/**
 * The marker of a reservation still held in an item: `version` (the caller's step, so a retried write
 * meets a marker that already moved on), `open` (what the reservation added that a release or a prune
 * takes back: total name → amount), `expiresAtSeconds` (epoch s; after it the holder is presumed
 * crashed and a prune may take `open` back) and `counted` (optional, the holder's own figures as of
 * this write, name → number, kept as they are: whoever releases the reservation for the holder reads
 * them; the store never acts on them).
 */
export interface ReservationMarker {
  version: number;
  open: Readonly<Record<string, number>>;
  expiresAtSeconds: number;
  counted?: Readonly<Record<string, number>> | undefined;
}

/** One counter item: the tenant, the counter family (no `#`) and the window. */
export interface CounterRef {
  tenantId: string;
  name: string;
  window: CounterWindow;
}

/** What an item holds: its totals (absent ones are 0) and its reservation markers by attribute name. */
export interface CounterState {
  totals: Record<string, number>;
  markers: Map<string, ReservationMarker>;
}

/**
 * A condition on one total, as it stands before the write: `op` compares it with `value`; an absent
 * total counts as 0. A limit on a total that the write adds `amount` to is `{op: "<=", value: limit - amount}`.
 */
export interface TotalCondition {
  total: string;
  op: "<=" | "<" | ">=";
  value: number;
}

/**
 * One change of an item (see {@link CounterStore.change}):
 * - `reservation`: the marker of `key` must be in state `from` (a version; null: no marker) and becomes
 *   `to` (null: removed) — the idempotency of the write
 * - `add`: total → delta (ADD; a missing total starts at 0); `set`: total → value (SET)
 * - `conditions`: every one must hold before the write
 */
export interface CounterChange {
  reservation: { key: string; from: number | null; to: ReservationMarker | null };
  add?: Readonly<Record<string, number>>;
  set?: Readonly<Record<string, number>>;
  conditions?: readonly TotalCondition[];
}

/**
 * What {@link CounterStore.change} did:
 * - `applied`: written; `totals` are the totals the write touched, as they are after it (its position)
 * - `refused`: nothing written; `state` is the item as it was, `marker` the reservation's marker in it,
 *   and `failed` the conditions it does not meet (empty when only the marker was not in state `from`)
 */
export type ChangeResult =
  | { kind: "applied"; totals: Record<string, number> }
  | { kind: "refused"; state: CounterState; marker: ReservationMarker | undefined; failed: TotalCondition[] };

/**
 * What a reservation found:
 * - `reserved`: counted; `totals` are the touched totals including it
 * - `already_reserved`: the same key was counted before (a replay or retry); `totals` as they stand
 * - `over_limit`: a limit does not admit it; `total` is the first total over, `limit` its limit, `value`
 *   where it stands, `retryAfterSeconds` the seconds until the window ends (≥ 1)
 */
export type ReserveResult =
  | { kind: "reserved"; totals: Record<string, number> }
  | { kind: "already_reserved"; totals: Record<string, number> }
  | { kind: "over_limit"; total: string; limit: number; value: number; retryAfterSeconds: number };

/** Options of a {@link CounterStore}: how long an item outlives its window (s, default a day), and the clock. */
export interface CounterStoreOptions {
  retentionSeconds?: number;
  now?: () => number;
}
