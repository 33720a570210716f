import { type DynamoDBDocumentClient, UpdateCommand } from "@aws-sdk/lib-dynamodb";
import { keys } from "./keys.js";
import { getItem, type StoredItem, splitItem, TYPE_ASSIGNMENT, TYPE_NAMES, tableKey } from "./table.js";

/**
 * The limits a tenant set for itself (`PUT /v1/limits`, `npm run tenant -- limits`), replacing the
 * deploy's for that tenant (docs/quotas.md). One item per tenant (`LIMITS`), never expiring.
 */

/** The fields of a tenant's limits: runs per minute and in flight, tokens and cost (a decimal string) per day. */
export const LIMIT_FIELDS = [
  "tenantRunsPerMinute",
  "tenantConcurrentRuns",
  "tenantTokensPerDay",
  "tenantCostPerDay",
  "userRunsPerMinute",
  "userTokensPerDay",
  "userCostPerDay",
] as const;

/** One field of {@link LIMIT_FIELDS}. */
export type LimitField = (typeof LIMIT_FIELDS)[number];

/**
 * A tenant's stored limits: the fields it set (numbers, costs as decimal strings; a field it never set
 * or set back to null is absent), and who set them last and when (ISO 8601).
 */
export interface StoredLimits {
  limits: Partial<Record<LimitField, number | string>>;
  updatedBy: string | null;
  updatedAt: string | null;
}

/** The limits store of one table. Each method is one request. */
export class QuotaLimitStore {
  constructor(
    private readonly client: DynamoDBDocumentClient,
    private readonly tableName: string,
  ) {}

  /** The tenant's limits (a consistent read); no fields when it set none. */
  async get(tenantId: string, signal?: AbortSignal): Promise<StoredLimits> {
    const item = await getItem(this.client, this.tableName, tableKey(tenantId, keys.quotaLimits), signal);
    return storedOf(item);
  }

  /**
   * Sets the given fields and removes those given as null, in one UpdateItem; fields not given stay.
   * @returns the limits as they are after the write
   * @throws the SDK's errors
   */
  async update(
    tenantId: string,
    changes: Partial<Record<LimitField, number | string | null>>,
    by: { userId: string; at: string },
  ): Promise<StoredLimits> {
    const names: Record<string, string> = {
      "#updatedBy": "updatedBy",
      "#updatedAt": "updatedAt",
      ...TYPE_NAMES,
    };
    const values: Record<string, unknown> = {
      ":updatedBy": by.userId,
      ":updatedAt": by.at,
      ":itemType": "limits",
    };
    const sets = ["#updatedBy = :updatedBy", "#updatedAt = :updatedAt", TYPE_ASSIGNMENT];
    const removes: string[] = [];
    for (const field of LIMIT_FIELDS) {
      const value = changes[field];
      if (value === undefined) continue;
      names[`#${field}`] = field;
      if (value === null) removes.push(`#${field}`);
      else {
        sets.push(`#${field} = :${field}`);
        values[`:${field}`] = value;
      }
    }
    const output = await this.client.send(
      new UpdateCommand({
        TableName: this.tableName,
        Key: tableKey(tenantId, keys.quotaLimits),
        UpdateExpression: `SET ${sets.join(", ")}${removes.length > 0 ? ` REMOVE ${removes.join(", ")}` : ""}`,
        ExpressionAttributeNames: names,
        ExpressionAttributeValues: values,
        ReturnValues: "ALL_NEW",
      }),
    );
    return storedOf(output.Attributes);
  }
}

/** The stored limits of an item (none when there is no item). */
function storedOf(item: StoredItem | undefined): StoredLimits {
  if (!item) return { limits: {}, updatedBy: null, updatedAt: null };
  const { attributes } = splitItem(item);
  const limits: StoredLimits["limits"] = {};
  for (const field of LIMIT_FIELDS) {
    const value = attributes[field];
    if (typeof value === "number" || typeof value === "string") limits[field] = value;
  }
  return {
    limits,
    updatedBy: typeof attributes.updatedBy === "string" ? attributes.updatedBy : null,
    updatedAt: typeof attributes.updatedAt === "string" ? attributes.updatedAt : null,
  };
}
