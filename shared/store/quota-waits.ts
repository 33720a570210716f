import { DeleteCommand, type DynamoDBDocumentClient, PutCommand } from "@aws-sdk/lib-dynamodb";
import { keys } from "./keys.js";
import { queryTenant } from "./query.js";
import { splitItem, tableItem, tableKey } from "./table.js";

/**
 * Durable runs waiting for budget (docs/quotas.md "Durable runs wait"): one item per waiting run
 * (`QUOTAWAIT#<runId>`) with the callback that wakes it, written when the wait starts and deleted when it
 * ends, so raising a tenant's limits can wake every run it has waiting. The callback id stays
 * server-side; nothing here is model text.
 */

/** One waiting run: its id, the callback id and wait name that complete its wait, and since when (ISO 8601). */
export interface QuotaWaitRecord {
  runId: string;
  callbackId: string;
  waitName: string;
  since: string;
}

/** The quota waits of one table. Each method is one request (the listing, one query). */
export class QuotaWaitStore {
  constructor(
    private readonly client: DynamoDBDocumentClient,
    private readonly tableName: string,
  ) {}

  /**
   * Records (or replaces: a retried submitter writes the same run again) a run's wait; it expires with
   * `expiresAtSeconds` (epoch s) if nothing deletes it.
   */
  async put(tenantId: string, wait: QuotaWaitRecord, expiresAtSeconds: number): Promise<void> {
    await this.client.send(
      new PutCommand({
        TableName: this.tableName,
        Item: tableItem(tableKey(tenantId, keys.quotaWait(wait.runId)), "quota_wait", wait, expiresAtSeconds),
      }),
    );
  }

  /** Deletes a run's wait (none is fine). */
  async delete(tenantId: string, runId: string): Promise<void> {
    await this.client.send(
      new DeleteCommand({ TableName: this.tableName, Key: tableKey(tenantId, keys.quotaWait(runId)) }),
    );
  }

  /** Every wait the tenant has (live or not yet deleted by TTL), in run-id order. */
  async list(tenantId: string): Promise<QuotaWaitRecord[]> {
    const page = await queryTenant(this.client, this.tableName, { tenantId, prefix: keys.quotaWaitPrefix });
    return page.items.map((item) => splitItem(item).attributes as unknown as QuotaWaitRecord);
  }
}
