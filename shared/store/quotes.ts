import { randomUUID } from "node:crypto";
import type { DynamoDBDocumentClient } from "@aws-sdk/lib-dynamodb";
import * as z from "zod";
import { sha256Hex } from "../hash.js";
import { MoneyValueSchema, ROUNDING_RULES } from "../money/money.js";
import { conditionalPut } from "./conditional.js";
import { CONDITIONAL_WRITE_ATTEMPTS, StoreContentionError } from "./errors.js";
import { keys } from "./keys.js";
import { getItem, ITEM_ABSENT, type StoredItem, splitItem, tableItem, tableKey } from "./table.js";

/** A quote id: `qt_` and 32 lower-case hex characters (from the call's operation key, see {@link quoteIdFor}, or a random UUID). */
export const QUOTE_ID_PATTERN = /^qt_[0-9a-f]{32}$/;

/** Mints a new, unguessable quote id (see {@link QUOTE_ID_PATTERN}). */
export function newQuoteId(): string {
  return `qt_${randomUUID().replaceAll("-", "")}`;
}

/**
 * The quote id of one calculateTax operation: `qt_` and the first 32 hex characters of the SHA-256 of
 * its operation key (tenant, run scope, tool, canonical arguments, occurrence; see `toolIdempotencyKey`).
 * A retry of a request under the same Idempotency-Key (after a crash or a released key) asks for the
 * same quote again and gets the same id, so its recordInvoice call has the same arguments and the same
 * tool idempotency key, and replays the first invoice instead of writing a second one.
 */
export function quoteIdFor(operationKey: string): string {
  return `qt_${sha256Hex(operationKey).slice(0, 32)}`;
}

/**
 * A tax quote, as stored (table attributes stripped, see `splitItem`): what calculateTax computed, kept
 * server-side so recordInvoice can copy its amounts instead of trusting numbers from the model.
 * - `tenantId`: owner (from the verified security context); only this tenant can read it; `createdBy`: the
 *   user it was made for (only that user records it)
 * - `rateVersion`, `rate`, `rounding`: the tax rule row used; `taxPointDate` YYYY-MM-DD
 * - `subtotal`, `taxAmount`, `grossTotal`: exact money in `currency`
 * - `createdAt`, `expiresAt`: ISO 8601 UTC; after `expiresAt` the quote cannot be recorded
 */
const QuoteSchema = z
  .object({
    quoteId: z.string().regex(QUOTE_ID_PATTERN),
    tenantId: z.string().min(1),
    jurisdiction: z.string().regex(/^[A-Z]{2}$/),
    rateVersion: z.string().min(1),
    rate: z.string().regex(/^0\.\d+$/),
    taxPointDate: z.string().regex(/^\d{4}-\d{2}-\d{2}$/),
    currency: z.string().regex(/^[A-Z]{3}$/),
    rounding: z.enum(ROUNDING_RULES),
    subtotal: MoneyValueSchema,
    taxAmount: MoneyValueSchema,
    grossTotal: MoneyValueSchema,
    runId: z.string(),
    createdBy: z.string(),
    createdAt: z.iso.datetime(),
    expiresAt: z.iso.datetime(),
  })
  .strict();

/** A tax quote: see {@link QuoteSchema}, its one definition. */
export type Quote = z.infer<typeof QuoteSchema>;

/** The result of reading a quote: missing (absent, or another tenant's), expired, or live. */
export type QuoteLookup =
  | { kind: "missing" }
  | { kind: "expired"; quote: Quote }
  | { kind: "live"; quote: Quote };

/**
 * Quote access for one table. Items live under the owning tenant's partition
 * (`TENANT#<tenantId>` / `QUOTE#<quoteId>`), so another tenant's read finds nothing. Each item carries
 * the table's TTL attribute (`ttl`, epoch seconds, rounded up) so DynamoDB deletes it eventually; since
 * TTL deletion can lag by days, {@link QuoteStore.lookup} also checks `expiresAt` on every read.
 */
export class QuoteStore {
  constructor(
    private readonly client: DynamoDBDocumentClient,
    private readonly tableName: string,
  ) {}

  /**
   * Stores `quote` unless a live quote with its id already exists for its tenant, in which case that
   * one is kept and returned (a retried operation gets the quote it was first given; an expired one is
   * replaced). One conditional put (see `conditionalPut`); when the quote that failed the condition is
   * gone by the time it is read (TTL deletion), the put is tried again, up to
   * {@link CONDITIONAL_WRITE_ATTEMPTS} times.
   * @param nowMs epoch ms deciding whether an existing quote has expired
   * @returns the quote now stored under the id
   * @throws StoreContentionError when every attempt failed against a quote that was then gone (nothing
   *   written); Error when the existing item is malformed or another tenant's; the SDK's errors
   */
  async createOrGet(quote: Quote, nowMs: number, signal?: AbortSignal): Promise<Quote> {
    const item = tableItem(
      tableKey(quote.tenantId, keys.quote(quote.quoteId)),
      "quote",
      quote,
      Math.ceil(Date.parse(quote.expiresAt) / 1000),
    );
    for (let attempt = 0; attempt < CONDITIONAL_WRITE_ATTEMPTS; attempt += 1) {
      const put = await conditionalPut(
        this.client,
        {
          tableName: this.tableName,
          item,
          condition: `${ITEM_ABSENT} OR expiresAt <= :now`,
          values: { ":now": new Date(nowMs).toISOString() },
        },
        signal,
      );
      if (put.written) return quote;
      if (!put.existing) continue;
      const parsed = parseQuote(put.existing);
      if (!parsed.success || parsed.data.tenantId !== quote.tenantId) {
        throw new Error(`Stored quote ${quote.quoteId} is malformed.`);
      }
      return parsed.data;
    }
    throw new StoreContentionError(`Quote ${quote.quoteId}`, CONDITIONAL_WRITE_ATTEMPTS);
  }

  /**
   * Reads a tenant's quote (consistent read) and classifies it against the clock.
   * @param nowMs epoch ms to compare with `expiresAt` (inject a clock in tests)
   * @returns missing (no such quote for this tenant), expired (`nowMs >= expiresAt`), or live
   * @throws Error when the stored item is malformed (never recorded from); the SDK's errors
   */
  async lookup(tenantId: string, quoteId: string, nowMs: number, signal?: AbortSignal): Promise<QuoteLookup> {
    const item = await getItem(this.client, this.tableName, tableKey(tenantId, keys.quote(quoteId)), signal);
    if (!item) return { kind: "missing" };
    const parsed = parseQuote(item);
    if (!parsed.success) {
      throw new Error(`Stored quote ${quoteId} is malformed: ${parsed.error.issues[0]?.message ?? ""}`);
    }
    const quote: Quote = parsed.data;
    if (quote.tenantId !== tenantId) return { kind: "missing" };
    return nowMs >= Date.parse(quote.expiresAt) ? { kind: "expired", quote } : { kind: "live", quote };
  }
}

/** Parses a stored quote item (table attributes stripped) against {@link QuoteSchema}. */
function parseQuote(item: StoredItem) {
  return QuoteSchema.safeParse(splitItem(item).attributes);
}
