import { type DynamoDBDocumentClient, GetCommand, QueryCommand } from "@aws-sdk/lib-dynamodb";
import { sha256Hex } from "../agent/idempotency-key.js";
import type { MoneyValue } from "../money/money.js";
import { conditionalPut } from "./conditional.js";
import { keys } from "./keys.js";

/**
 * An invoice in the ledger. Every amount was copied from a backend-computed tax quote (calculateTax);
 * money is a decimal string plus integer minor units, never a float.
 * - `quoteId`: the quote the amounts came from; `rateVersion`, `rate`, `taxPointDate` (YYYY-MM-DD)
 *   identify the tax rule row used
 * - `clientReference`, `description`: optional free text from the caller (null when not given)
 */
export interface Invoice {
  invoiceId: string;
  tenantId: string;
  clientName: string;
  clientReference: string | null;
  description: string | null;
  quoteId: string;
  jurisdiction: string;
  currency: string;
  rateVersion: string;
  rate: string;
  taxPointDate: string;
  subtotal: MoneyValue;
  taxAmount: MoneyValue;
  grossTotal: MoneyValue;
  /** The idempotency key the invoice id was derived from. */
  idempotencyKey: string;
  runId: string;
  createdBy: string;
  /** ISO 8601 UTC. */
  createdAt: string;
}

/** The invoice fields a caller supplies; the id and audit fields are derived. */
export type NewInvoice = Omit<Invoice, "invoiceId" | "idempotencyKey" | "createdAt">;

/**
 * Derives the invoice id from the quote it records: `inv_` + the first 24 hex characters of
 * SHA-256(`quote:` + quoteId). One quote has one possible invoice id in its tenant's partition, so the
 * ledger put's `attribute_not_exists` condition itself enforces "one quote, at most one invoice" (issue
 * 19): the effect, the proof that it happened and the claim on the quote are one item, with no separate
 * claim record that a crash could leave written without its invoice.
 */
export function invoiceIdForQuote(quoteId: string): string {
  return `inv_${sha256Hex(`quote:${quoteId}`).slice(0, 24)}`;
}

/**
 * Raised by {@link LedgerStore.recordOnce} when the quote was already recorded by another operation
 * (another idempotency key: another run, or another call in the same run). `invoice` is the existing
 * invoice, unchanged.
 */
export class QuoteAlreadyRecordedError extends Error {
  constructor(readonly invoice: Invoice) {
    super(`Quote ${invoice.quoteId} is already recorded as invoice ${invoice.invoiceId}.`);
    this.name = new.target.name;
  }
}

/** Ledger access for one table; all keys are tenant-scoped. */
export class LedgerStore {
  constructor(
    private readonly client: DynamoDBDocumentClient,
    private readonly tableName: string,
  ) {}

  /**
   * Records an invoice at most once per quote, and replays it for the operation that recorded it. The
   * effect and its proof are one item: a single conditional put (`attribute_not_exists(pk)`) of the
   * invoice under an id derived from its quote ({@link invoiceIdForQuote}), so they cannot diverge (no
   * separate "done" or "claimed" record that a crash could leave unwritten), and of two concurrent
   * recordings of one quote exactly one put succeeds.
   * If the item exists and holds the same idempotency key (a retry of the same operation), nothing is
   * written and the first invoice is returned unchanged (its runId, createdBy and createdAt stay those of
   * the call that created it). The existing item is read from ReturnValuesOnConditionCheckFailure ALL_OLD
   * where the server supports it (DynamoDB, DynamoDB Local: one request), else with a consistent GetItem
   * (dynalite: two requests); see {@link conditionalPut}.
   * @returns the stored invoice and whether this call created it
   * @throws QuoteAlreadyRecordedError when another operation (another idempotency key) recorded the
   *   quote; Error when the existing item vanished between the put and the read; the SDK's error for
   *   anything but a failed condition
   */
  async recordOnce(
    invoice: NewInvoice,
    idempotencyKey: string,
    signal?: AbortSignal,
  ): Promise<{ invoice: Invoice; created: boolean }> {
    const invoiceId = invoiceIdForQuote(invoice.quoteId);
    const item: Invoice = { ...invoice, invoiceId, idempotencyKey, createdAt: new Date().toISOString() };
    const pk = keys.tenant(invoice.tenantId);
    const sk = keys.invoice(invoiceId);
    const put = await conditionalPut(
      this.client,
      {
        tableName: this.tableName,
        item: { pk, sk, type: "invoice", ...item },
        condition: "attribute_not_exists(pk)",
      },
      signal,
    );
    if (put.written) return { invoice: item, created: true };
    if (!put.existing) throw new Error(`Invoice ${invoiceId} failed its condition but could not be read.`);
    const existing = toInvoice(put.existing);
    if (existing.idempotencyKey !== idempotencyKey) throw new QuoteAlreadyRecordedError(existing);
    return { invoice: existing, created: false };
  }

  /** Reads one invoice of a tenant (consistent read); undefined when absent. */
  async get(tenantId: string, invoiceId: string, signal?: AbortSignal): Promise<Invoice | undefined> {
    const raw = await this.getRaw(tenantId, invoiceId, signal);
    return raw ? toInvoice(raw) : undefined;
  }

  /** Lists a tenant's invoices in key order (at most `limit`, default 100). */
  async list(tenantId: string, limit = 100, signal?: AbortSignal): Promise<Invoice[]> {
    const result = await this.client.send(
      new QueryCommand({
        TableName: this.tableName,
        KeyConditionExpression: "pk = :pk AND begins_with(sk, :prefix)",
        ExpressionAttributeValues: { ":pk": keys.tenant(tenantId), ":prefix": keys.invoicePrefix },
        Limit: limit,
        ConsistentRead: true,
      }),
      { abortSignal: signal },
    );
    return (result.Items ?? []).map(toInvoice);
  }

  private async getRaw(
    tenantId: string,
    invoiceId: string,
    signal?: AbortSignal,
  ): Promise<Record<string, unknown> | undefined> {
    const result = await this.client.send(
      new GetCommand({
        TableName: this.tableName,
        Key: { pk: keys.tenant(tenantId), sk: keys.invoice(invoiceId) },
        ConsistentRead: true,
      }),
      { abortSignal: signal },
    );
    return result.Item;
  }

  /**
   * One page of a tenant's invoices in key order (consistent read). Reads `limit + 1` items so that
   * `nextKey` is present only when more invoices follow: it is the DynamoDB key (`{pk, sk}`, the
   * LastEvaluatedKey of this page) to pass back as `startKey` for the next page.
   * @param options.limit page size, 1 to 1000 (callers bound it further)
   * @param options.startKey a `nextKey` from an earlier page of the same tenant
   * @throws RangeError for a limit out of range; the SDK's error for a failed read
   */
  async listPage(
    tenantId: string,
    options: { limit: number; startKey?: Record<string, string> },
    signal?: AbortSignal,
  ): Promise<{ invoices: Invoice[]; nextKey: Record<string, string> | undefined }> {
    if (!Number.isInteger(options.limit) || options.limit < 1 || options.limit > 1000) {
      throw new RangeError(`limit must be an integer from 1 to 1000, got ${options.limit}.`);
    }
    const pk = keys.tenant(tenantId);
    const items: Record<string, unknown>[] = [];
    let startKey: Record<string, unknown> | undefined = options.startKey;
    do {
      const page = await this.client.send(
        new QueryCommand({
          TableName: this.tableName,
          KeyConditionExpression: "pk = :pk AND begins_with(sk, :prefix)",
          ExpressionAttributeValues: { ":pk": pk, ":prefix": keys.invoicePrefix },
          ExclusiveStartKey: startKey,
          Limit: options.limit + 1 - items.length,
          ConsistentRead: true,
        }),
        { abortSignal: signal },
      );
      items.push(...(page.Items ?? []));
      startKey = page.LastEvaluatedKey;
    } while (startKey && items.length <= options.limit);
    const pageItems = items.slice(0, options.limit);
    const last = pageItems.at(-1);
    const nextKey = items.length > options.limit && last ? { pk, sk: String(last.sk) } : undefined;
    return { invoices: pageItems.map(toInvoice), nextKey };
  }
}

/** Strips table attributes (pk, sk, type) from a stored item. */
function toInvoice(item: Record<string, unknown>): Invoice {
  const { pk: _pk, sk: _sk, type: _type, ...invoice } = item;
  return invoice as unknown as Invoice;
}
