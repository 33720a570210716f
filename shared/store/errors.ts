/**
 * Typed errors of the store layer. Stores throw these (or the AWS SDK's own errors); the layers above
 * map them: the tool dispatcher and the HTTP layer through `isStoreUnavailable` (shared/errors.ts),
 * the invoice listing through functions/api/pagination.ts, recordInvoice (shared/tools/record-invoice.ts)
 * through its business error QUOTE_ALREADY_RECORDED.
 */
import type { Invoice } from "./ledger.js";

/**
 * A conditional write kept failing against an item that changed between the write and the read of
 * what made it fail (deleted by its owner or by TTL, or replaced), for every one of the store's bounded
 * attempts ({@link CONDITIONAL_WRITE_ATTEMPTS}). Transient: the same call may succeed a moment later,
 * so it counts as "store unavailable" (a retryable tool fatal_error, HTTP 503 with Retry-After).
 * Nothing was written by the failed call.
 */
export class StoreContentionError extends Error {
  /** Stable code, as the tool result and logs show it. */
  readonly code = "STORE_CONTENTION";
  /** Conditional writes tried (each followed by a read when the failure returned no item). */
  readonly attempts: number;
  constructor(what: string, attempts: number) {
    super(`${what} kept changing during ${attempts} conditional write attempts; nothing was written.`);
    this.name = new.target.name;
    this.attempts = attempts;
  }
}

/**
 * How many times a store tries a conditional write whose outcome it could not classify (the item that
 * failed the condition was gone, or itself expired, by the time it was read) before it throws
 * {@link StoreContentionError}. Powertools for AWS Lambda retries such a race once; three tries cover a
 * release and a TTL expiry landing in the same window.
 */
export const CONDITIONAL_WRITE_ATTEMPTS = 3;

/**
 * A pagination cursor the store did not issue for this listing: not base64url JSON of a key, a key of
 * another tenant's partition, or a key outside the listed sort-key prefix. Nothing is read.
 */
export class InvalidCursorError extends Error {
  constructor() {
    super("The cursor is not one this store issued for this tenant and listing.");
    this.name = new.target.name;
  }
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

/**
 * DynamoDB refused a counter write because the counter item would pass its 400 KB limit
 * (shared/store/counters.ts; the bound per counter family is in docs/stores.md). Nothing was written.
 * Not transient: callers fail closed with the stable {@link CounterItemFullError.code}.
 */
export class CounterItemFullError extends Error {
  /** Stable code, as logs and refusals show it. */
  readonly code = "COUNTER_ITEM_FULL";
  constructor(counter: string, windowId: string, cause: unknown) {
    super(
      `The counter item ${counter} of window ${windowId} is full (DynamoDB's 400 KB item limit); nothing was written.`,
      {
        cause,
      },
    );
    this.name = new.target.name;
  }
}
