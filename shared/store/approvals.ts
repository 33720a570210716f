import {
  ConditionalCheckFailedException,
  ReturnValue,
  ReturnValuesOnConditionCheckFailure,
} from "@aws-sdk/client-dynamodb";
import { type DynamoDBDocumentClient, UpdateCommand } from "@aws-sdk/lib-dynamodb";
import { unmarshall } from "@aws-sdk/util-dynamodb";
import { type ApprovalRecord, ApprovalRecordSchema } from "./approval-record.js";
import { conditionalPut } from "./conditional.js";
import { keys } from "./keys.js";
import { queryList, queryTenant } from "./query.js";
import {
  getItem,
  ITEM_ABSENT,
  ITEM_PRESENT,
  listKey,
  type StoredItem,
  splitItem,
  tableItem,
  tableKey,
} from "./table.js";
import { setFields } from "./update.js";

/**
 * Where an approval's decision goes, kept server-side only: the durable callback id and the name of the
 * wait (`cycle-<n>:approval:<toolCallId>`) in the run's execution.
 */
export interface ApprovalCallback {
  callbackId: string;
  waitName: string;
}

/** What {@link ApprovalStore.decide} did: `decided` (this call's decision won) or `conflict`. */
export type DecideResult =
  | { kind: "decided"; approval: ApprovalRecord; callback: ApprovalCallback }
  | { kind: "conflict"; approval: ApprovalRecord; callback: ApprovalCallback }
  | { kind: "missing" };

/** The attribute holding the durable callback id (never returned by the API). */
const CALLBACK_ID = "callbackId";
/** The attribute holding the wait's name. */
const WAIT_NAME = "waitName";
/** The attribute holding `expiresAt` in epoch ms, for the decision's condition. */
const EXPIRES_AT_MS = "expiresAtMs";

/**
 * Approvals, tenant-scoped (`TENANT#<tenantId>`), each item with a `ttl` (epoch s) of `ttlSeconds` after
 * its expiry (config RUN_TTL_SECONDS, so an approval lives as long as its run's audit trail). Every write
 * is a single-item conditional write: exactly one decision wins. Each write also puts the approval in
 * its list of the listing index (`TENANT#<tenantId>#APPROVALS#pending` by `requestedAt`, then
 * `…#decided` by `decidedAt`; keys.ts), so the item is its own listing entry: one item per approval.
 */
export class ApprovalStore {
  constructor(
    private readonly client: DynamoDBDocumentClient,
    private readonly tableName: string,
    private readonly ttlSeconds: number,
    /** The clock (epoch ms) decisions, expiries and cancels are dated by and listings judge `ttl` by. */
    readonly now: () => number = Date.now,
  ) {}

  /**
   * Writes a pending approval with its durable callback id, unless it exists (a retried submitter, or a
   * replay: the existing item is kept as it is).
   * @returns the approval as stored (the existing one when it was already there)
   * @throws the SDK's errors
   */
  async request(
    input: Omit<ApprovalRecord, "status" | "decidedBy" | "decidedAt" | "reason"> & ApprovalCallback,
  ): Promise<ApprovalRecord> {
    const { callbackId, waitName, ...fields } = input;
    const approval: ApprovalRecord = {
      ...fields,
      status: "pending",
      decidedBy: null,
      decidedAt: null,
      reason: null,
    };
    const expiresAtMs = Date.parse(input.expiresAt);
    const listed = keys.approvalListed(input.requestedAt, input.runId, input.approvalId);
    const item = tableItem(
      tableKey(input.tenantId, keys.approval(input.runId, input.approvalId)),
      "approval",
      {
        ...approval,
        [CALLBACK_ID]: callbackId,
        [WAIT_NAME]: waitName,
        [EXPIRES_AT_MS]: expiresAtMs,
        ...listKey(input.tenantId, keys.approvalList("pending"), listed),
      },
      this.retainedUntil(expiresAtMs),
    );
    const put = await conditionalPut(this.client, {
      tableName: this.tableName,
      item,
      condition: ITEM_ABSENT,
    });
    return put.written || !put.existing ? approval : toApproval(put.existing).approval;
  }

  /**
   * The approval and its callback (server-side only), or undefined when the tenant has none such.
   * @throws the SDK's errors
   */
  async get(
    tenantId: string,
    runId: string,
    approvalId: string,
  ): Promise<{ approval: ApprovalRecord; callback: ApprovalCallback } | undefined> {
    const item = await getItem(
      this.client,
      this.tableName,
      tableKey(tenantId, keys.approval(runId, approvalId)),
    );
    return item ? toApproval(item) : undefined;
  }

  /**
   * Records a decision if the approval is still pending and not past its expiry (one conditional update):
   * exactly one of two concurrent decisions is `decided`, the other a `conflict` carrying the stored one.
   * @param decision.status "approved" or "rejected"; `decidedBy`: the approver's user id; `reason`: ≤ 500 chars
   * @param now the decision time (epoch ms)
   * @returns see {@link DecideResult}; `conflict` also when the approval expired (its status may still be
   *   `pending` with `expiresAt` past, or `expired`)
   * @throws the SDK's errors
   */
  async decide(
    tenantId: string,
    runId: string,
    approvalId: string,
    decision: { status: "approved" | "rejected"; decidedBy: string; reason: string | null },
    now: number = this.now(),
  ): Promise<DecideResult> {
    return this.transition(tenantId, runId, approvalId, {
      condition: `${ITEM_PRESENT} AND #status = :pending AND #expiresAtMs > :now`,
      fields: { status: decision.status, decidedBy: decision.decidedBy, reason: decision.reason },
      now,
    });
  }

  /**
   * Marks a pending approval `expired` (its wait timed out). When a decision was written first (it
   * raced the timeout), that decision stays and is returned: the run honours it.
   * @param now the moment it expired, its `decidedAt` (epoch ms; default {@link now})
   * @returns the approval after the call, or undefined when it does not exist
   * @throws the SDK's errors
   */
  async expire(
    tenantId: string,
    runId: string,
    approvalId: string,
    now: number = this.now(),
  ): Promise<ApprovalRecord | undefined> {
    const result = await this.transition(tenantId, runId, approvalId, {
      condition: `${ITEM_PRESENT} AND #status = :pending`,
      fields: { status: "expired" },
      now,
    });
    return result.kind === "missing" ? undefined : result.approval;
  }

  /**
   * Withdraws every pending approval of a run that was cancelled (`POST /v1/runs/{runId}/cancel`): each
   * one conditional update `pending` → `cancelled` (`decidedAt` = `now`, `decidedBy` and `reason` null).
   * A decision written first stays (that call never ran: the run's execution was stopped before it could
   * resume). A later decision is refused: it finds the approval no longer pending.
   * @param now the cancel time (epoch ms)
   * @returns the approvals this call cancelled, in approval-id order
   * @throws the SDK's errors
   */
  async cancelPending(tenantId: string, runId: string, now: number = this.now()): Promise<ApprovalRecord[]> {
    const cancelled: ApprovalRecord[] = [];
    for (const approval of await this.pendingForRun(tenantId, runId)) {
      const result = await this.transition(tenantId, runId, approval.approvalId, {
        condition: `${ITEM_PRESENT} AND #status = :pending`,
        fields: { status: "cancelled" },
        now,
      });
      if (result.kind === "decided") cancelled.push(result.approval);
    }
    return cancelled;
  }

  /**
   * The pending approvals of one run, in approval-id order (consistent read).
   * @throws the SDK's errors
   */
  async pendingForRun(tenantId: string, runId: string): Promise<ApprovalRecord[]> {
    const { items } = await queryTenant(this.client, this.tableName, {
      tenantId,
      prefix: keys.approvalPrefix(runId),
    });
    return items.map((item) => toApproval(item).approval).filter((approval) => approval.status === "pending");
  }

  /**
   * One page of the tenant's pending approvals, oldest `requestedAt` first: one query of the listing
   * index, so a page holds `limit` approvals unless it is the last. Index reads are eventually
   * consistent: on AWS an approval requested or decided a moment ago may not have joined or left the
   * list yet (a decision on one already decided is then a conflict, as always). Approvals past their
   * `ttl` (not yet deleted by DynamoDB) are left out.
   * @param options.limit page size, a positive integer; `cursor`: a `nextCursor` of this listing
   * @param now the time `ttl` is compared with (epoch ms)
   * @returns the approvals and `nextCursor`, an opaque string, set only when more follow
   * @throws InvalidCursorError for a cursor not issued for this tenant's pending approvals (one of the
   *   decided listing is refused); the SDK's errors
   */
  async listPending(
    tenantId: string,
    options: { limit: number; cursor?: string },
    now: number = this.now(),
  ): Promise<{ approvals: ApprovalRecord[]; nextCursor: string | undefined }> {
    return this.list(tenantId, "pending", options, now);
  }

  /**
   * One page of the tenant's approvals that are no longer pending (approved, rejected, expired,
   * cancelled), newest `decidedAt` first: one query of the listing index, as {@link listPending} (full
   * pages unless the last, eventually consistent: a decision shows within moments on AWS, `ttl` past
   * left out). The decision's one conditional update moved the approval to this list.
   * @param options.limit page size, a positive integer; `cursor`: a `nextCursor` of this listing
   * @param now the time `ttl` is compared with (epoch ms)
   * @throws InvalidCursorError for a cursor not issued for this tenant's decided approvals (a cursor of
   *   the pending listing is one); the SDK's errors
   */
  async listDecided(
    tenantId: string,
    options: { limit: number; cursor?: string },
    now: number = this.now(),
  ): Promise<{ approvals: ApprovalRecord[]; nextCursor: string | undefined }> {
    return this.list(tenantId, "decided", options, now);
  }

  /** One page of one of the tenant's approval lists: pending oldest first, decided newest first. */
  private async list(
    tenantId: string,
    status: "pending" | "decided",
    options: { limit: number; cursor?: string },
    now: number,
  ): Promise<{ approvals: ApprovalRecord[]; nextCursor: string | undefined }> {
    const page = await queryList(this.client, this.tableName, {
      tenantId,
      list: keys.approvalList(status),
      limit: options.limit,
      ...(options.cursor === undefined ? {} : { cursor: options.cursor }),
      newestFirst: status === "decided",
      liveAt: Math.floor(now / 1000),
    });
    return { approvals: page.items.map((item) => toApproval(item).approval), nextCursor: page.nextCursor };
  }

  /** An approval's item TTL (epoch s): `ttlSeconds` after its expiry (`expiresAtMs`, epoch ms). */
  private retainedUntil(expiresAtMs: number): number {
    return Math.floor(expiresAtMs / 1000) + this.ttlSeconds;
  }

  /**
   * Ends an approval's pending state with one conditional update: its `fields`, `decidedAt` (`now`, ISO
   * 8601) and its move to the decided list of the listing index, in the same write. The stored item
   * comes back either way.
   */
  private async transition(
    tenantId: string,
    runId: string,
    approvalId: string,
    change: { condition: string; fields: Record<string, unknown>; now: number },
  ): Promise<DecideResult> {
    const decidedAt = new Date(change.now).toISOString();
    const set = setFields({
      ...change.fields,
      decidedAt,
      ...listKey(tenantId, keys.approvalList("decided"), keys.approvalListed(decidedAt, runId, approvalId)),
    });
    try {
      const result = await this.client.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: tableKey(tenantId, keys.approval(runId, approvalId)),
          UpdateExpression: set.expression,
          ConditionExpression: change.condition,
          ExpressionAttributeNames: {
            ...set.names,
            "#status": "status",
            ...(change.condition.includes("#expiresAtMs") ? { "#expiresAtMs": EXPIRES_AT_MS } : {}),
          },
          ExpressionAttributeValues: {
            ...set.values,
            ":pending": "pending",
            ...(change.condition.includes(":now") ? { ":now": change.now } : {}),
          },
          ReturnValues: ReturnValue.ALL_NEW,
          ReturnValuesOnConditionCheckFailure: ReturnValuesOnConditionCheckFailure.ALL_OLD,
        }),
      );
      return { kind: "decided", ...toApproval(result.Attributes ?? {}) };
    } catch (error) {
      if (!(error instanceof ConditionalCheckFailedException)) throw error;
      const existing = error.Item
        ? unmarshall(error.Item)
        : await getItem(this.client, this.tableName, tableKey(tenantId, keys.approval(runId, approvalId)));
      if (!existing) return { kind: "missing" };
      return { kind: "conflict", ...toApproval(existing) };
    }
  }
}

/**
 * An approval and its callback from a stored item (table attributes and internal fields stripped).
 * @throws ZodError when the item is not an approval ({@link ApprovalRecordSchema}): nothing malformed is
 * shown or decided on
 */
function toApproval(item: StoredItem): { approval: ApprovalRecord; callback: ApprovalCallback } {
  const {
    [CALLBACK_ID]: callbackId,
    [WAIT_NAME]: waitName,
    [EXPIRES_AT_MS]: _expiresAtMs,
    ...approval
  } = splitItem(item).attributes as Record<string, unknown>;
  return {
    approval: ApprovalRecordSchema.parse(approval),
    callback: { callbackId: String(callbackId ?? ""), waitName: String(waitName ?? "") },
  };
}
