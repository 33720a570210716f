/**
 * The quotas' domain errors. Entries map them once: the HTTP edge to problem+json (429 RATE_LIMITED with
 * `Retry-After` and the RateLimit fields, 503 QUOTA_UNAVAILABLE), the MCP adapter to tool errors.
 */

/**
 * One admission policy as the IETF RateLimit fields (draft-ietf-httpapi-ratelimit-headers) name it:
 * - `id`: `user-minute`, `tenant-minute` (runs started in the UTC minute) or `tenant-concurrent` (runs
 *   in flight)
 * - `quota`: its limit; `windowSeconds`: 60 for a minute, null for concurrency (no window); `unit`:
 *   `requests` or `concurrent-requests` (the draft's quota units)
 * - `remaining`: what is left of it now; `resetSeconds`: until the window ends (null without one)
 */
export interface AdmissionPolicy {
  id: "user-minute" | "tenant-minute" | "tenant-concurrent";
  quota: number;
  windowSeconds: number | null;
  unit: "requests" | "concurrent-requests";
  remaining: number;
  resetSeconds: number | null;
}

/**
 * A run (or an MCP tool call) refused at the door: a limit on runs per minute or runs in flight is
 * reached. Nothing was started or written. `refused` is the policy that refused it, `policies` every
 * policy in force with what is left of it, `retryAfterSeconds` when one more is admitted (the minute's
 * end; for runs in flight, 1 s: no window says when one ends).
 */
export class RateLimitedError extends Error {
  readonly code = "RATE_LIMITED";
  constructor(
    readonly refused: AdmissionPolicy,
    readonly policies: AdmissionPolicy[],
    readonly retryAfterSeconds: number,
  ) {
    super(rateLimitedSentence(refused, retryAfterSeconds));
    this.name = new.target.name;
  }
}

/** The fixed sentence of a {@link RateLimitedError}. */
function rateLimitedSentence(policy: AdmissionPolicy, retryAfterSeconds: number): string {
  const what = {
    "user-minute": `You started ${policy.quota} run(s) this minute, your limit`,
    "tenant-minute": `Your tenant started ${policy.quota} run(s) this minute, its limit`,
    "tenant-concurrent": `Your tenant has ${policy.quota} run(s) in flight, its limit`,
  }[policy.id];
  return `${what}; nothing was started. Retry after ${retryAfterSeconds} s.`;
}

/** The fixed sentence of {@link QuotaUnavailableError}. */
export const QUOTA_UNAVAILABLE_MESSAGE =
  "The quota could not be checked (the data store did not answer), so nothing was started; retry shortly.";

/**
 * The quota store failed while a run was admitted or a call reserved: the call is refused (fail closed).
 * The store's error is the `cause`, for the logs only.
 */
export class QuotaUnavailableError extends Error {
  readonly code = "QUOTA_UNAVAILABLE";
  constructor(cause: unknown) {
    super(QUOTA_UNAVAILABLE_MESSAGE, { cause });
    this.name = new.target.name;
  }
}
