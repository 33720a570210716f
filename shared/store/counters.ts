import {
  ConditionalCheckFailedException,
  ReturnValuesOnConditionCheckFailure,
} from "@aws-sdk/client-dynamodb";
import { type DynamoDBDocumentClient, UpdateCommand } from "@aws-sdk/lib-dynamodb";
import { unmarshall } from "@aws-sdk/util-dynamodb";
import {
  type ChangeResult,
  type CounterChange,
  type CounterRef,
  type CounterState,
  type CounterStoreOptions,
  type CounterWindow,
  markerName,
  type ReservationMarker,
  type ReserveResult,
  secondsUntilEnd,
  TOTAL,
  type TotalCondition,
} from "./counter-shapes.js";
import { CounterItemFullError } from "./errors.js";
import { keys } from "./keys.js";
import {
  getItem,
  type StoredItem,
  splitItem,
  type TableKey,
  TTL_ASSIGNMENT,
  TTL_NAMES,
  TYPE_ASSIGNMENT,
  TYPE_NAMES,
  tableKey,
} from "./table.js";

/**
 * Running totals and reservations: one mechanism for quotas and budgets (shared/quotas/) and for the
 * running totals policies read. A **counter item** holds the totals of one counter family (`name`) of one
 * tenant in one UTC-aligned window, and the markers of the reservations still counted in them. Every
 * change is ONE conditional UpdateItem: the totals move (`ADD`), the reservation's marker moves from the
 * state the caller expects to the next one, and the limits are conditions on the totals — never
 * read-then-write, so concurrent callers are serialized by DynamoDB and a limit is never overshot. With
 * `ReturnValues: UPDATED_NEW` the write returns the totals *at its own position*; a refused write
 * returns the item as it was (ReturnValuesOnConditionCheckFailure ALL_OLD; a consistent read where the
 * server sends none, as dynalite), so the caller can tell "already done" from "over a limit". Single-item
 * writes only: the same on DynamoDB, DynamoDB Local and dynalite, and one write unit per change.
 *
 * Amounts are integers (tokens, minor units, micro-units of a currency) — never floats. Items carry no
 * model text: totals are numbers under hashed names, markers hold numbers.
 *
 * **Bounds.** An item is at most 400 KB (DynamoDB). A total costs its name (2-15 bytes plus the metric)
 * and a number; a marker ~40 bytes plus its open amounts. docs/stores.md gives what that allows per
 * family; a write DynamoDB refuses for size throws {@link CounterItemFullError} (stable code
 * COUNTER_ITEM_FULL) and changes nothing: callers fail closed.
 */

export type {
  ChangeResult,
  CounterChange,
  CounterRef,
  CounterScope,
  CounterState,
  CounterStoreOptions,
  CounterWindow,
  CounterWindowKind,
  ReservationMarker,
  ReserveResult,
  TotalCondition,
} from "./counter-shapes.js";
export { counterWindow, DAY_MS, markerName, secondsUntilEnd, totalName } from "./counter-shapes.js";

/** The item type of counter items. */
const ITEM_TYPE = "counter";

/**
 * The counter items of one table (see the module's doc). Each method is one UpdateItem (or one
 * consistent GetItem for {@link read}) and returns an outcome, never a failed condition as an exception.
 * @throws (every method) {@link CounterItemFullError} when DynamoDB refuses a write for the item's size;
 *   the SDK's errors when the table cannot be reached
 */
export class CounterStore {
  private readonly retentionSeconds: number;
  private readonly now: () => number;

  constructor(
    private readonly client: DynamoDBDocumentClient,
    private readonly tableName: string,
    options: CounterStoreOptions = {},
  ) {
    this.retentionSeconds = options.retentionSeconds ?? 86_400;
    this.now = options.now ?? Date.now;
  }

  /**
   * Applies one {@link CounterChange} as a single conditional UpdateItem (the marker's state and every
   * condition, checked by DynamoDB against the item as it is), refreshing the item's TTL to the window's
   * end plus the retention.
   */
  async change(ref: CounterRef, change: CounterChange, signal?: AbortSignal): Promise<ChangeResult> {
    const expression = updateExpression(change, ttlOf(ref, this.retentionSeconds));
    const key = counterKey(ref);
    try {
      const output = await this.client.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: key,
          ...expression,
          ReturnValues: "UPDATED_NEW",
          ReturnValuesOnConditionCheckFailure: ReturnValuesOnConditionCheckFailure.ALL_OLD,
        }),
        { abortSignal: signal },
      );
      return { kind: "applied", totals: stateOf(output.Attributes ?? {}).totals };
    } catch (error) {
      if (isItemTooLarge(error)) throw new CounterItemFullError(ref.name, ref.window.id, error);
      if (!(error instanceof ConditionalCheckFailedException)) throw error;
      const item = error.Item
        ? unmarshall(error.Item)
        : await getItem(this.client, this.tableName, key, signal);
      const state = stateOf(item ?? {});
      const failed = (change.conditions ?? []).filter((condition) => !holds(condition, state.totals));
      return {
        kind: "refused",
        state,
        marker: state.markers.get(markerName(change.reservation.key)),
        failed,
      };
    }
  }

  /** The item's totals and markers (a consistent read); empty when there is none. */
  async read(ref: CounterRef, signal?: AbortSignal): Promise<CounterState> {
    return stateOf((await getItem(this.client, this.tableName, counterKey(ref), signal)) ?? {});
  }

  /**
   * Reserves `amounts` under `key` (marker version 1), if every limited total stays within its limit
   * with them: the reserve-before-the-effect write. A key already counted is `already_reserved`.
   * @param input.limits total → the most it may reach (a total without a limit is only counted)
   * @param input.expiresAtSeconds epoch s after which a prune may take the reservation back
   */
  async reserve(
    ref: CounterRef,
    input: {
      key: string;
      amounts: Readonly<Record<string, number>>;
      limits?: Readonly<Record<string, number>>;
      expiresAtSeconds: number;
    },
  ): Promise<ReserveResult> {
    const conditions = limitConditions(input.amounts, input.limits ?? {});
    const result = await this.change(ref, {
      reservation: {
        key: input.key,
        from: null,
        to: { version: 1, open: input.amounts, expiresAtSeconds: input.expiresAtSeconds },
      },
      add: input.amounts,
      conditions,
    });
    if (result.kind === "applied") return { kind: "reserved", totals: result.totals };
    if (result.marker) return { kind: "already_reserved", totals: result.state.totals };
    return overLimit(result, input.amounts, this.now(), ref.window);
  }

  /**
   * Settles the reservation of `key`: the totals move from what was reserved to `actual` (the effect's
   * real amounts), and the marker stays (version 2, nothing open) so a repeat is recognised.
   * @returns `settled`; `not_open` when the reservation is not open (settled or released before, or never made)
   */
  async settle(
    ref: CounterRef,
    input: {
      key: string;
      reserved: Readonly<Record<string, number>>;
      actual: Readonly<Record<string, number>>;
    },
  ): Promise<"settled" | "not_open"> {
    const marker = await this.change(ref, {
      reservation: { key: input.key, from: 1, to: { version: 2, open: {}, expiresAtSeconds: 0 } },
      add: difference(input.actual, input.reserved),
    });
    return marker.kind === "applied" ? "settled" : "not_open";
  }

  /**
   * Releases the reservation of `key` (the effect was refused or failed): its amounts are taken back and
   * its marker removed.
   * @returns `released`; `not_open` when the reservation is not open
   */
  async release(
    ref: CounterRef,
    input: { key: string; reserved: Readonly<Record<string, number>> },
  ): Promise<"released" | "not_open"> {
    const result = await this.change(ref, {
      reservation: { key: input.key, from: 1, to: null },
      add: difference({}, input.reserved),
    });
    return result.kind === "applied" ? "released" : "not_open";
  }

  /**
   * Takes back the open amounts of the markers in `state` whose expiry has passed (their holders are
   * presumed crashed) and removes them: one write for up to {@link PRUNE_BATCH} markers, each conditioned
   * on its version, so a marker that moved on meanwhile is left alone (the write is then refused and
   * nothing is pruned). Call it when a limit refuses a write, with the state that write returned.
   * @returns the number of markers pruned
   */
  async prune(ref: CounterRef, state: CounterState): Promise<number> {
    const nowSeconds = Math.floor(this.now() / 1000);
    const expired = [...state.markers].filter(
      ([, marker]) => marker.expiresAtSeconds <= nowSeconds && Object.keys(marker.open).length > 0,
    );
    const batch = expired.slice(0, PRUNE_BATCH);
    if (batch.length === 0) return 0;
    const expression = pruneExpression(batch, ttlOf(ref, this.retentionSeconds));
    try {
      await this.client.send(
        new UpdateCommand({ TableName: this.tableName, Key: counterKey(ref), ...expression }),
      );
      return batch.length;
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) return 0;
      throw error;
    }
  }
}

/** Markers one prune write takes back at most (keeps the expressions well under DynamoDB's 4 KB). */
export const PRUNE_BATCH = 20;

/** The table key of a counter item (the tenant's partition, `COUNTER#<name>#<window>`). */
function counterKey(ref: CounterRef): TableKey {
  if (ref.name.includes("#")) throw new RangeError(`Counter name ${JSON.stringify(ref.name)} has a #.`);
  return tableKey(ref.tenantId, keys.counter(ref.name, ref.window.id));
}

/** The item's TTL: the window's end plus the retention, epoch s. */
function ttlOf(ref: CounterRef, retentionSeconds: number): number {
  return Math.floor(ref.window.endMs / 1000) + retentionSeconds;
}

/** Conditions keeping each limited total within its limit once `amounts` are added. */
export function limitConditions(
  amounts: Readonly<Record<string, number>>,
  limits: Readonly<Record<string, number>>,
): TotalCondition[] {
  return Object.entries(limits).map(([total, limit]) => ({
    total,
    op: "<=",
    value: limit - (amounts[total] ?? 0),
  }));
}

/** `a - b`, total by total (integers). */
export function difference(
  a: Readonly<Record<string, number>>,
  b: Readonly<Record<string, number>>,
): Record<string, number> {
  const result: Record<string, number> = { ...a };
  for (const [total, amount] of Object.entries(b)) result[total] = (result[total] ?? 0) - amount;
  return result;
}

/** The `over_limit` outcome of a refused reservation: the first failed limit and where its total stands. */
function overLimit(
  result: Extract<ChangeResult, { kind: "refused" }>,
  amounts: Readonly<Record<string, number>>,
  nowMs: number,
  window: CounterWindow,
): ReserveResult {
  const condition = result.failed[0];
  if (!condition) throw new Error("A reservation was refused with its marker absent and every limit met.");
  return {
    kind: "over_limit",
    total: condition.total,
    limit: condition.value + (amounts[condition.total] ?? 0),
    value: result.state.totals[condition.total] ?? 0,
    retryAfterSeconds: secondsUntilEnd(window, nowMs),
  };
}

/** Whether `condition` holds for `totals` (absent totals are 0). */
function holds(condition: TotalCondition, totals: Readonly<Record<string, number>>): boolean {
  const value = totals[condition.total] ?? 0;
  if (condition.op === "<=") return value <= condition.value;
  if (condition.op === "<") return value < condition.value;
  return value >= condition.value;
}

/** Placeholders of one expression: names `#n<i>` and values `:v<i>`. */
class Placeholders {
  readonly names: Record<string, string> = {};
  readonly values: Record<string, unknown> = {};
  private count = 0;
  name(attribute: string): string {
    const placeholder = `#n${this.count++}`;
    this.names[placeholder] = attribute;
    return placeholder;
  }
  value(value: unknown): string {
    const placeholder = `:v${this.count++}`;
    this.values[placeholder] = value;
    return placeholder;
  }
}

/** A total's condition as DynamoDB reads it; absent passes when 0 meets it. */
function conditionText(condition: TotalCondition, p: Placeholders): string {
  if (!TOTAL.test(condition.total)) throw new RangeError(`${condition.total} is not a total's name.`);
  const name = p.name(condition.total);
  const compare = `${name} ${condition.op} ${p.value(condition.value)}`;
  return holds(condition, {}) ? `(attribute_not_exists(${name}) OR ${compare})` : compare;
}

/** The UpdateItem parts of a {@link CounterChange}. */
function updateExpression(change: CounterChange, ttlSeconds: number) {
  const p = new Placeholders();
  const { key, from, to } = change.reservation;
  const marker = p.name(markerName(key));
  const conditions = [
    from === null ? `attribute_not_exists(${marker})` : `${marker}.${p.name("v")} = ${p.value(from)}`,
    ...(change.conditions ?? []).map((condition) => conditionText(condition, p)),
  ];
  const sets = [TTL_ASSIGNMENT, TYPE_ASSIGNMENT];
  for (const [total, value] of Object.entries(change.set ?? {}))
    sets.push(`${totalPlaceholder(total, p)} = ${p.value(value)}`);
  if (to) {
    const counted = to.counted ? { u: { ...to.counted } } : {};
    sets.push(
      `${marker} = ${p.value({ v: to.version, o: { ...to.open }, x: to.expiresAtSeconds, ...counted })}`,
    );
  }
  const adds = Object.entries(change.add ?? {})
    .filter(([, amount]) => amount !== 0)
    .map(([total, amount]) => `${totalPlaceholder(total, p)} ${p.value(amount)}`);
  const clauses = [`SET ${sets.join(", ")}`];
  if (adds.length > 0) clauses.push(`ADD ${adds.join(", ")}`);
  if (!to) clauses.push(`REMOVE ${marker}`);
  return {
    UpdateExpression: clauses.join(" "),
    ConditionExpression: conditions.join(" AND "),
    ExpressionAttributeNames: { ...p.names, ...TTL_NAMES, ...TYPE_NAMES },
    ExpressionAttributeValues: { ...p.values, ":expiresAtSeconds": ttlSeconds, ":itemType": ITEM_TYPE },
  };
}

/** The placeholder of a total's name, checked to be one ({@link totalName}). */
function totalPlaceholder(total: string, p: Placeholders): string {
  if (!TOTAL.test(total)) throw new RangeError(`${total} is not a total's name.`);
  return p.name(total);
}

/** The UpdateItem parts of a prune: each marker conditioned on its version, removed, its open amounts taken back. */
function pruneExpression(markers: Array<[string, ReservationMarker]>, ttlSeconds: number) {
  const p = new Placeholders();
  const version = p.name("v");
  const back: Record<string, number> = {};
  const conditions: string[] = [];
  const removed: string[] = [];
  for (const [attribute, marker] of markers) {
    const name = p.name(attribute);
    conditions.push(`${name}.${version} = ${p.value(marker.version)}`);
    removed.push(name);
    for (const [total, amount] of Object.entries(marker.open)) back[total] = (back[total] ?? 0) - amount;
  }
  const adds = Object.entries(back)
    .filter(([total, amount]) => amount !== 0 && TOTAL.test(total))
    .map(([total, amount]) => `${p.name(total)} ${p.value(amount)}`);
  return {
    UpdateExpression: [
      `SET ${TTL_ASSIGNMENT}`,
      ...(adds.length > 0 ? [`ADD ${adds.join(", ")}`] : []),
      `REMOVE ${removed.join(", ")}`,
    ].join(" "),
    ConditionExpression: conditions.join(" AND "),
    ExpressionAttributeNames: { ...p.names, ...TTL_NAMES },
    ExpressionAttributeValues: { ...p.values, ":expiresAtSeconds": ttlSeconds },
  };
}

/** An item's totals and markers (table attributes stripped; anything else ignored). */
function stateOf(item: StoredItem): CounterState {
  const { attributes } = splitItem(item);
  const totals: Record<string, number> = {};
  const markers = new Map<string, ReservationMarker>();
  for (const [name, value] of Object.entries(attributes)) {
    if (TOTAL.test(name) && typeof value === "number") totals[name] = value;
    else if (name.startsWith("r_") && value && typeof value === "object") {
      const stored = value as { v?: unknown; o?: unknown; x?: unknown; u?: unknown };
      markers.set(name, {
        version: Number(stored.v),
        open: (stored.o ?? {}) as Record<string, number>,
        expiresAtSeconds: Number(stored.x),
        ...(stored.u ? { counted: stored.u as Record<string, number> } : {}),
      });
    }
  }
  return { totals, markers };
}

/** True for DynamoDB's refusal of a write whose item would pass 400 KB. */
function isItemTooLarge(error: unknown): boolean {
  return (
    (error as { name?: unknown } | null)?.name === "ValidationException" &&
    /exceeded the maximum allowed size/i.test(String((error as Error).message))
  );
}
