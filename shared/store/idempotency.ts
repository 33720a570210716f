import type { DynamoDBDocumentClient } from "@aws-sdk/lib-dynamodb";
import { COMPRESS_ABOVE_BYTES, decodeText, encodeText } from "./compressed.js";
import { keys } from "./keys.js";
import { type Lease, type LeaseRecord, LeaseStore } from "./lease.js";
import { type StoredItem, tableKey } from "./table.js";

/**
 * Cap on a stored response body in bytes, after compression. DynamoDB items are limited to 400 KB
 * (names and values); 350 000 bytes leaves room for the record's other attributes. A response over the
 * cap is not stored: {@link IdempotencyStore.complete} answers `too_large` and writes nothing, and the
 * caller releases the record.
 */
export const MAX_STORED_RESPONSE_BYTES = 350_000;

/**
 * What a repeated operation gets back, as stored for replay: `kind` says what it is (an adapter's own
 * name: `http_response` for the HTTP API's responses, `tool_result` and `approval_pending` for MCP's
 * calls), `body` the text exactly as first given; an HTTP response also keeps its `status` and the
 * `headers` to send again (content-type and any problem headers; lower-case names). Records written
 * before kinds existed have none: they are HTTP responses, or MCP's with status 200 (a result) or 202
 * (an approval pending), which shared/mcp's adapter still reads.
 */
export interface StoredOutcome {
  kind?: string | undefined;
  status?: number | undefined;
  headers?: Record<string, string> | undefined;
  body: string;
}

/** The stored form of an HTTP response (see {@link StoredOutcome}): its status and headers are kept. */
export type StoredResponse = StoredOutcome & { status: number; headers: Record<string, string> };

/**
 * An Idempotency-Key record as read from the table: the lease record (see `LeaseRecord`: status, owner,
 * fingerprint, lease in epoch ms, TTL in epoch s, timestamps) of one tenant and route, with the stored
 * response once COMPLETED.
 */
export type IdempotencyRecord = Omit<LeaseRecord<StoredOutcome>, "data" | "attributes"> & {
  tenantId: string;
  route: string;
  response: StoredOutcome | undefined;
};

/**
 * Proof that this request holds a record (a `Lease` of the record's key), with the tenant and route it
 * was taken for: what completion and release need. Frozen at acquire time.
 */
export interface IdempotencyClaim extends Lease {
  readonly tenantId: string;
  readonly route: string;
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
  | { kind: "completed"; response: StoredOutcome; record: IdempotencyRecord }
  | { kind: "in_progress"; retryAfterSeconds: number; record: IdempotencyRecord }
  | { kind: "mismatch"; record: IdempotencyRecord };

/** The result of {@link IdempotencyStore.complete}. */
export type CompleteResult = "completed" | "not_owner" | "too_large";

/** Options of an {@link IdempotencyStore}: retention in seconds, and the clock (epoch ms; for tests). */
export interface IdempotencyStoreOptions {
  ttlSeconds: number;
  now?: () => number;
}

/**
 * The idempotency record store (an HTTP Idempotency-Key, an MCP call's key): a {@link LeaseStore} whose records are keyed by
 * tenant, route and the SHA-256 of the client's key (`IDEM#<route>#<sha256>`), whose fingerprint is the
 * request's, whose lease is the run's deadline and whose data is the response to replay (attribute
 * `response`; gzip-compressed above {@link COMPRESS_ABOVE_BYTES}, refused above
 * {@link MAX_STORED_RESPONSE_BYTES}). See `LeaseStore` for the protocol: acquire is a conditional put,
 * complete an owner-fenced update, release an owner-fenced delete (for 5xx outcomes: a retry runs again).
 */
export class IdempotencyStore extends LeaseStore<StoredOutcome> {
  constructor(client: DynamoDBDocumentClient, tableName: string, options: IdempotencyStoreOptions) {
    super(client, tableName, { ...options, type: "idempotency", dataAttribute: "response" });
  }

  /**
   * Claims the record of (`tenantId`, `userId`, `route`, `idempotencyKey`) for a request, or reports why not (see
   * {@link AcquireResult}; the fingerprint is compared first, so a different request under a used key is
   * a `mismatch` even when the record is COMPLETED).
   * @param input.leaseExpiresAt epoch ms; written as given even when it is already now (0 ms remaining)
   * @throws StoreContentionError when the record kept vanishing under the put; the SDK's error when the
   *   store cannot be reached
   */
  async acquire(input: {
    tenantId: string;
    userId: string;
    route: string;
    idempotencyKey: string;
    fingerprint: string;
    leaseExpiresAt: number;
  }): Promise<AcquireResult> {
    const found = await this.acquireLease(
      tableKey(input.tenantId, keys.idempotency(input.route, input.userId, input.idempotencyKey)),
      {
        fingerprint: input.fingerprint,
        leaseExpiresAt: input.leaseExpiresAt,
        attributes: { tenantId: input.tenantId, route: input.route },
      },
    );
    switch (found.kind) {
      case "acquired": {
        const claim: IdempotencyClaim = Object.freeze({
          ...found.lease,
          tenantId: input.tenantId,
          route: input.route,
        });
        return { kind: "acquired", claim, previousOwner: found.previousOwner };
      }
      case "completed":
        return { kind: "completed", response: found.data, record: toRecord(found.record) };
      case "in_progress":
        return {
          kind: "in_progress",
          retryAfterSeconds: found.retryAfterSeconds,
          record: toRecord(found.record),
        };
      case "mismatch":
        return { kind: "mismatch", record: toRecord(found.record) };
    }
  }

  /**
   * Stores the response and marks the record COMPLETED, only if `claim` still owns it. The retention
   * restarts at completion (now + ttlSeconds).
   * @returns `completed`; `not_owner` when the fence failed (nothing written); `too_large` when the body
   *   is over {@link MAX_STORED_RESPONSE_BYTES} even compressed (nothing written)
   * @throws the SDK's error when the store cannot be reached
   */
  complete(claim: IdempotencyClaim, response: StoredOutcome): Promise<CompleteResult> {
    return this.completeLease(claim, response);
  }

  /**
   * Deletes the record so the next request with the key executes again, only if `claim` still owns it
   * and it is IN_PROGRESS (a COMPLETED record or another owner's record is never deleted).
   * @returns true when deleted, false when the fence failed
   * @throws the SDK's error when the store cannot be reached
   */
  release(claim: IdempotencyClaim): Promise<boolean> {
    return this.releaseLease(claim);
  }

  /**
   * Reads a record (consistent read), whatever its state, including one past its TTL; undefined when
   * absent. For operators and tests.
   */
  async read(
    tenantId: string,
    userId: string,
    route: string,
    idempotencyKey: string,
  ): Promise<IdempotencyRecord | undefined> {
    const record = await this.readLease(tableKey(tenantId, keys.idempotency(route, userId, idempotencyKey)));
    return record ? toRecord(record) : undefined;
  }

  /**
   * The stored form of a response (its body encoded by shared/store/compressed.ts: gzip above
   * {@link COMPRESS_ABOVE_BYTES}), or undefined when it is over the cap even compressed.
   */
  protected encodeData(response: StoredOutcome): StoredItem | undefined {
    const encoded = encodeText(response.body, {
      compressAboveBytes: COMPRESS_ABOVE_BYTES,
      maxBytes: MAX_STORED_RESPONSE_BYTES,
    });
    return (
      encoded && {
        ...(response.kind === undefined ? {} : { kind: response.kind }),
        ...(response.status === undefined ? {} : { status: response.status }),
        ...(response.headers === undefined ? {} : { headers: response.headers }),
        ...encoded,
      }
    );
  }

  /** A response back from its stored form (gunzipped when `encoding` is gzip). */
  protected decodeData(stored: unknown): StoredOutcome | undefined {
    if (!stored || typeof stored !== "object") return undefined;
    const { kind, status, headers } = stored as Record<string, unknown>;
    const text = decodeText(stored);
    // A record without a kind was written as an HTTP response: its status is part of it.
    if (text === undefined || (typeof kind !== "string" && typeof status !== "number")) return undefined;
    return {
      ...(typeof kind === "string" ? { kind } : {}),
      ...(typeof status === "number" ? { status } : {}),
      headers: (headers ?? {}) as Record<string, string>,
      body: text,
    };
  }
}

function toRecord(record: LeaseRecord<StoredOutcome>): IdempotencyRecord {
  const { attributes, data, ...lease } = record;
  return { ...lease, tenantId: String(attributes.tenantId), route: String(attributes.route), response: data };
}
