import type { DynamoDBDocumentClient } from "@aws-sdk/lib-dynamodb";
import { sha256Hex } from "../hash.js";
import { conditionalPut } from "./conditional.js";
import { type Invoice, InvoiceSchema, type NewInvoice } from "./invoice.js";
import { keys } from "./keys.js";
import { queryList, queryTenant } from "./query.js";
import { getItem, ITEM_ABSENT, listKey, type StoredItem, splitItem, tableItem, tableKey } from "./table.js";

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
 * Ledger access for one table; all keys are tenant-scoped. `options.now` (epoch ms; default the wall
 * clock) dates a new invoice's `createdAt`: the deps give it the runs' clock (shared/deps.ts), so an
 * invoice is dated by the clock of the run that recorded it.
 */
export class LedgerStore {
  constructor(
    private readonly client: DynamoDBDocumentClient,
    private readonly tableName: string,
    private readonly options: { now?: () => number } = {},
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
    const item: Invoice = {
      ...invoice,
      invoiceId,
      idempotencyKey,
      createdAt: new Date(this.options.now?.() ?? Date.now()).toISOString(),
    };
    const put = await conditionalPut(
      this.client,
      {
        tableName: this.tableName,
        item: tableItem(tableKey(invoice.tenantId, keys.invoice(invoiceId)), "invoice", {
          ...item,
          ...listKey(invoice.tenantId, keys.invoiceList, keys.invoiceListed(item.createdAt, invoiceId)),
        }),
        condition: ITEM_ABSENT,
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
    const item = await getItem(
      this.client,
      this.tableName,
      tableKey(tenantId, keys.invoice(invoiceId)),
      signal,
    );
    return item ? toInvoice(item) : undefined;
  }

  /**
   * The first `limit` (default 100) invoices of a tenant in key order: the first page of
   * {@link listPage}.
   * @throws RangeError for a limit that is not a positive integer; the SDK's error for a failed read
   */
  async list(tenantId: string, limit = 100, signal?: AbortSignal): Promise<Invoice[]> {
    return (await this.listPage(tenantId, { limit }, signal)).invoices;
  }

  /**
   * One page of a tenant's invoices in invoice-id order (consistent read), with `nextCursor` only when
   * more invoices follow (see `queryTenant`).
   * @param options.limit page size, a positive integer (callers bound it: the API at 100, the tool at 50)
   * @param options.cursor a `nextCursor` of an earlier page of the same tenant's invoices
   * @throws InvalidCursorError for a cursor not issued for this tenant's invoices (nothing is read);
   *   RangeError for a limit that is not a positive integer; the SDK's error for a failed read
   */
  async listPage(
    tenantId: string,
    options: { limit: number; cursor?: string },
    signal?: AbortSignal,
  ): Promise<{ invoices: Invoice[]; nextCursor: string | undefined }> {
    const page = await queryTenant(this.client, this.tableName, {
      tenantId,
      prefix: keys.invoicePrefix,
      limit: options.limit,
      ...(options.cursor === undefined ? {} : { cursor: options.cursor }),
      ...(signal ? { signal } : {}),
    });
    return { invoices: page.items.map(toInvoice), nextCursor: page.nextCursor };
  }

  /**
   * One page of a tenant's invoices newest first (`createdAt`), from the invoices list of the listing
   * index: eventually consistent on AWS (an invoice recorded a moment ago may be missing), and without
   * the invoices recorded before the list existed ({@link listPage} has every invoice).
   * @param options.cursor a `nextCursor` of an earlier page of this listing
   * @throws InvalidCursorError for a cursor not issued for this tenant's invoices list (nothing is read);
   *   RangeError for a limit that is not a positive integer; the SDK's error for a failed read
   */
  async listNewestPage(
    tenantId: string,
    options: { limit: number; cursor?: string },
  ): Promise<{ invoices: Invoice[]; nextCursor: string | undefined }> {
    const page = await queryList(this.client, this.tableName, {
      tenantId,
      list: keys.invoiceList,
      limit: options.limit,
      newestFirst: true,
      liveAt: "never expires",
      ...(options.cursor === undefined ? {} : { cursor: options.cursor }),
    });
    return { invoices: page.items.map(toInvoice), nextCursor: page.nextCursor };
  }
}

/**
 * An invoice from its stored item (table attributes stripped), parsed by {@link InvoiceSchema}.
 * @throws Error naming the invoice when the item is not an invoice of that shape
 */
function toInvoice(item: StoredItem): Invoice {
  const parsed = InvoiceSchema.safeParse(splitItem(item).attributes);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new Error(
      `Stored invoice ${String(item.invoiceId)} is malformed: ${issue?.path.join(".") ?? ""} ${issue?.message ?? ""}`,
    );
  }
  return parsed.data;
}

/**
 * Raised by `LedgerStore.recordOnce` when the quote was already recorded by another operation (another
 * idempotency key: another run, or another call in the same run). `invoice` is the existing invoice,
 * unchanged; nothing was written. The tool layer maps it to the business error QUOTE_ALREADY_RECORDED.
 */
export class QuoteAlreadyRecordedError extends Error {
  constructor(readonly invoice: Invoice) {
    super(`Quote ${invoice.quoteId} is already recorded as invoice ${invoice.invoiceId}.`);
    this.name = new.target.name;
  }
}
