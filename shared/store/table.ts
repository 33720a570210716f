import {
  CreateTableCommand,
  type CreateTableCommandInput,
  DescribeTableCommand,
  ResourceInUseException,
} from "@aws-sdk/client-dynamodb";
import { type DynamoDBDocumentClient, GetCommand } from "@aws-sdk/lib-dynamodb";
import { keys } from "./keys.js";

/**
 * The one table schema: attribute names of the key (partition key, sort key, both strings), of the TTL
 * attribute (epoch **seconds**, DynamoDB's TTL format), and the listing index: its name and its key's
 * attribute names (`listPartitionKey`, `listSortKey`, strings; see {@link LIST_INDEX}). infra/stack.ts
 * declares the deployed table with these names and {@link ensureTable} the local one; no other file
 * spells them.
 */
export const TABLE_SCHEMA = {
  partitionKey: "pk",
  sortKey: "sk",
  ttlAttribute: "ttl",
  listIndex: "byList",
  listPartitionKey: "listPk",
  listSortKey: "listSk",
} as const;

/**
 * The table's one global secondary index, the **listing index**: a sparse index holding only items that
 * carry both of its key attributes (set by {@link listKey}; today only approvals), so a listing is one
 * exact query of one list partition (`TENANT#<tenantId>#<list>`, keys.ts) in sort-key order. It projects
 * every attribute (`ALL`), so a listing reads whole items. Its reads are eventually consistent on AWS (a
 * write shows in it within moments); DynamoDB Local and dynalite show it at once. infra/stack.ts and
 * {@link ensureTable} both declare it from this object.
 */
export const LIST_INDEX = {
  name: TABLE_SCHEMA.listIndex,
  partitionKey: TABLE_SCHEMA.listPartitionKey,
  sortKey: TABLE_SCHEMA.listSortKey,
  projection: "ALL",
} as const;

/** Name of the attribute saying what an item is (`invoice`, `quote`, `run`, `run_step`, `idempotency`). */
const TYPE_ATTRIBUTE = "type";

/** A stored item as the document client returns it (numbers as numbers, binary as Uint8Array). */
export type StoredItem = Record<string, unknown>;

/**
 * The primary key of one item, as the SDK's `Key` takes it. Built only by {@link tableKey}, so every
 * partition key is the owning tenant's.
 */
export type TableKey = Readonly<Record<string, string>>;

/** The listing-index attributes of one item ({@link LIST_INDEX}), built only by {@link listKey}. */
export type ListKey = Readonly<Record<string, string>>;

/**
 * The one key function: the key of the item with sort key `sortKey` (a `keys.*` format) in the
 * partition of `tenantId` (`TENANT#<tenantId>`, see shared/store/keys.ts).
 */
export function tableKey(tenantId: string, sortKey: string): TableKey {
  return { [TABLE_SCHEMA.partitionKey]: keys.tenant(tenantId), [TABLE_SCHEMA.sortKey]: sortKey };
}

/**
 * The listing-index attributes that put an item in one list of its tenant: the partition
 * `TENANT#<tenantId>#<list>` (`list` a `keys.*List` name) and `sortKey` (a `keys.*Listed` format), the
 * item's place in that list. Built only here, so every list partition is the owning tenant's. Written
 * in the same write as the state the list stands for (see {@link LIST_INDEX}).
 */
export function listKey(tenantId: string, list: string, sortKey: string): ListKey {
  return {
    [LIST_INDEX.partitionKey]: keys.listPartition(tenantId, list),
    [LIST_INDEX.sortKey]: sortKey,
  };
}

/**
 * Reads the item under `key` with a consistent read (what a conditional write just saw, or a record
 * whatever its TTL says: DynamoDB may not have deleted an expired item yet).
 * @returns the raw item (table attributes included), or undefined when absent
 * @throws the SDK's errors
 */
export async function getItem(
  client: DynamoDBDocumentClient,
  tableName: string,
  key: TableKey,
  signal?: AbortSignal,
): Promise<StoredItem | undefined> {
  const result = await client.send(new GetCommand({ TableName: tableName, Key: key, ConsistentRead: true }), {
    abortSignal: signal,
  });
  return result.Item;
}

/**
 * A full item to write: `attributes`, then the key, the item `type` and, when given, the TTL (epoch
 * seconds, an integer; DynamoDB deletes the item some time after it). Table attributes come last, so a
 * field of `attributes` can never replace them.
 */
export function tableItem(
  key: TableKey,
  type: string,
  attributes: object,
  ttlEpochSeconds?: number,
): StoredItem {
  return {
    ...attributes,
    ...key,
    [TYPE_ATTRIBUTE]: type,
    ...(ttlEpochSeconds === undefined ? {} : { [TABLE_SCHEMA.ttlAttribute]: ttlEpochSeconds }),
  };
}

/**
 * A stored item split into its table attributes and its own fields: `type` (undefined when absent),
 * `expiresAtSeconds`, the TTL in epoch seconds (undefined when the item has none), and `attributes`
 * (everything else: the item with key, listing-index key, type and TTL stripped). The one "strip table
 * attributes" helper of the stores.
 */
export function splitItem(item: StoredItem): {
  type: string | undefined;
  expiresAtSeconds: number | undefined;
  attributes: StoredItem;
} {
  const {
    [TABLE_SCHEMA.partitionKey]: _partition,
    [TABLE_SCHEMA.sortKey]: _sort,
    [TABLE_SCHEMA.listPartitionKey]: _listPartition,
    [TABLE_SCHEMA.listSortKey]: _listSort,
    [TYPE_ATTRIBUTE]: type,
    [TABLE_SCHEMA.ttlAttribute]: ttl,
    ...attributes
  } = item;
  return {
    type: typeof type === "string" ? type : undefined,
    expiresAtSeconds: ttl === undefined ? undefined : Number(ttl),
    attributes,
  };
}

/** Epoch seconds (the unit of the TTL attribute) of `now`, a Date or epoch ms. */
export function epochSeconds(now: Date | number): number {
  return Math.floor((typeof now === "number" ? now : now.getTime()) / 1000);
}

/**
 * Whether an item whose TTL is `expiresAtSeconds` (epoch s; undefined: the item has none) is live at
 * `now`: DynamoDB deletes expired items lazily (up to days later), so every read of the stores treats an
 * item past its TTL as gone. The one liveness rule of the stores' reads ({@link ITEM_LIVE} is the same
 * rule in a condition).
 */
export function isLive(expiresAtSeconds: number | undefined, now: Date | number): boolean {
  return expiresAtSeconds === undefined || expiresAtSeconds > epochSeconds(now);
}

/** Condition: no item exists under the written key. */
export const ITEM_ABSENT = `attribute_not_exists(${TABLE_SCHEMA.partitionKey})`;
/** Condition: an item exists under the key of the update. */
export const ITEM_PRESENT = `attribute_exists(${TABLE_SCHEMA.partitionKey})`;
/**
 * Condition: the item's TTL has passed, so it is logically gone (DynamoDB's TTL deletion lags, up to
 * days). Needs {@link TTL_NAMES} in ExpressionAttributeNames and `:nowSeconds` (epoch s) in the values.
 */
export const ITEM_EXPIRED = "#ttl <= :nowSeconds";
/**
 * Condition (or filter): the item's TTL has not passed yet, the opposite of {@link ITEM_EXPIRED}, with the
 * same names and value.
 */
export const ITEM_LIVE = "#ttl > :nowSeconds";
/** ExpressionAttributeNames for {@link ITEM_EXPIRED}, {@link ITEM_LIVE} and {@link TTL_ASSIGNMENT} (`ttl` is a reserved word). */
export const TTL_NAMES = { "#ttl": TABLE_SCHEMA.ttlAttribute } as const;
/** Update clause setting the TTL to `:expiresAtSeconds` (epoch s); needs {@link TTL_NAMES}. */
export const TTL_ASSIGNMENT = "#ttl = :expiresAtSeconds";
/**
 * Update clause setting the item's type to `:itemType`, for items an UpdateItem may create (counters);
 * needs {@link TYPE_NAMES}.
 */
export const TYPE_ASSIGNMENT = "#itemType = :itemType";
/** ExpressionAttributeNames for {@link TYPE_ASSIGNMENT}. */
export const TYPE_NAMES = { "#itemType": TYPE_ATTRIBUTE } as const;

/** The table's attribute definitions, key schema and index, as CreateTable takes them. */
function tableDefinition(tableName: string): CreateTableCommandInput {
  const strings = [
    TABLE_SCHEMA.partitionKey,
    TABLE_SCHEMA.sortKey,
    LIST_INDEX.partitionKey,
    LIST_INDEX.sortKey,
  ];
  return {
    TableName: tableName,
    BillingMode: "PAY_PER_REQUEST",
    AttributeDefinitions: strings.map((name) => ({ AttributeName: name, AttributeType: "S" })),
    KeySchema: [
      { AttributeName: TABLE_SCHEMA.partitionKey, KeyType: "HASH" },
      { AttributeName: TABLE_SCHEMA.sortKey, KeyType: "RANGE" },
    ],
    GlobalSecondaryIndexes: [
      {
        IndexName: LIST_INDEX.name,
        KeySchema: [
          { AttributeName: LIST_INDEX.partitionKey, KeyType: "HASH" },
          { AttributeName: LIST_INDEX.sortKey, KeyType: "RANGE" },
        ],
        Projection: { ProjectionType: LIST_INDEX.projection },
      },
    ],
  };
}

/**
 * Creates the service table (string partition and sort keys of {@link TABLE_SCHEMA}, the
 * {@link LIST_INDEX}, on-demand) if it does not exist, and waits until it and its index are ACTIVE
 * (polling every 50 ms, at most 100 times). For local runs and tests; on AWS the CDK stack owns the table.
 * @throws the SDK's error for anything but "already exists"; Error when it is not ACTIVE in time, or when
 *   the table exists without the listing index (a table created before the index: local data, so
 *   delete it or name another table; dynalite cannot add an index to a table)
 */
export async function ensureTable(client: DynamoDBDocumentClient, tableName: string): Promise<void> {
  try {
    await client.send(new CreateTableCommand(tableDefinition(tableName)));
  } catch (error) {
    if (!(error instanceof ResourceInUseException)) throw error;
  }
  for (let attempt = 0; attempt < 100; attempt += 1) {
    const { Table } = await client.send(new DescribeTableCommand({ TableName: tableName }));
    const index = Table?.GlobalSecondaryIndexes?.find((gsi) => gsi.IndexName === LIST_INDEX.name);
    if (Table?.TableStatus === "ACTIVE" && !index) {
      throw new Error(
        `Table ${tableName} has no index ${LIST_INDEX.name} (it was created before the approvals listing used one): delete the table or set TABLE_NAME to a new one.`,
      );
    }
    if (Table?.TableStatus === "ACTIVE" && (index?.IndexStatus ?? "ACTIVE") === "ACTIVE") return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`Table ${tableName} did not become ACTIVE.`);
}
