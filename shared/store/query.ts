import { type DynamoDBDocumentClient, QueryCommand, type QueryCommandInput } from "@aws-sdk/lib-dynamodb";
import * as z from "zod";
import { InvalidCursorError } from "./errors.js";
import { keys } from "./keys.js";
import {
  ITEM_LIVE,
  LIST_INDEX,
  type StoredItem,
  TABLE_SCHEMA,
  type TableKey,
  TTL_NAMES,
  tableKey,
} from "./table.js";

/**
 * One tenant-scoped query: the items of `tenantId`'s partition whose sort key starts with `prefix`, in
 * sort-key order, with consistent reads.
 * - `limit`: page size (a positive integer); omitted: every matching item, all DynamoDB pages
 * - `cursor`: a `nextCursor` of an earlier page of the same query (same tenant and prefix)
 * - `descending`: in descending sort-key order (newest first for time-ordered keys); a cursor continues in it
 */
export interface TenantQuery {
  tenantId: string;
  prefix: string;
  limit?: number;
  cursor?: string;
  descending?: boolean;
  signal?: AbortSignal;
}

/**
 * A page of a {@link TenantQuery}: the raw items (table attributes included, see `splitItem`) and
 * `nextCursor`, present only when more items follow: an opaque string (base64url) to pass back as
 * `cursor` for the next page.
 */
export interface TenantPage {
  items: StoredItem[];
  nextCursor: string | undefined;
}

/**
 * Runs a {@link TenantQuery}: the one paginated query of the stores. With a `limit`, it reads until it
 * has `limit + 1` items (DynamoDB pages stop at 1 MB), so `nextCursor` is set only when another item
 * exists; it names the last returned item's key.
 * @throws InvalidCursorError for a cursor that does not decode to a key of this tenant and prefix
 *   (nothing is read); RangeError for a limit that is not a positive integer; the SDK's errors
 */
export async function queryTenant(
  client: DynamoDBDocumentClient,
  tableName: string,
  query: TenantQuery,
): Promise<TenantPage> {
  const { limit } = query;
  const startKey =
    query.cursor === undefined ? undefined : decodeCursor(query.cursor, query.tenantId, query.prefix);
  const items = await collect(
    client,
    {
      TableName: tableName,
      KeyConditionExpression: "#partition = :partition AND begins_with(#sort, :prefix)",
      ExpressionAttributeNames: { "#partition": TABLE_SCHEMA.partitionKey, "#sort": TABLE_SCHEMA.sortKey },
      ExpressionAttributeValues: { ":partition": keys.tenant(query.tenantId), ":prefix": query.prefix },
      ConsistentRead: true,
      ...(query.descending ? { ScanIndexForward: false } : {}),
    },
    { limit, startKey, signal: query.signal },
  );
  if (limit === undefined || items.length <= limit) return { items, nextCursor: undefined };
  const pageItems = items.slice(0, limit);
  const last = String(pageItems.at(-1)?.[TABLE_SCHEMA.sortKey]);
  return { items: pageItems, nextCursor: encodeCursor(tableKey(query.tenantId, last)) };
}

/**
 * Reads `input` across DynamoDB pages (each at most 1 MB) from `startKey`: every item, or with a `limit`
 * (a positive integer) until it has `limit + 1` (one more, to tell whether another page follows). A
 * FilterExpression in `input` is applied per page, so the reads go on until `limit + 1` items passed it.
 * @throws RangeError for a limit that is not a positive integer; the SDK's errors
 */
async function collect(
  client: DynamoDBDocumentClient,
  input: Omit<QueryCommandInput, "Limit" | "ExclusiveStartKey">,
  options: { limit: number | undefined; startKey: StoredItem | undefined; signal: AbortSignal | undefined },
): Promise<StoredItem[]> {
  const { limit, signal } = options;
  if (limit !== undefined && !(Number.isSafeInteger(limit) && limit >= 1)) {
    throw new RangeError(`limit must be a positive integer, got ${limit}.`);
  }
  const want = limit === undefined ? Number.POSITIVE_INFINITY : limit + 1;
  const items: StoredItem[] = [];
  let startKey = options.startKey;
  do {
    const page = await client.send(
      new QueryCommand({
        ...input,
        ExclusiveStartKey: startKey,
        ...(limit === undefined ? {} : { Limit: want - items.length }),
      }),
      { abortSignal: signal },
    );
    items.push(...(page.Items ?? []));
    startKey = page.LastEvaluatedKey;
  } while (startKey && items.length < want);
  return items;
}

/**
 * One page of one of a tenant's lists in the listing index (`LIST_INDEX`, table.ts): the items whose
 * list partition is `TENANT#<tenantId>#<list>` (see `listKey`), in list sort-key order.
 * - `list`: the list's name (a `keys.*List` value); `limit`: page size, a positive integer
 * - `cursor`: a `nextCursor` of an earlier page of the same list (same tenant, same list)
 * - `newestFirst`: in descending list sort-key order; a cursor continues in that order
 * - `liveAt` (epoch s): keeps only items whose TTL is after it (DynamoDB deletes expired items late; an
 *   item without a TTL is never listed); `"never expires"` for a list of items without a TTL (invoices)
 */
export interface ListQuery {
  tenantId: string;
  list: string;
  limit: number;
  cursor?: string;
  newestFirst?: boolean;
  liveAt: number | "never expires";
}

/**
 * Runs a {@link ListQuery}: the one query of the listing index. It reads until it has `limit + 1` items,
 * so a page holds `limit` items unless it is the last, and `nextCursor` is set only when another item
 * exists. Index reads are **eventually consistent** (a GSI has no consistent read): on AWS an item
 * written a moment ago may be missing, or still in the list it just left.
 * @returns the raw items (table attributes included, see `splitItem`) and `nextCursor`, an opaque
 *   string naming the last item's table and list keys, valid only for this tenant's `list`
 * @throws InvalidCursorError for a cursor that is not one of this tenant's `list` (nothing is read);
 *   RangeError for a limit that is not a positive integer; the SDK's errors
 */
export async function queryList(
  client: DynamoDBDocumentClient,
  tableName: string,
  query: ListQuery,
): Promise<TenantPage> {
  const partition = keys.listPartition(query.tenantId, query.list);
  const startKey = query.cursor === undefined ? undefined : decodeListCursor(query.cursor, query, partition);
  const items = await collect(
    client,
    {
      TableName: tableName,
      IndexName: LIST_INDEX.name,
      KeyConditionExpression: "#partition = :partition",
      ...(query.liveAt === "never expires"
        ? {
            ExpressionAttributeNames: { "#partition": LIST_INDEX.partitionKey },
            ExpressionAttributeValues: { ":partition": partition },
          }
        : {
            FilterExpression: ITEM_LIVE,
            ExpressionAttributeNames: { "#partition": LIST_INDEX.partitionKey, ...TTL_NAMES },
            ExpressionAttributeValues: { ":partition": partition, ":nowSeconds": query.liveAt },
          }),
      ...(query.newestFirst ? { ScanIndexForward: false } : {}),
    },
    { limit: query.limit, startKey, signal: undefined },
  );
  if (items.length <= query.limit) return { items, nextCursor: undefined };
  const pageItems = items.slice(0, query.limit);
  const last = pageItems.at(-1) ?? {};
  const names = [
    TABLE_SCHEMA.partitionKey,
    TABLE_SCHEMA.sortKey,
    LIST_INDEX.partitionKey,
    LIST_INDEX.sortKey,
  ];
  return {
    items: pageItems,
    nextCursor: encodeCursor(Object.fromEntries(names.map((name) => [name, String(last[name])]))),
  };
}

/**
 * Encodes a key as a cursor: base64url of its JSON (a table key, or for a listing-index query the table
 * and list keys). Opaque to clients but not secret: it only names a position in the caller's own
 * partition or list, and the decoders refuse any other.
 */
export function encodeCursor(key: Readonly<Record<string, string>>): string {
  return Buffer.from(JSON.stringify(key), "utf8").toString("base64url");
}

/** The JSON a cursor carries: exactly the two key attributes, as strings. */
const CursorKey = z
  .object({ [TABLE_SCHEMA.partitionKey]: z.string(), [TABLE_SCHEMA.sortKey]: z.string() })
  .strict();

/**
 * The JSON a cursor carries, or InvalidCursorError when it is not base64url of JSON.
 * @throws InvalidCursorError
 */
function parseCursor(cursor: string): unknown {
  if (!/^[A-Za-z0-9_-]+$/.test(cursor)) throw new InvalidCursorError();
  try {
    return JSON.parse(Buffer.from(cursor, "base64url").toString("utf8"));
  } catch {
    throw new InvalidCursorError();
  }
}

/**
 * Decodes a cursor back to the ExclusiveStartKey of the next page.
 * @throws InvalidCursorError when it is not base64url JSON of a key in `tenantId`'s partition whose sort
 *   key starts with `prefix`
 */
function decodeCursor(cursor: string, tenantId: string, prefix: string): TableKey {
  const key = CursorKey.safeParse(parseCursor(cursor));
  if (!key.success) throw new InvalidCursorError();
  const sortKey = String(key.data[TABLE_SCHEMA.sortKey]);
  const expected = tableKey(tenantId, sortKey);
  if (
    key.data[TABLE_SCHEMA.partitionKey] !== expected[TABLE_SCHEMA.partitionKey] ||
    !sortKey.startsWith(prefix)
  ) {
    throw new InvalidCursorError();
  }
  return expected;
}

/** The JSON a listing-index cursor carries: exactly the table's and the index's key attributes, as strings. */
const ListCursorKey = z
  .object({
    [TABLE_SCHEMA.partitionKey]: z.string(),
    [TABLE_SCHEMA.sortKey]: z.string().min(1),
    [LIST_INDEX.partitionKey]: z.string(),
    [LIST_INDEX.sortKey]: z.string().min(1),
  })
  .strict();

/**
 * Decodes a cursor of {@link queryList} back to the ExclusiveStartKey of the next page.
 * @throws InvalidCursorError when it is not base64url JSON of such a key in `query.tenantId`'s partition
 *   and in `partition`, the list queried (another list's cursor, another tenant's, is refused)
 */
export function decodeListCursor(
  cursor: string,
  query: Pick<ListQuery, "tenantId">,
  partition: string,
): StoredItem {
  const key = ListCursorKey.safeParse(parseCursor(cursor));
  if (
    !key.success ||
    key.data[TABLE_SCHEMA.partitionKey] !== keys.tenant(query.tenantId) ||
    key.data[LIST_INDEX.partitionKey] !== partition
  ) {
    throw new InvalidCursorError();
  }
  return key.data;
}
