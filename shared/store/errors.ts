/**
 * Typed errors of the store layer. Stores throw these (or the AWS SDK's own errors); the layers above
 * map them: the tool dispatcher and the HTTP layer through {@link isStoreUnavailable} (below),
 * a listing's cursor through shared/runs/queries.ts (INVALID_CURSOR), recordInvoice (shared/tools/record-invoice.ts)
 * through its business error QUOTE_ALREADY_RECORDED (`QuoteAlreadyRecordedError`, shared/store/ledger.ts).
 */

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

/** Node socket error codes that mean the store could not be reached at all. */
const NETWORK_CODES = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "ETIMEDOUT",
  "ESOCKETTIMEDOUT",
  "ENOTFOUND",
  "EAI_AGAIN",
  "EPIPE",
  "EHOSTUNREACH",
  "ENETUNREACH",
]);

/**
 * AWS SDK error names that mean "the service is not answering or not accepting work now", as opposed
 * to "this request is wrong": timeouts, throttling after the SDK's retries, server faults.
 */
const UNAVAILABLE_NAMES = new Set([
  "TimeoutError",
  "RequestTimeout",
  "RequestTimeoutException",
  "NetworkingError",
  "ServiceUnavailable",
  "InternalServerError",
  "ThrottlingException",
  "ProvisionedThroughputExceededException",
  "RequestLimitExceeded",
]);

/**
 * True when `error` is an AWS SDK (v3) error saying DynamoDB could not be reached or could not serve
 * the request after the SDK's own retries: a socket error (ECONNREFUSED, ETIMEDOUT, …), a timeout from
 * the HTTP handler, throttling, or a server-side fault. The SDK attaches `$metadata` to every error it
 * raises (attempts, HTTP status), which is how an SDK error is told from any other. Errors of the
 * request itself (ValidationException, ConditionalCheckFailedException, …) are not "unavailable".
 * A store's own {@link StoreContentionError} (its bounded conditional-write attempts ran out) is: it
 * is as transient as throttling.
 * This is the one place the store's availability errors are recognised: the dispatcher makes them a
 * retryable tool error, the HTTP edge 503 STORE_UNAVAILABLE (functions/api/problem-details.ts).
 */
export function isStoreUnavailable(error: unknown): boolean {
  if (error instanceof StoreContentionError) return true;
  if (typeof error !== "object" || error === null || !("$metadata" in error)) return false;
  const e = error as { name?: unknown; code?: unknown; $fault?: unknown };
  if (typeof e.code === "string" && NETWORK_CODES.has(e.code)) return true;
  if (typeof e.name === "string" && UNAVAILABLE_NAMES.has(e.name)) return true;
  return e.$fault === "server";
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
