/**
 * The HTTP side of durable runs that app.ts needs at load time, kept free of the AWS SDK (shared/runs/async-start.ts,
 * which brings it, is imported on the first asynchronous request).
 */

/** `Retry-After` (s) on a 202 and on a running run's GET: how soon a client should poll again. */
export const POLL_AFTER_SECONDS = 1;

/**
 * True when the `Prefer` header (RFC 7240: comma separated preferences, each `token[=value]` with
 * `;`-parameters) holds `respond-async`. Names are case-insensitive.
 * @example prefersAsync("respond-async, wait=10") // true
 */
export function prefersAsync(prefer: string | undefined): boolean {
  if (!prefer) return false;
  return prefer
    .split(",")
    .some((preference) => preference.split(";")[0]?.split("=")[0]?.trim().toLowerCase() === "respond-async");
}
