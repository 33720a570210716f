import { type DynamoDBDocumentClient, QueryCommand } from "@aws-sdk/lib-dynamodb";
import * as z from "zod";
import { InvalidCursorError } from "./errors.js";
import { keys } from "./keys.js";
import { type StoredItem, TABLE_SCHEMA, type TableKey, tableKey } from "./table.js";

/**
 * One tenant-scoped query: the items of `tenantId`'s partition whose sort key starts with `prefix`, in
 * sort-key order, with consistent reads.
 * - `limit`: page size (a positive integer); omitted: every matching item, all DynamoDB pages
 * - `cursor`: a `nextCursor` of an earlier page of the same query (same tenant and prefix)
 * - `descending`: in descending sort-key order (the last key first); a cursor continues in that order
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
  if (limit !== undefined && !(Number.isSafeInteger(limit) && limit >= 1)) {
    throw new RangeError(`limit must be a positive integer, got ${limit}.`);
  }
  const want = limit === undefined ? Number.POSITIVE_INFINITY : limit + 1;
  const items: StoredItem[] = [];
  let startKey: StoredItem | undefined =
    query.cursor === undefined ? undefined : decodeCursor(query.cursor, query.tenantId, query.prefix);
  do {
    const page = await client.send(
      new QueryCommand({
        TableName: tableName,
        KeyConditionExpression: "#partition = :partition AND begins_with(#sort, :prefix)",
        ExpressionAttributeNames: { "#partition": TABLE_SCHEMA.partitionKey, "#sort": TABLE_SCHEMA.sortKey },
        ExpressionAttributeValues: { ":partition": keys.tenant(query.tenantId), ":prefix": query.prefix },
        ExclusiveStartKey: startKey,
        ...(query.descending ? { ScanIndexForward: false } : {}),
        ...(limit === undefined ? {} : { Limit: want - items.length }),
        ConsistentRead: true,
      }),
      { abortSignal: query.signal },
    );
    items.push(...(page.Items ?? []));
    startKey = page.LastEvaluatedKey;
  } while (startKey && items.length < want);
  if (limit === undefined || items.length <= limit) return { items, nextCursor: undefined };
  const pageItems = items.slice(0, limit);
  const last = String(pageItems.at(-1)?.[TABLE_SCHEMA.sortKey]);
  return { items: pageItems, nextCursor: encodeCursor(tableKey(query.tenantId, last)) };
}

/**
 * How {@link queryKept} reads: at most `reads` queries of `readSize` items each (positive integers).
 * A listing whose filter keeps few items reads large pages; one that keeps nearly all reads `limit`.
 */
export interface KeptReads {
  reads: number;
  readSize: number;
}

/**
 * One page of a filtered listing: runs `query` page by page ({@link queryTenant}, `reads.readSize` items
 * each, at most `reads.reads` times) and keeps what `keep` maps to a value (undefined drops the item),
 * until `limit` values are kept or the items run out. A page may thus hold fewer than `limit` values
 * while `nextCursor` is set: the reads ran out first.
 * @returns the kept values in query order, and `nextCursor` (a {@link queryTenant} cursor of the same
 *   query, continuing after the last item read) unless no item follows
 * @throws InvalidCursorError for a cursor not issued for this tenant and prefix; the SDK's errors
 */
export async function queryKept<T>(
  client: DynamoDBDocumentClient,
  tableName: string,
  query: Omit<TenantQuery, "limit">,
  options: { limit: number; keep: (item: StoredItem) => T | undefined } & KeptReads,
): Promise<{ kept: T[]; nextCursor: string | undefined }> {
  const kept: T[] = [];
  const { cursor: first, ...rest } = query;
  let cursor = first;
  for (let read = 0; read < options.reads; read++) {
    const page = await queryTenant(client, tableName, {
      ...rest,
      limit: options.readSize,
      ...(cursor === undefined ? {} : { cursor }),
    });
    for (const item of page.items) {
      const value = options.keep(item);
      if (value === undefined) continue;
      kept.push(value);
      if (kept.length === options.limit) {
        const last = page.items.at(-1) === item && page.nextCursor === undefined;
        const sortKey = String(item[TABLE_SCHEMA.sortKey]);
        return { kept, nextCursor: last ? undefined : encodeCursor(tableKey(query.tenantId, sortKey)) };
      }
    }
    cursor = page.nextCursor;
    if (cursor === undefined) return { kept, nextCursor: undefined };
  }
  return { kept, nextCursor: cursor };
}

/**
 * Encodes a key as a cursor: base64url of its JSON. Opaque to clients but not secret: it only names a
 * position in the caller's own partition, and {@link decodeCursor} refuses any other.
 */
export function encodeCursor(key: TableKey): string {
  return Buffer.from(JSON.stringify(key), "utf8").toString("base64url");
}

/** The JSON a cursor carries: exactly the two key attributes, as strings. */
const CursorKey = z
  .object({ [TABLE_SCHEMA.partitionKey]: z.string(), [TABLE_SCHEMA.sortKey]: z.string() })
  .strict();

/**
 * Decodes a cursor back to the ExclusiveStartKey of the next page.
 * @throws InvalidCursorError when it is not base64url JSON of a key in `tenantId`'s partition whose sort
 *   key starts with `prefix`
 */
function decodeCursor(cursor: string, tenantId: string, prefix: string): TableKey {
  if (!/^[A-Za-z0-9_-]+$/.test(cursor)) throw new InvalidCursorError();
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(cursor, "base64url").toString("utf8"));
  } catch {
    throw new InvalidCursorError();
  }
  const key = CursorKey.safeParse(parsed);
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
