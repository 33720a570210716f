import { type DynamoDBDocumentClient, QueryCommand } from "@aws-sdk/lib-dynamodb";
import { keys } from "./keys.js";
import { decodeListCursor, encodeCursor } from "./query.js";
import { type RunReadRule, SYNC_DEADLINE_ATTRIBUTE, UNFINISHED_STATUSES } from "./run-records.js";
import { ITEM_LIVE, LIST_INDEX, type StoredItem, TABLE_SCHEMA, TTL_NAMES } from "./table.js";

/**
 * What a listing of a tenant's runs keeps (every field optional; all given must hold):
 * - `userId`: runs this user started
 * - `status`: runs in this status now (a run record's `status`)
 * - `startedFrom` / `startedBefore`: runs whose `startedAt` is at or after / before these instants
 *   (ISO 8601 UTC with milliseconds, as `Date.toISOString` writes them)
 * - `runIdPrefix`: runs whose id starts with this
 * - `statuses`: runs in any of these statuses now (with `status`, both must hold)
 * - `conversationId`: runs of this conversation
 * - `updatedAfter`: runs whose record last changed (`updatedAt`: its status, its cycles, its finish)
 *   strictly after this instant (ISO 8601 UTC with milliseconds)
 * - `abandonedBefore`: the run store's read rule (./run-records.ts `RunReadRule`, set by the store, not
 *   by a caller): an unfinished record whose writer's deadline is before this instant is in status
 *   `abandoned` for `status` and `statuses`, and no longer in its stored one, as a read of it shows
 * - `abandonedDeadlineAfter` (with `updatedAfter` and `abandonedBefore`; set by the store from the same
 *   rule): such an abandoned record whose writer's deadline is after this instant became abandoned
 *   after `updatedAfter`, so `updatedAfter` keeps it although nothing wrote it since
 */
export interface RunListFilter {
  userId?: string | undefined;
  status?: string | undefined;
  startedFrom?: string | undefined;
  startedBefore?: string | undefined;
  runIdPrefix?: string | undefined;
  statuses?: readonly string[] | undefined;
  conversationId?: string | undefined;
  updatedAfter?: string | undefined;
  abandonedBefore?: string | undefined;
  abandonedDeadlineAfter?: string | undefined;
}

/**
 * `filter` with the run store's read rule's part (see {@link RunListFilter}: `abandonedBefore`, and
 * `abandonedDeadlineAfter` with `updatedAfter`); `filter` itself without a rule.
 */
export function withReadRule(filter: RunListFilter, rule: RunReadRule | undefined): RunListFilter {
  if (!rule) return filter;
  const { updatedAfter } = filter;
  return {
    ...filter,
    abandonedBefore: rule.abandonedBefore(),
    ...(updatedAfter === undefined ? {} : { abandonedDeadlineAfter: rule.deadlineAbandonedAt(updatedAfter) }),
  };
}

/** Index reads of one runs page at most (`reads`), and the items each evaluates before the filter. */
export const RUN_LIST_READS = { reads: 5, readSize: 100 } as const;

/**
 * One page of a tenant's run records from the listing index (list `RUNS`, keys.ts), newest `startedAt`
 * first: the date range is the key condition, the rest ({@link RunListFilter}) a filter, so a page reads
 * at most {@link RUN_LIST_READS} (5 × 100 index items) whatever the filter keeps and may hold fewer than
 * `limit` runs while `nextCursor` is set (the reads ran out first). Expired records are left out.
 * Index reads are eventually consistent on AWS (a run started a moment ago may be missing).
 * @param query.limit page size, a positive integer; `cursor` a `nextCursor` of this tenant's runs list
 * @param nowSeconds epoch s: records whose TTL is not after it are left out
 * @returns the raw items (table attributes included) and `nextCursor`, set when more may follow
 * @throws InvalidCursorError for a cursor not of this tenant's runs list (nothing is read); the SDK's errors
 */
export async function queryRunList(
  client: DynamoDBDocumentClient,
  tableName: string,
  tenantId: string,
  query: { limit: number; cursor?: string | undefined; filter: RunListFilter },
  nowSeconds: number,
): Promise<{ items: StoredItem[]; nextCursor: string | undefined }> {
  const partition = keys.listPartition(tenantId, keys.runList);
  let startKey =
    query.cursor === undefined ? undefined : decodeListCursor(query.cursor, { tenantId }, partition);
  const input = runListInput(tableName, partition, query.filter, nowSeconds);
  const kept: StoredItem[] = [];
  for (let read = 0; read < RUN_LIST_READS.reads; read++) {
    const page = await client.send(
      new QueryCommand({ ...input, Limit: RUN_LIST_READS.readSize, ExclusiveStartKey: startKey }),
    );
    for (const item of page.Items ?? []) {
      kept.push(item);
      // One more than asked: the page is full and another run follows it.
      if (kept.length > query.limit)
        return { items: kept.slice(0, query.limit), nextCursor: cursorAt(kept[query.limit - 1]) };
    }
    startKey = page.LastEvaluatedKey;
    if (!startKey) return { items: kept, nextCursor: undefined };
  }
  return { items: kept, nextCursor: encodeCursor(stringKey(startKey ?? {})) };
}

/**
 * Index reads a count makes at most ({@link countRunList}): DynamoDB bills a count as the items it
 * evaluates (up to 1 MB of index per read), so an unbounded count would make every listing cost as much
 * as reading all of a tenant's kept runs.
 */
export const RUN_COUNT_READS = 10;

/**
 * How many of a tenant's run records pass `filter` (live ones), counted over the listing index
 * partition (`Select: COUNT`, up to 1 MB of index per read) in at most {@link RUN_COUNT_READS} reads:
 * exact when the partition ends within them (`exact` true), else the count so far, a lower bound.
 * Eventually consistent on AWS, as the pages are.
 * @param nowSeconds epoch s: records whose TTL is not after it are not counted
 * @param budget `reads`, the read budget, and `readSize`, index items per read (DynamoDB's 1 MB when
 *   unset); tests lower both
 * @throws the SDK's errors
 */
export async function countRunList(
  client: DynamoDBDocumentClient,
  tableName: string,
  tenantId: string,
  filter: RunListFilter,
  nowSeconds: number,
  budget: { reads: number; readSize?: number } = { reads: RUN_COUNT_READS },
): Promise<{ count: number; exact: boolean }> {
  const input = runListInput(tableName, keys.listPartition(tenantId, keys.runList), filter, nowSeconds);
  let count = 0;
  let startKey: Record<string, unknown> | undefined;
  for (let read = 0; read < budget.reads; read++) {
    const page = await client.send(
      new QueryCommand({ ...input, Select: "COUNT", Limit: budget.readSize, ExclusiveStartKey: startKey }),
    );
    count += page.Count ?? 0;
    startKey = page.LastEvaluatedKey;
    if (!startKey) return { count, exact: true };
  }
  return { count, exact: false };
}

/** The index query of a filtered runs listing (without its page size and start). */
function runListInput(tableName: string, partition: string, filter: RunListFilter, nowSeconds: number) {
  const names: Record<string, string> = { "#partition": LIST_INDEX.partitionKey, ...TTL_NAMES };
  const values: Record<string, unknown> = { ":partition": partition, ":nowSeconds": nowSeconds };
  let condition = "#partition = :partition";
  const { startedFrom: from, startedBefore: before } = filter;
  if (from !== undefined || before !== undefined) {
    names["#sort"] = LIST_INDEX.sortKey;
    // A key is `<startedAt>#<runId>`: above an instant's own string when it started then, below the next.
    if (from !== undefined) values[":from"] = from;
    if (before !== undefined) values[":before"] = before;
    condition +=
      from !== undefined && before !== undefined
        ? " AND #sort BETWEEN :from AND :before"
        : from !== undefined
          ? " AND #sort >= :from"
          : " AND #sort < :before";
  }
  const filters = [ITEM_LIVE];
  const match = (field: string, value: string | undefined, test: (name: string, v: string) => string) => {
    if (value === undefined) return;
    names[`#${field}`] = field;
    values[`:${field}`] = value;
    filters.push(test(`#${field}`, `:${field}`));
  };
  match("userId", filter.userId, (name, v) => `${name} = ${v}`);
  match("runId", filter.runIdPrefix, (name, v) => `begins_with(${name}, ${v})`);
  match("conversationId", filter.conversationId, (name, v) => `${name} = ${v}`);
  // Both sides are `Date.toISOString` text (the caller normalizes its instant), so text order is time order.
  match("updatedAt", filter.updatedAfter, (name, v) =>
    filter.abandonedBefore === undefined || filter.abandonedDeadlineAfter === undefined
      ? `${name} > ${v}`
      : `(${name} > ${v} OR ${abandonedSince(names, values, filter.abandonedBefore, filter.abandonedDeadlineAfter)})`,
  );
  const statusIs = statusTest(names, values, filter.abandonedBefore);
  if (filter.status !== undefined) filters.push(statusIs(filter.status, "status"));
  if (filter.statuses !== undefined) {
    // An empty list keeps nothing: DynamoDB refuses `IN ()`, and a run's status is never "".
    const listed = filter.statuses.length > 0 ? filter.statuses : [""];
    filters.push(`(${listed.map((status, i) => statusIs(status, `statuses${i}`)).join(" OR ")})`);
  }
  return {
    TableName: tableName,
    IndexName: LIST_INDEX.name,
    KeyConditionExpression: condition,
    FilterExpression: filters.join(" AND "),
    ExpressionAttributeNames: names,
    ExpressionAttributeValues: values,
    ScanIndexForward: false,
  };
}

/**
 * The filter expression that a run's status as read is `status` (its value named `:<key>`): with
 * `abandonedBefore`, an unfinished record whose writer's deadline (internal, ./run-records.ts
 * `SYNC_DEADLINE_ATTRIBUTE`) is before it reads `abandoned`, not its stored status (a record without one
 * never does: the comparison with an absent attribute is false).
 */
function statusTest(
  names: Record<string, string>,
  values: Record<string, unknown>,
  abandonedBefore: string | undefined,
): (status: string, key: string) => string {
  return (status, key) => {
    names["#status"] = "status";
    const judged = status === "abandoned" || UNFINISHED_STATUSES.includes(status);
    if (abandonedBefore === undefined || !judged) {
      values[`:${key}`] = status;
      return `#status = :${key}`;
    }
    if (status === "abandoned") return staleUnfinished(names, values, abandonedBefore);
    values[`:${key}`] = status;
    return `(#status = :${key} AND NOT (${deadlineBefore(names, values, abandonedBefore)}))`;
  };
}

/** The filter expression that a record's writer's deadline is before `abandonedBefore`. */
function deadlineBefore(
  names: Record<string, string>,
  values: Record<string, unknown>,
  abandonedBefore: string,
): string {
  names["#syncDeadline"] = SYNC_DEADLINE_ATTRIBUTE;
  values[":abandonedBefore"] = abandonedBefore;
  return "#syncDeadline < :abandonedBefore";
}

/**
 * The filter expression that a record reads `abandoned`: its stored status is unfinished and its
 * writer's deadline (internal, ./run-records.ts `SYNC_DEADLINE_ATTRIBUTE`) is before `abandonedBefore`.
 */
function staleUnfinished(
  names: Record<string, string>,
  values: Record<string, unknown>,
  abandonedBefore: string,
): string {
  names["#status"] = "status";
  UNFINISHED_STATUSES.forEach((unfinished, i) => {
    values[`:unfinished${i}`] = unfinished;
  });
  const going = UNFINISHED_STATUSES.map((_, i) => `:unfinished${i}`).join(", ");
  return `(#status IN (${going}) AND ${deadlineBefore(names, values, abandonedBefore)})`;
}

/**
 * The filter expression that a record reads `abandoned` (an unfinished record whose writer's deadline is
 * before `before`) and became so after its deadline `after` passed: what changed it was the read rule,
 * not a write (see {@link RunListFilter} `abandonedDeadlineAfter`).
 */
function abandonedSince(
  names: Record<string, string>,
  values: Record<string, unknown>,
  before: string,
  after: string,
): string {
  values[":abandonedDeadlineAfter"] = after;
  return `(${staleUnfinished(names, values, before)} AND #syncDeadline > :abandonedDeadlineAfter)`;
}

/** The cursor naming an item's place: its table and listing-index keys. */
function cursorAt(item: StoredItem | undefined): string {
  return encodeCursor(stringKey(item ?? {}));
}

/** The four key attributes of an item or a LastEvaluatedKey, as strings. */
function stringKey(item: Record<string, unknown>): Record<string, string> {
  const names = [
    TABLE_SCHEMA.partitionKey,
    TABLE_SCHEMA.sortKey,
    LIST_INDEX.partitionKey,
    LIST_INDEX.sortKey,
  ];
  return Object.fromEntries(names.map((name) => [name, String(item[name])]));
}
