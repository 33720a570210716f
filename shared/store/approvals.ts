import {
  ConditionalCheckFailedException,
  ReturnValue,
  ReturnValuesOnConditionCheckFailure,
} from "@aws-sdk/client-dynamodb";
import { type DynamoDBDocumentClient, PutCommand, UpdateCommand } from "@aws-sdk/lib-dynamodb";
import { unmarshall } from "@aws-sdk/util-dynamodb";
import { conditionalPut } from "./conditional.js";
import { keys } from "./keys.js";
import { queryKept, queryTenant } from "./query.js";
import {
  getItem,
  ITEM_ABSENT,
  ITEM_PRESENT,
  type StoredItem,
  splitItem,
  tableItem,
  tableKey,
} from "./table.js";
import { setFields } from "./update.js";

/**
 * Where an approval is: `pending` until a person decides (`approved`, `rejected`), it `expired`, or its
 * run was cancelled while it waited (`cancelled`: withdrawn, no decision can be taken on it any more).
 */
export type ApprovalStatus = "pending" | "approved" | "rejected" | "expired" | "cancelled";

/**
 * One approval of a run's tool call (sort key `APPROVAL#<runId>#<approvalId>`), as the API shows it.
 * The durable callback id is kept server-side only (see {@link ApprovalStore.get}); this type has none.
 * - `arguments`: the call's validated arguments; `preview`: the backend's numbers (decimal strings)
 * - `requestedBy`: the user who started the run (the four-eyes rule keeps them from deciding)
 * - `requestedAt`, `expiresAt`, `decidedAt`: ISO 8601; `decidedBy`, `decidedAt`, `reason` are null while
 *   pending (an expired or cancelled approval has `decidedAt` = when it was marked so, `decidedBy` null)
 */
export interface ApprovalRecord {
  approvalId: string;
  runId: string;
  tenantId: string;
  toolName: string;
  toolCallId: string;
  arguments: unknown;
  preview: Record<string, unknown>;
  requestedBy: string;
  requestedAt: string;
  expiresAt: string;
  status: ApprovalStatus;
  decidedBy: string | null;
  decidedAt: string | null;
  reason: string | null;
}

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

/** Table reads of one {@link ApprovalStore.listPending} or {@link ApprovalStore.listDecided} at most. */
export const APPROVAL_LIST_READS = 5;
/** Approvals each read of {@link ApprovalStore.listPending} asks for (most of a tenant's are decided). */
export const APPROVAL_LIST_READ_SIZE = 100;

/** The attribute holding the durable callback id (never returned by the API). */
const CALLBACK_ID = "callbackId";
/** The attribute holding the wait's name. */
const WAIT_NAME = "waitName";
/** The attribute holding `expiresAt` in epoch ms, for the decision's condition. */
const EXPIRES_AT_MS = "expiresAtMs";

/**
 * Approvals, tenant-scoped (`TENANT#<tenantId>`), each item with a `ttl` (epoch s) of `ttlSeconds` after
 * its expiry (config RUN_TTL_SECONDS, so an approval lives as long as its run's audit trail). Every write
 * is a single-item conditional write: exactly one decision wins.
 */
export class ApprovalStore {
  constructor(
    private readonly client: DynamoDBDocumentClient,
    private readonly tableName: string,
    private readonly ttlSeconds: number,
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
    const item = tableItem(
      tableKey(input.tenantId, keys.approval(input.runId, input.approvalId)),
      "approval",
      { ...approval, [CALLBACK_ID]: callbackId, [WAIT_NAME]: waitName, [EXPIRES_AT_MS]: expiresAtMs },
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
    now: number = Date.now(),
  ): Promise<DecideResult> {
    return this.transition(tenantId, runId, approvalId, {
      condition: `${ITEM_PRESENT} AND #status = :pending AND #expiresAtMs > :now`,
      fields: {
        status: decision.status,
        decidedBy: decision.decidedBy,
        decidedAt: new Date(now).toISOString(),
        reason: decision.reason,
      },
      now,
    });
  }

  /**
   * Marks a pending approval `expired` (its wait timed out). When a decision was written first (it
   * raced the timeout), that decision stays and is returned: the run honours it.
   * @returns the approval after the call, or undefined when it does not exist
   * @throws the SDK's errors
   */
  async expire(
    tenantId: string,
    runId: string,
    approvalId: string,
    now: number = Date.now(),
  ): Promise<ApprovalRecord | undefined> {
    const result = await this.transition(tenantId, runId, approvalId, {
      condition: `${ITEM_PRESENT} AND #status = :pending`,
      fields: { status: "expired", decidedAt: new Date(now).toISOString() },
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
  async cancelPending(tenantId: string, runId: string, now: number = Date.now()): Promise<ApprovalRecord[]> {
    const cancelled: ApprovalRecord[] = [];
    for (const approval of await this.pendingForRun(tenantId, runId)) {
      const result = await this.transition(tenantId, runId, approval.approvalId, {
        condition: `${ITEM_PRESENT} AND #status = :pending`,
        fields: { status: "cancelled", decidedAt: new Date(now).toISOString() },
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
   * One page of the tenant's pending approvals (run id, then approval id order): reads up to
   * {@link APPROVAL_LIST_READS} table pages of {@link APPROVAL_LIST_READ_SIZE} approvals and keeps the
   * pending ones, so a page may hold fewer than `limit` (even none) while `nextCursor` says more follow
   * (a tenant with many decided approvals); `nextCursor` is the store's cursor (see `queryTenant`).
   * @param options.limit page size, a positive integer
   * @throws InvalidCursorError for a cursor not issued for this tenant's approvals; the SDK's errors
   */
  async listPending(
    tenantId: string,
    options: { limit: number; cursor?: string },
  ): Promise<{ approvals: ApprovalRecord[]; nextCursor: string | undefined }> {
    const page = await queryKept(
      this.client,
      this.tableName,
      { tenantId, prefix: keys.approvalPrefix(), ...cursorOf(options) },
      {
        limit: options.limit,
        reads: APPROVAL_LIST_READS,
        readSize: APPROVAL_LIST_READ_SIZE,
        keep: (item) => {
          const { approval } = toApproval(item);
          return approval.status === "pending" ? approval : undefined;
        },
      },
    );
    return { approvals: page.kept, nextCursor: page.nextCursor };
  }

  /**
   * One page of the tenant's approvals that are no longer pending (approved, rejected, expired,
   * cancelled), newest `decidedAt` first, from their copies under `DECIDED#` (see {@link recordDecided}):
   * every item read is one, so a page holds `limit` unless it is the last; only copies past their `ttl`
   * (not yet deleted by DynamoDB) are left out. `nextCursor` is the store's cursor (see `queryTenant`).
   * @param options.limit page size, a positive integer
   * @param now the time `ttl` is compared with (epoch ms)
   * @throws InvalidCursorError for a cursor not issued for this tenant's decided approvals (a cursor of
   *   the pending listing is one); the SDK's errors
   */
  async listDecided(
    tenantId: string,
    options: { limit: number; cursor?: string },
    now: number = Date.now(),
  ): Promise<{ approvals: ApprovalRecord[]; nextCursor: string | undefined }> {
    const nowSeconds = Math.floor(now / 1000);
    const page = await queryKept(
      this.client,
      this.tableName,
      { tenantId, prefix: keys.decidedApprovalPrefix, descending: true, ...cursorOf(options) },
      {
        limit: options.limit,
        reads: APPROVAL_LIST_READS,
        readSize: options.limit,
        keep: (item) => {
          const split = splitItem(item);
          return Number(split.expiresAtSeconds) > nowSeconds ? toApproval(item).approval : undefined;
        },
      },
    );
    return { approvals: page.kept, nextCursor: page.nextCursor };
  }

  /**
   * Writes the copy of an approval that is no longer pending under
   * `DECIDED#<decidedAt>#<runId>#<approvalId>` (no callback id; the approval's `ttl`), which
   * {@link listDecided} reads newest first. Called after every transition that ended the approval's
   * pending state, and again whenever a later call finds it so (a repeated decision, a late one, an
   * expiry or cancel that lost the race): a put of the same item, so a copy lost with a process that
   * stopped between the two writes is written by the next call that meets the approval.
   * @throws the SDK's errors
   */
  private async recordDecided(approval: ApprovalRecord): Promise<void> {
    if (approval.status === "pending" || approval.decidedAt === null) return;
    const key = tableKey(
      approval.tenantId,
      keys.decidedApproval(approval.decidedAt, approval.runId, approval.approvalId),
    );
    const item = tableItem(
      key,
      "approval_decided",
      approval,
      this.retainedUntil(Date.parse(approval.expiresAt)),
    );
    await this.client.send(new PutCommand({ TableName: this.tableName, Item: item }));
  }

  /** An approval's item TTL (epoch s): `ttlSeconds` after its expiry (`expiresAtMs`, epoch ms). */
  private retainedUntil(expiresAtMs: number): number {
    return Math.floor(expiresAtMs / 1000) + this.ttlSeconds;
  }

  /** One conditional update of an approval's fields; the stored item comes back either way. */
  private async transition(
    tenantId: string,
    runId: string,
    approvalId: string,
    change: { condition: string; fields: Record<string, unknown>; now: number },
  ): Promise<DecideResult> {
    const set = setFields(change.fields);
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
      const decided = toApproval(result.Attributes ?? {});
      await this.recordDecided(decided.approval);
      return { kind: "decided", ...decided };
    } catch (error) {
      if (!(error instanceof ConditionalCheckFailedException)) throw error;
      const existing = error.Item
        ? unmarshall(error.Item)
        : await getItem(this.client, this.tableName, tableKey(tenantId, keys.approval(runId, approvalId)));
      if (!existing) return { kind: "missing" };
      const stored = toApproval(existing);
      await this.recordDecided(stored.approval);
      return { kind: "conflict", ...stored };
    }
  }
}

/** The `cursor` of a listing's options, when there is one (an absent cursor is left out, not undefined). */
const cursorOf = (options: { cursor?: string }) =>
  options.cursor === undefined ? {} : { cursor: options.cursor };

/** An approval and its callback from a stored item (table attributes and internal fields stripped). */
function toApproval(item: StoredItem): { approval: ApprovalRecord; callback: ApprovalCallback } {
  const {
    [CALLBACK_ID]: callbackId,
    [WAIT_NAME]: waitName,
    [EXPIRES_AT_MS]: _expiresAtMs,
    ...approval
  } = splitItem(item).attributes as Record<string, unknown>;
  return {
    approval: approval as unknown as ApprovalRecord,
    callback: { callbackId: String(callbackId ?? ""), waitName: String(waitName ?? "") },
  };
}
