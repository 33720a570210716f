import { randomUUID } from "node:crypto";
import { ConditionalCheckFailedException } from "@aws-sdk/client-dynamodb";
import { DeleteCommand, type DynamoDBDocumentClient, UpdateCommand } from "@aws-sdk/lib-dynamodb";
import { conditionalPut } from "./conditional.js";
import { CONDITIONAL_WRITE_ATTEMPTS, StoreContentionError } from "./errors.js";
import {
  getItem,
  ITEM_ABSENT,
  ITEM_EXPIRED,
  isLive,
  type StoredItem,
  splitItem,
  type TableKey,
  TTL_ASSIGNMENT,
  TTL_NAMES,
  tableItem,
} from "./table.js";

/** Lifecycle of a lease record: IN_PROGRESS while its owner works, COMPLETED with the stored data. */
export type LeaseStatus = "IN_PROGRESS" | "COMPLETED";

/**
 * Attribute names of a lease record, defined once (the stored data's own attribute is chosen by each
 * store, see {@link LeaseStoreOptions.dataAttribute}). `status` is a DynamoDB reserved word, so every
 * expression names them through placeholders.
 */
const ATTRIBUTES = {
  status: "status",
  owner: "owner",
  fingerprint: "fingerprint",
  leaseExpiresAt: "leaseExpiresAt",
  createdAt: "createdAt",
  completedAt: "completedAt",
} as const;

/** Placeholders of {@link ATTRIBUTES} for expressions. */
const NAMES = {
  "#status": ATTRIBUTES.status,
  "#owner": ATTRIBUTES.owner,
  "#fp": ATTRIBUTES.fingerprint,
  "#lease": ATTRIBUTES.leaseExpiresAt,
  "#completedAt": ATTRIBUTES.completedAt,
} as const;

/** The owner fence of completion and release: the caller still holds an IN_PROGRESS record. */
const OWNED = "#owner = :owner AND #status = :inProgress";

/**
 * A lease record as read from the table.
 * - `owner`: random token of the holder; completion and release are conditioned on it ("fenced")
 * - `fingerprint`: what the holder is doing (a hash of the request); only the same fingerprint may
 *   take over an expired lease, and a different one is a `mismatch`
 * - `leaseExpiresAt`: epoch **ms** after which an IN_PROGRESS holder is presumed crashed
 * - `expiresAtSeconds`: the item's TTL, epoch **seconds**: after it the record is logically gone (every
 *   condition compares it with the clock; DynamoDB's TTL deletes it later)
 * - `createdAt`, `completedAt`: ISO 8601 UTC; `data`: the stored result once COMPLETED
 * - `attributes`: the store's own fields written at acquire time (for example tenant and route)
 */
export interface LeaseRecord<D> {
  status: LeaseStatus;
  owner: string;
  fingerprint: string;
  leaseExpiresAt: number;
  expiresAtSeconds: number;
  createdAt: string;
  completedAt: string | undefined;
  data: D | undefined;
  attributes: StoredItem;
}

/**
 * Proof that the caller holds a lease record: what completion and release need. Frozen at acquire
 * time, so nothing the holder does to its own input can change which record it completes.
 */
export interface Lease {
  readonly key: TableKey;
  readonly owner: string;
  readonly fingerprint: string;
  readonly leaseExpiresAt: number;
}

/**
 * What acquiring a lease found:
 * - `acquired`: the caller now holds the record and must complete or release it. `previousOwner` is set
 *   when it took over an IN_PROGRESS record of the same fingerprint whose lease had expired (a crash).
 * - `completed`: the same work already completed; `data` is its stored result.
 * - `in_progress`: the same work runs under a live lease; look again after `retryAfterSeconds` (≥ 1).
 * - `mismatch`: the record belongs to a different fingerprint, whatever its status.
 */
export type LeaseAcquisition<D> =
  | { kind: "acquired"; lease: Lease; previousOwner: string | undefined }
  | { kind: "completed"; data: D; record: LeaseRecord<D> }
  | { kind: "in_progress"; retryAfterSeconds: number; record: LeaseRecord<D> }
  | { kind: "mismatch"; record: LeaseRecord<D> };

/** What completing a lease did: stored; fence failed (another owner, nothing written); data over the cap. */
export type LeaseCompletion = "completed" | "not_owner" | "too_large";

/**
 * Options of a {@link LeaseStore}.
 * - `type`: the item type written with each record (`idempotency`, …)
 * - `dataAttribute`: the attribute holding the completed result
 * - `ttlSeconds`: retention of a record, from acquire and again from completion
 * - `now`: the clock, epoch ms (for tests)
 */
export interface LeaseStoreOptions {
  type: string;
  dataAttribute: string;
  ttlSeconds: number;
  now?: () => number;
}

/**
 * The one lease-record implementation of the stores, in the manner of Powertools for AWS Lambda's
 * idempotency persistence layer (`BasePersistenceLayer` with `DynamoDBPersistenceLayer`): attribute
 * names defined once, records keyed by the one key function (`tableKey`), and three template methods,
 * each a single-item conditional write:
 * - {@link acquireLease} (put): IN_PROGRESS with a fresh owner token, the fingerprint, the lease (epoch
 *   ms) and the TTL (epoch s), only when no live record exists, or when the record is an IN_PROGRESS one
 *   of the same fingerprint whose lease expired (takeover after a crash);
 * - {@link completeLease} (update): COMPLETED with the encoded data, fenced on `owner = me AND
 *   IN_PROGRESS`; the retention restarts;
 * - {@link releaseLease} (delete): fenced the same way, so a COMPLETED or another owner's record is
 *   never deleted.
 * A store extends it with its key, its public API and the codec of its data ({@link encodeData},
 * {@link decodeData}). A caller that does not hold a record never writes to it.
 */
export abstract class LeaseStore<D> {
  private readonly type: string;
  private readonly dataAttribute: string;
  private readonly ttlSeconds: number;
  protected readonly now: () => number;

  protected constructor(
    private readonly client: DynamoDBDocumentClient,
    private readonly tableName: string,
    options: LeaseStoreOptions,
  ) {
    this.type = options.type;
    this.dataAttribute = options.dataAttribute;
    this.ttlSeconds = options.ttlSeconds;
    this.now = options.now ?? Date.now;
  }

  /** The stored form of `data`, or undefined when it cannot be stored (too large). */
  protected abstract encodeData(data: D): unknown;
  /** `data` back from its stored form; undefined when it is not one {@link encodeData} wrote. */
  protected abstract decodeData(stored: unknown): D | undefined;

  /**
   * Claims the record under `key` (see the class doc). The fingerprint is compared first, so a different
   * fingerprint is a `mismatch` even when the record is COMPLETED. When the record that failed the put
   * is gone (or itself expired) by the time it is read, the put is tried again, up to
   * {@link CONDITIONAL_WRITE_ATTEMPTS} times; after that a record seen at least once is `in_progress`
   * (retry after 1 s).
   * @param input.leaseExpiresAt epoch ms; written as given (floored) even when it is already now
   * @param input.attributes the store's own fields, written with the record
   * @throws StoreContentionError when no attempt could read the record it conflicted with; the SDK's
   *   errors when the table cannot be reached
   */
  protected async acquireLease(
    key: TableKey,
    input: { fingerprint: string; leaseExpiresAt: number; attributes: object },
  ): Promise<LeaseAcquisition<D>> {
    let record: LeaseRecord<D> | undefined;
    for (let attempt = 0; attempt < CONDITIONAL_WRITE_ATTEMPTS; attempt += 1) {
      const now = this.now();
      const nowSeconds = Math.floor(now / 1000);
      const lease: Lease = Object.freeze({
        key,
        owner: `own_${randomUUID()}`,
        fingerprint: input.fingerprint,
        leaseExpiresAt: Math.floor(input.leaseExpiresAt),
      });
      const put = await conditionalPut(this.client, {
        tableName: this.tableName,
        item: tableItem(
          key,
          this.type,
          {
            ...input.attributes,
            [ATTRIBUTES.status]: "IN_PROGRESS",
            [ATTRIBUTES.owner]: lease.owner,
            [ATTRIBUTES.fingerprint]: lease.fingerprint,
            [ATTRIBUTES.leaseExpiresAt]: lease.leaseExpiresAt,
            [ATTRIBUTES.createdAt]: new Date(now).toISOString(),
          },
          nowSeconds + this.ttlSeconds,
        ),
        condition: `${ITEM_ABSENT} OR ${ITEM_EXPIRED} OR (#status = :inProgress AND #lease <= :nowMs AND #fp = :fp)`,
        names: { ...TTL_NAMES, "#status": NAMES["#status"], "#lease": NAMES["#lease"], "#fp": NAMES["#fp"] },
        values: {
          ":nowSeconds": nowSeconds,
          ":nowMs": now,
          ":inProgress": "IN_PROGRESS",
          ":fp": input.fingerprint,
        },
        returnPrevious: true,
      });
      if (put.written) {
        const previous = put.previous ? this.toRecord(put.previous) : undefined;
        const tookOver = previous && isLive(previous.expiresAtSeconds, now) ? previous.owner : undefined;
        return { kind: "acquired", lease, previousOwner: tookOver };
      }
      if (!put.existing) continue;
      record = this.toRecord(put.existing);
      if (!isLive(record.expiresAtSeconds, now)) continue;
      if (record.fingerprint !== input.fingerprint) return { kind: "mismatch", record };
      if (record.status === "COMPLETED" && record.data !== undefined) {
        return { kind: "completed", data: record.data, record };
      }
      if (record.status === "IN_PROGRESS" && record.leaseExpiresAt > now) {
        return { kind: "in_progress", retryAfterSeconds: retryAfter(record.leaseExpiresAt, now), record };
      }
    }
    if (!record) throw new StoreContentionError("A lease record", CONDITIONAL_WRITE_ATTEMPTS);
    return { kind: "in_progress", retryAfterSeconds: 1, record };
  }

  /**
   * Stores `data` and marks the record COMPLETED, only if `lease` still owns it (another caller may have
   * taken over after this one's lease ran out). The retention restarts: TTL = now + ttlSeconds.
   * @returns `completed`; `not_owner` when the fence failed; `too_large` when {@link encodeData}
   *   refused the data (nothing is written in either case)
   * @throws the SDK's errors when the table cannot be reached
   */
  protected async completeLease(lease: Lease, data: D): Promise<LeaseCompletion> {
    const encoded = this.encodeData(data);
    if (encoded === undefined) return "too_large";
    const now = this.now();
    try {
      await this.client.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: lease.key,
          UpdateExpression: `SET #status = :completed, #data = :data, #completedAt = :at, ${TTL_ASSIGNMENT}`,
          ConditionExpression: OWNED,
          ExpressionAttributeNames: {
            ...TTL_NAMES,
            "#status": NAMES["#status"],
            "#owner": NAMES["#owner"],
            "#completedAt": NAMES["#completedAt"],
            "#data": this.dataAttribute,
          },
          ExpressionAttributeValues: {
            ":completed": "COMPLETED",
            ":inProgress": "IN_PROGRESS",
            ":owner": lease.owner,
            ":data": encoded,
            ":at": new Date(now).toISOString(),
            ":expiresAtSeconds": Math.floor(now / 1000) + this.ttlSeconds,
          },
        }),
      );
      return "completed";
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) return "not_owner";
      throw error;
    }
  }

  /**
   * Deletes the record so the next caller acquires it afresh, only if `lease` still owns it and it is
   * IN_PROGRESS.
   * @returns true when deleted, false when the fence failed (nothing deleted)
   * @throws the SDK's errors when the table cannot be reached
   */
  protected async releaseLease(lease: Lease): Promise<boolean> {
    try {
      await this.client.send(
        new DeleteCommand({
          TableName: this.tableName,
          Key: lease.key,
          ConditionExpression: OWNED,
          ExpressionAttributeNames: { "#status": NAMES["#status"], "#owner": NAMES["#owner"] },
          ExpressionAttributeValues: { ":owner": lease.owner, ":inProgress": "IN_PROGRESS" },
        }),
      );
      return true;
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) return false;
      throw error;
    }
  }

  /**
   * Reads the record under `key` (consistent read) whatever its state, including one past its TTL.
   * @returns undefined when absent
   * @throws the SDK's errors when the table cannot be reached
   */
  protected async readLease(key: TableKey): Promise<LeaseRecord<D> | undefined> {
    const item = await getItem(this.client, this.tableName, key);
    return item ? this.toRecord(item) : undefined;
  }

  private toRecord(item: StoredItem): LeaseRecord<D> {
    const { expiresAtSeconds, attributes } = splitItem(item);
    const {
      [ATTRIBUTES.status]: status,
      [ATTRIBUTES.owner]: owner,
      [ATTRIBUTES.fingerprint]: fingerprint,
      [ATTRIBUTES.leaseExpiresAt]: leaseExpiresAt,
      [ATTRIBUTES.createdAt]: createdAt,
      [ATTRIBUTES.completedAt]: completedAt,
      [this.dataAttribute]: data,
      ...rest
    } = attributes;
    return {
      status: status === "COMPLETED" ? "COMPLETED" : "IN_PROGRESS",
      owner: String(owner),
      fingerprint: String(fingerprint),
      leaseExpiresAt: Number(leaseExpiresAt),
      expiresAtSeconds: Number(expiresAtSeconds),
      createdAt: String(createdAt),
      completedAt: typeof completedAt === "string" ? completedAt : undefined,
      data: data === undefined ? undefined : this.decodeData(data),
      attributes: rest,
    };
  }
}

/** Whole seconds until `leaseExpiresAt` (epoch ms), at least 1 (an HTTP Retry-After value). */
function retryAfter(leaseExpiresAt: number, now: number): number {
  return Math.max(1, Math.ceil((leaseExpiresAt - now) / 1000));
}
