import { TransactionCanceledException } from "@aws-sdk/client-dynamodb";
import { type DynamoDBDocumentClient, PutCommand, TransactWriteCommand } from "@aws-sdk/lib-dynamodb";
import { keys } from "./keys.js";
import {
  type PolicySetVersion,
  PolicySetVersionSchema,
  type ShadowDecisionRecord,
  ShadowDecisionRecordSchema,
} from "./policy-records.js";
import { queryTenant } from "./query.js";
import { getItem, ITEM_ABSENT, splitItem, tableItem, tableKey } from "./table.js";

/**
 * A tenant's policy set head (`POLICYSET`): its latest version and the version it enforces: the latest
 * when that is `enforce`, the last enforced version before it while the latest is `shadow` (null: none,
 * so the deployment's default set is enforced).
 */
export interface PolicySetHead {
  latest: PolicySetVersion;
  enforced: PolicySetVersion | null;
}

/** What a conditional store of a new version found: stored, or the precondition no longer held. */
export type PutVersionResult = { kind: "stored"; head: PolicySetHead } | { kind: "conflict" };

/**
 * The policy sets of tenants, in the one table (keys.ts `policySet`, `policySetVersion`,
 * `policyShadow`): a head item per tenant, every version kept as its own item, and the shadow
 * decisions that differed. A new version is one transaction: the version item (new) and the head
 * (conditioned on the version the writer saw), so two writers never both win and a refused write stores
 * nothing.
 */
export class PolicySetStore {
  constructor(
    private readonly client: DynamoDBDocumentClient,
    private readonly tableName: string,
    private readonly shadowTtlSeconds: number,
  ) {}

  /** The tenant's head, or undefined when it has no set of its own (consistent read). */
  async head(tenantId: string, signal?: AbortSignal): Promise<PolicySetHead | undefined> {
    const item = await getItem(this.client, this.tableName, tableKey(tenantId, keys.policySet), signal);
    if (!item) return undefined;
    const { latest, enforced } = splitItem(item).attributes as unknown as PolicySetHead;
    return { latest, enforced: enforced ?? null };
  }

  /**
   * Stores `version` as the tenant's latest, if the head is still at `expectedVersion` (null: the tenant
   * has no set yet). `enforced` is the version to enforce from now on.
   * @returns stored (the new head), or conflict when the head moved (nothing stored)
   * @throws the SDK's errors
   */
  async putVersion(
    tenantId: string,
    version: PolicySetVersion,
    enforced: PolicySetVersion | null,
    expectedVersion: number | null,
  ): Promise<PutVersionResult> {
    const head: PolicySetHead = { latest: version, enforced };
    const headCondition =
      expectedVersion === null
        ? { ConditionExpression: ITEM_ABSENT }
        : {
            ConditionExpression: "latest.version = :expected",
            ExpressionAttributeValues: { ":expected": expectedVersion },
          };
    try {
      await this.client.send(
        new TransactWriteCommand({
          TransactItems: [
            {
              Put: {
                TableName: this.tableName,
                Item: tableItem(
                  tableKey(tenantId, keys.policySetVersion(version.version)),
                  "policy_set_version",
                  version,
                ),
                ConditionExpression: ITEM_ABSENT,
              },
            },
            {
              Put: {
                TableName: this.tableName,
                Item: tableItem(tableKey(tenantId, keys.policySet), "policy_set", head),
                ...headCondition,
              },
            },
          ],
        }),
      );
      return { kind: "stored", head };
    } catch (error) {
      if (error instanceof TransactionCanceledException) {
        const conflict = error.CancellationReasons?.some(
          (reason) => reason.Code === "ConditionalCheckFailed",
        );
        if (conflict) return { kind: "conflict" };
      }
      throw error;
    }
  }

  /** The tenant's kept versions, newest first, a page at a time (`limit`, `cursor` as the stores page). */
  async versions(
    tenantId: string,
    page: { limit: number; cursor?: string | undefined },
  ): Promise<{ versions: PolicySetVersion[]; nextCursor: string | undefined }> {
    const found = await queryTenant(this.client, this.tableName, {
      tenantId,
      prefix: keys.policySetVersionPrefix,
      limit: page.limit,
      ...(page.cursor ? { cursor: page.cursor } : {}),
      descending: true,
    });
    return {
      versions: found.items.map((item) => PolicySetVersionSchema.parse(splitItem(item).attributes)),
      nextCursor: found.nextCursor,
    };
  }

  /** Keeps a shadow decision that differed (overwrites its own earlier copy: a replay writes it again). */
  async recordShadow(tenantId: string, record: ShadowDecisionRecord): Promise<void> {
    const key = tableKey(tenantId, keys.policyShadow(record.decidedAt, record.runId, record.toolCallId));
    const expiresAtSeconds = Math.ceil(Date.parse(record.decidedAt) / 1000) + this.shadowTtlSeconds;
    await this.client.send(
      new PutCommand({
        TableName: this.tableName,
        Item: tableItem(key, "policy_shadow", record, expiresAtSeconds),
      }),
    );
  }

  /** The tenant's shadow decisions, newest first, a page at a time. */
  async shadowDecisions(
    tenantId: string,
    page: { limit: number; cursor?: string | undefined },
  ): Promise<{ decisions: ShadowDecisionRecord[]; nextCursor: string | undefined }> {
    const found = await queryTenant(this.client, this.tableName, {
      tenantId,
      prefix: keys.policyShadowPrefix,
      limit: page.limit,
      ...(page.cursor ? { cursor: page.cursor } : {}),
      descending: true,
    });
    return {
      decisions: found.items.map((item) => ShadowDecisionRecordSchema.parse(splitItem(item).attributes)),
      nextCursor: found.nextCursor,
    };
  }
}
