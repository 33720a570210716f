import { randomUUID } from "node:crypto";
import { ConditionalCheckFailedException } from "@aws-sdk/client-dynamodb";
import { DeleteCommand, type DynamoDBDocumentClient, GetCommand, UpdateCommand } from "@aws-sdk/lib-dynamodb";
import { ToolBusinessError } from "../agent/tool.js";
import { conditionalPut, type StoredItem } from "./conditional.js";
import { keys } from "./keys.js";

/**
 * Thrown by an effect to say it certainly had no effect (for example the remote API refused the call
 * before doing anything). It is the only way a guard record is deleted: the guard releases its record
 * (owner-fenced) so a retry may run the effect, then rethrows `cause`.
 */
export class EffectNotStartedError extends Error {
  constructor(message: string, options: { cause?: unknown } = {}) {
    super(message, options);
    this.name = new.target.name;
  }
}

/**
 * Another call with the same tool idempotency key holds the guard under a live lease. A business error
 * (code EFFECT_IN_PROGRESS), so the model sees it as a tool result; `details.retryAfterSeconds` says when
 * to look again.
 */
export class EffectInProgressError extends ToolBusinessError {
  constructor(retryAfterSeconds: number) {
    super(
      "EFFECT_IN_PROGRESS",
      "The same operation is being carried out by another call; it was not started again.",
      { retryAfterSeconds },
    );
  }
}

/**
 * An earlier call with the same key started the effect and never completed (it threw, or its process
 * died and its lease ran out). The effect may have happened, so it is not run again: a person or a
 * reconciliation job must check the external system. Code EFFECT_OUTCOME_UNKNOWN.
 */
export class EffectOutcomeUnknownError extends ToolBusinessError {
  constructor(startedAt: string) {
    super(
      "EFFECT_OUTCOME_UNKNOWN",
      "An earlier attempt of this operation started and did not finish; it may have taken effect, so it is not repeated. Check the external system before retrying under a new request.",
      { startedAt },
    );
  }
}

/**
 * What {@link EffectGuard.run} returns: the effect's result (stored JSON on a replay), whether it ran
 * now, and `ownerFenceLost: true` when it ran but its record had been taken over before it could be
 * completed (the caller logs it; the result is still this call's truth).
 */
export interface GuardedResult<T> {
  result: T;
  replayed: boolean;
  ownerFenceLost?: true;
}

/**
 * Exactly-once guard for a mutating tool whose effect lies outside DynamoDB (an e-mail, a payment API),
 * keyed by the tool call's idempotency key (`GUARD#<sha256(key)>` under the tenant). Effects that are a
 * DynamoDB write do not need it: they put their item with `attribute_not_exists` instead (see
 * LedgerStore.recordOnce), so effect and proof are one item.
 *
 * Protocol, single-item conditional writes only:
 * 1. put IN_PROGRESS with a random owner token and a lease (`leaseExpiresAt`, epoch ms), only if no live
 *    record exists (`attribute_not_exists(pk)` or `ttl` passed);
 * 2. run the effect;
 * 3. update to COMPLETED with the result (JSON), conditioned on `owner = me AND status = IN_PROGRESS`.
 *
 * **The rule: a guard record is never deleted when the effect throws, because the effect may already have
 * happened** (a timeout after the remote side committed looks exactly like a failure). The record stays
 * IN_PROGRESS: while its lease lives, a duplicate gets {@link EffectInProgressError}; after it, every
 * retry gets {@link EffectOutcomeUnknownError} and the effect is not repeated (at most once; unknown
 * outcomes go to reconciliation, not to a blind retry). This is the difference from Powertools for AWS
 * Lambda, which deletes its record when the wrapped function throws. The one exception is an effect that
 * throws {@link EffectNotStartedError}: it vouches it did nothing, so the record is released.
 * Records expire `ttlSeconds` after they are written (epoch-seconds `ttl`, checked in the condition).
 */
export class EffectGuard {
  private readonly ttlSeconds: number;
  private readonly now: () => number;

  constructor(
    private readonly client: DynamoDBDocumentClient,
    private readonly tableName: string,
    options: { ttlSeconds: number; now?: () => number },
  ) {
    this.ttlSeconds = options.ttlSeconds;
    this.now = options.now ?? Date.now;
  }

  /**
   * Runs `effect` at most once for (`tenantId`, `toolKey`); a later call with the same key returns the
   * stored result (`replayed: true`) without running it.
   * @param input.toolKey the tool call's idempotency key (ToolContext.idempotencyKey)
   * @param input.leaseExpiresAt epoch ms until which a duplicate is told "in progress" (the run's deadline)
   * @throws EffectInProgressError, EffectOutcomeUnknownError (see the class doc); whatever `effect`
   *   throws (the record then stays IN_PROGRESS), or the `cause` of an EffectNotStartedError;
   *   Error when the result is not JSON-serializable; the SDK's errors. When completion finds another
   *   owner (only possible after the record's ttl passed) nothing is overwritten and the result is
   *   still returned, since the effect did run here.
   */
  async run<T>(
    input: { tenantId: string; toolKey: string; leaseExpiresAt: number; signal?: AbortSignal },
    effect: () => Promise<T>,
  ): Promise<GuardedResult<T>> {
    const pk = keys.tenant(input.tenantId);
    const sk = keys.guard(input.toolKey);
    const owner = `own_${randomUUID()}`;
    const now = this.now();
    const nowSeconds = Math.floor(now / 1000);
    const put = await conditionalPut(
      this.client,
      {
        tableName: this.tableName,
        item: {
          pk,
          sk,
          type: "guard",
          status: "IN_PROGRESS",
          owner,
          leaseExpiresAt: Math.floor(input.leaseExpiresAt),
          ttl: nowSeconds + this.ttlSeconds,
          startedAt: new Date(now).toISOString(),
        },
        condition: "attribute_not_exists(pk) OR #ttl <= :nowSeconds",
        names: { "#ttl": "ttl" },
        values: { ":nowSeconds": nowSeconds },
      },
      input.signal,
    );
    if (!put.written) return this.existing<T>(put.existing, now);

    let result: T;
    try {
      result = await effect();
    } catch (error) {
      if (error instanceof EffectNotStartedError) {
        await this.release(pk, sk, owner);
        throw error.cause ?? error;
      }
      throw error; // The record stays IN_PROGRESS: the effect may have happened.
    }
    const json = JSON.stringify(result);
    if (json === undefined) throw new Error("A guarded effect must return a JSON-serializable value.");
    try {
      await this.client.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: { pk, sk },
          UpdateExpression: "SET #status = :completed, #result = :result, completedAt = :at",
          ConditionExpression: "#owner = :owner AND #status = :inProgress",
          ExpressionAttributeNames: { "#status": "status", "#owner": "owner", "#result": "result" },
          ExpressionAttributeValues: {
            ":completed": "COMPLETED",
            ":inProgress": "IN_PROGRESS",
            ":owner": owner,
            ":result": json,
            ":at": new Date(this.now()).toISOString(),
          },
        }),
      );
    } catch (error) {
      if (!(error instanceof ConditionalCheckFailedException)) throw error;
      // The fence held: someone else owns the record now (only possible once its ttl passed). The effect
      // did run here, so its result is still the truth for this call; nothing is overwritten.
      return { result, replayed: false, ownerFenceLost: true };
    }
    return { result, replayed: false };
  }

  /** Reads a guard record (consistent read) for operators and tests; undefined when absent. */
  async read(tenantId: string, toolKey: string): Promise<StoredItem | undefined> {
    const result = await this.client.send(
      new GetCommand({
        TableName: this.tableName,
        Key: { pk: keys.tenant(tenantId), sk: keys.guard(toolKey) },
        ConsistentRead: true,
      }),
    );
    return result.Item;
  }

  private existing<T>(record: StoredItem | undefined, now: number): GuardedResult<T> {
    // Gone between the put and the read: only an EffectNotStartedError release does that; look again soon.
    if (!record) throw new EffectInProgressError(1);
    if (record.status === "COMPLETED" && typeof record.result === "string") {
      return { result: JSON.parse(record.result) as T, replayed: true };
    }
    const lease = Number(record.leaseExpiresAt);
    if (lease > now) throw new EffectInProgressError(Math.max(1, Math.ceil((lease - now) / 1000)));
    throw new EffectOutcomeUnknownError(String(record.startedAt));
  }

  private async release(pk: string, sk: string, owner: string): Promise<void> {
    try {
      await this.client.send(
        new DeleteCommand({
          TableName: this.tableName,
          Key: { pk, sk },
          ConditionExpression: "#owner = :owner AND #status = :inProgress",
          ExpressionAttributeNames: { "#status": "status", "#owner": "owner" },
          ExpressionAttributeValues: { ":owner": owner, ":inProgress": "IN_PROGRESS" },
        }),
      );
    } catch (error) {
      if (!(error instanceof ConditionalCheckFailedException)) throw error;
    }
  }
}
