import { randomUUID } from "node:crypto";
import { ConditionalCheckFailedException } from "@aws-sdk/client-dynamodb";
import { DeleteCommand, type DynamoDBDocumentClient, GetCommand, UpdateCommand } from "@aws-sdk/lib-dynamodb";
import { decodeText, encodeText } from "./compressed.js";
import { conditionalPut, type StoredItem } from "./conditional.js";
import { keys } from "./keys.js";

/**
 * Stored responses above this many UTF-8 bytes are gzip-compressed (attribute `response.encoding` =
 * `gzip`, body as binary). Smaller ones stay readable text.
 */
export const COMPRESS_RESPONSE_ABOVE_BYTES = 8 * 1024;

/**
 * Cap on a stored response body in bytes, after compression. DynamoDB items are limited to 400 KB
 * (names and values); 350 000 bytes leaves room for the record's other attributes. A response over the
 * cap is not stored: {@link IdempotencyStore.complete} answers `too_large` and writes nothing, and the
 * caller releases the record (the choice for issue 4 is "store compressed", with this cap as the limit).
 */
export const MAX_STORED_RESPONSE_BYTES = 350_000;

/** Lifecycle of an Idempotency-Key record: IN_PROGRESS while its owner runs, COMPLETED with a response. */
export type IdempotencyStatus = "IN_PROGRESS" | "COMPLETED";

/**
 * An HTTP response as stored for replay: `status` (HTTP status code), the `headers` to send again
 * (content-type and any problem headers; lower-case names) and the body text exactly as first sent.
 */
export interface StoredResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/**
 * An Idempotency-Key record as read from the table.
 * - `owner`: random token of the request that holds (or held) the record; completion and release are
 *   conditioned on it ("fenced")
 * - `fingerprint`: hex SHA-256 identifying the request (see run-idempotency.ts)
 * - `leaseExpiresAt`: epoch **ms** at which an IN_PROGRESS holder is presumed crashed (the run's deadline)
 * - `ttl`: epoch **seconds** (integer) after which the record is logically gone; DynamoDB's TTL deletes
 *   it some time later, so every condition also compares it with the current time
 */
export interface IdempotencyRecord {
  tenantId: string;
  route: string;
  status: IdempotencyStatus;
  owner: string;
  fingerprint: string;
  leaseExpiresAt: number;
  ttl: number;
  createdAt: string;
  completedAt: string | undefined;
  response: StoredResponse | undefined;
}

/**
 * Proof that this request holds a record: what completion and release need. It is a frozen copy taken
 * at acquire time, so nothing the handler does to its own input can change which record is completed.
 */
export interface IdempotencyClaim {
  readonly tenantId: string;
  readonly route: string;
  readonly pk: string;
  readonly sk: string;
  readonly owner: string;
  readonly fingerprint: string;
  readonly leaseExpiresAt: number;
}

/**
 * The result of {@link IdempotencyStore.acquire}:
 * - `acquired`: this request now holds the record and must execute, then complete or release.
 *   `previousOwner` is set when it took over an IN_PROGRESS record whose lease had expired (a crash).
 * - `completed`: the same request already completed; replay `response`.
 * - `in_progress`: the same request is running under a live lease; retry after `retryAfterSeconds`.
 * - `mismatch`: the key was used for a different request (other fingerprint), whatever the record's status.
 */
export type AcquireResult =
  | { kind: "acquired"; claim: IdempotencyClaim; previousOwner: string | undefined }
  | { kind: "completed"; response: StoredResponse; record: IdempotencyRecord }
  | { kind: "in_progress"; retryAfterSeconds: number; record: IdempotencyRecord }
  | { kind: "mismatch"; record: IdempotencyRecord };

/** The result of {@link IdempotencyStore.complete}. */
export type CompleteResult = "completed" | "not_owner" | "too_large";

/** Options of an {@link IdempotencyStore}: retention in seconds, and the clock (epoch ms; for tests). */
export interface IdempotencyStoreOptions {
  ttlSeconds: number;
  now?: () => number;
}

/** Attribute names of the acquire condition (status and ttl are DynamoDB reserved words). */
const ACQUIRE_NAMES = {
  "#status": "status",
  "#fp": "fingerprint",
  "#lease": "leaseExpiresAt",
  "#ttl": "ttl",
} as const;

/**
 * The HTTP Idempotency-Key record store (issue 4). Every write is one single-item conditional write:
 * - acquire: a conditional put of IN_PROGRESS with a fresh owner token, the request fingerprint, a
 *   lease (epoch ms) and a TTL (epoch s). It succeeds when no live record exists, or when the record is
 *   an IN_PROGRESS one of the same fingerprint whose lease expired (takeover after a crash).
 * - complete: an update to COMPLETED with the response, conditioned on `owner = me AND IN_PROGRESS`.
 * - release: a delete conditioned on `owner = me AND IN_PROGRESS` (for 5xx outcomes: retry runs again).
 * A request that does not hold the record never writes to it.
 */
export class IdempotencyStore {
  private readonly ttlSeconds: number;
  private readonly now: () => number;

  constructor(
    private readonly client: DynamoDBDocumentClient,
    private readonly tableName: string,
    options: IdempotencyStoreOptions,
  ) {
    this.ttlSeconds = options.ttlSeconds;
    this.now = options.now ?? Date.now;
  }

  /**
   * Claims the record of (`tenantId`, `route`, `idempotencyKey`) for a request, or reports why not.
   * The fingerprint is compared first, so a different request under a used key is a `mismatch` even when
   * the record is COMPLETED or IN_PROGRESS (and even when the failed put returned the record).
   * @param input.leaseExpiresAt epoch ms; written as given even when it is already now (0 ms remaining)
   * @throws the SDK's error when the store cannot be reached
   */
  async acquire(input: {
    tenantId: string;
    route: string;
    idempotencyKey: string;
    fingerprint: string;
    leaseExpiresAt: number;
  }): Promise<AcquireResult> {
    const pk = keys.tenant(input.tenantId);
    const sk = keys.idempotency(input.route, input.idempotencyKey);
    let record: IdempotencyRecord | undefined;
    // A record can change between the failed put and the read (released, completed, lease ran out):
    // classify again with a fresh put, a few times, before answering "in progress".
    for (let attempt = 0; attempt < 3; attempt += 1) {
      const now = this.now();
      const nowSeconds = Math.floor(now / 1000);
      const claim: IdempotencyClaim = Object.freeze({
        tenantId: input.tenantId,
        route: input.route,
        pk,
        sk,
        owner: `own_${randomUUID()}`,
        fingerprint: input.fingerprint,
        leaseExpiresAt: Math.floor(input.leaseExpiresAt),
      });
      const put = await conditionalPut(this.client, {
        tableName: this.tableName,
        item: {
          pk,
          sk,
          type: "idempotency",
          tenantId: input.tenantId,
          route: input.route,
          status: "IN_PROGRESS",
          owner: claim.owner,
          fingerprint: claim.fingerprint,
          leaseExpiresAt: claim.leaseExpiresAt,
          ttl: nowSeconds + this.ttlSeconds,
          createdAt: new Date(now).toISOString(),
        },
        condition:
          "attribute_not_exists(pk) OR #ttl <= :nowSeconds OR " +
          "(#status = :inProgress AND #lease <= :nowMs AND #fp = :fp)",
        names: ACQUIRE_NAMES,
        values: {
          ":nowSeconds": nowSeconds,
          ":nowMs": now,
          ":inProgress": "IN_PROGRESS",
          ":fp": input.fingerprint,
        },
        returnPrevious: true,
      });
      if (put.written) {
        const previous = put.previous ? toRecord(put.previous) : undefined;
        const tookOver = previous && previous.ttl > nowSeconds ? previous.owner : undefined;
        return { kind: "acquired", claim, previousOwner: tookOver };
      }
      if (!put.existing) continue;
      record = toRecord(put.existing);
      if (record.ttl <= nowSeconds) continue;
      if (record.fingerprint !== input.fingerprint) return { kind: "mismatch", record };
      if (record.status === "COMPLETED" && record.response) {
        return { kind: "completed", response: record.response, record };
      }
      if (record.status === "IN_PROGRESS" && record.leaseExpiresAt > now) {
        return { kind: "in_progress", retryAfterSeconds: retryAfter(record.leaseExpiresAt, now), record };
      }
    }
    if (!record) throw new Error("Idempotency record kept changing; could not classify it.");
    return { kind: "in_progress", retryAfterSeconds: 1, record };
  }

  /**
   * Stores the response and marks the record COMPLETED, only if `claim` still owns it (another request
   * may have taken over after this one's lease ran out). The retention restarts at completion:
   * `ttl` = now + ttlSeconds. Bodies over {@link COMPRESS_RESPONSE_ABOVE_BYTES} are gzip-compressed;
   * over {@link MAX_STORED_RESPONSE_BYTES} after compression nothing is written.
   * @returns `completed`; `not_owner` when the fence failed (nothing written); `too_large`
   * @throws the SDK's error when the store cannot be reached
   */
  async complete(claim: IdempotencyClaim, response: StoredResponse): Promise<CompleteResult> {
    const encoded = encodeResponse(response);
    if (!encoded) return "too_large";
    const now = this.now();
    try {
      await this.client.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: { pk: claim.pk, sk: claim.sk },
          UpdateExpression: "SET #status = :completed, #response = :response, completedAt = :at, #ttl = :ttl",
          ConditionExpression: "#owner = :owner AND #status = :inProgress",
          ExpressionAttributeNames: {
            "#status": "status",
            "#owner": "owner",
            "#ttl": "ttl",
            "#response": "response",
          },
          ExpressionAttributeValues: {
            ":completed": "COMPLETED",
            ":inProgress": "IN_PROGRESS",
            ":owner": claim.owner,
            ":response": encoded,
            ":at": new Date(now).toISOString(),
            ":ttl": Math.floor(now / 1000) + this.ttlSeconds,
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
   * Deletes the record so the next request with the key executes again, only if `claim` still owns it
   * and it is IN_PROGRESS (a COMPLETED record or another owner's record is never deleted).
   * @returns true when deleted, false when the fence failed
   * @throws the SDK's error when the store cannot be reached
   */
  async release(claim: IdempotencyClaim): Promise<boolean> {
    try {
      await this.client.send(
        new DeleteCommand({
          TableName: this.tableName,
          Key: { pk: claim.pk, sk: claim.sk },
          ConditionExpression: "#owner = :owner AND #status = :inProgress",
          ExpressionAttributeNames: { "#status": "status", "#owner": "owner" },
          ExpressionAttributeValues: { ":owner": claim.owner, ":inProgress": "IN_PROGRESS" },
        }),
      );
      return true;
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) return false;
      throw error;
    }
  }

  /**
   * Reads a record (consistent read), whatever its state, including one past its `ttl`; undefined when
   * absent. For operators and tests.
   */
  async read(
    tenantId: string,
    route: string,
    idempotencyKey: string,
  ): Promise<IdempotencyRecord | undefined> {
    const result = await this.client.send(
      new GetCommand({
        TableName: this.tableName,
        Key: { pk: keys.tenant(tenantId), sk: keys.idempotency(route, idempotencyKey) },
        ConsistentRead: true,
      }),
    );
    return result.Item ? toRecord(result.Item) : undefined;
  }
}

/** Whole seconds until `leaseExpiresAt` (epoch ms), at least 1 (an HTTP Retry-After value). */
function retryAfter(leaseExpiresAt: number, now: number): number {
  return Math.max(1, Math.ceil((leaseExpiresAt - now) / 1000));
}

/** The stored form of a response, or undefined when it is over the cap even compressed. */
function encodeResponse(response: StoredResponse): StoredItem | undefined {
  const encoded = encodeText(response.body, {
    compressAboveBytes: COMPRESS_RESPONSE_ABOVE_BYTES,
    maxBytes: MAX_STORED_RESPONSE_BYTES,
  });
  return encoded && { status: response.status, headers: response.headers, ...encoded };
}

function decodeResponse(stored: unknown): StoredResponse | undefined {
  if (!stored || typeof stored !== "object") return undefined;
  const { status, headers } = stored as Record<string, unknown>;
  const text = decodeText(stored);
  if (typeof status !== "number" || text === undefined) return undefined;
  return { status, headers: (headers ?? {}) as Record<string, string>, body: text };
}

function toRecord(item: StoredItem): IdempotencyRecord {
  return {
    tenantId: String(item.tenantId),
    route: String(item.route),
    status: item.status === "COMPLETED" ? "COMPLETED" : "IN_PROGRESS",
    owner: String(item.owner),
    fingerprint: String(item.fingerprint),
    leaseExpiresAt: Number(item.leaseExpiresAt),
    ttl: Number(item.ttl),
    createdAt: String(item.createdAt),
    completedAt: typeof item.completedAt === "string" ? item.completedAt : undefined,
    response: decodeResponse(item.response),
  };
}
