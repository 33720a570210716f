/**
 * The domain's refusals: what the application layer (shared/runs/) and the engine throw when a request
 * cannot be served as asked — not found, forbidden, in conflict, or the store unreachable. They know no
 * protocol: each entry maps them once, functions/api (and the streaming entry) to RFC 9457 problem+json
 * (functions/api/problem-details.ts), the MCP adapter to tool errors or JSON-RPC errors
 * (shared/mcp/tool-results.ts). A new code is one entry here; `tsc` then fails until every edge maps it.
 */

/**
 * Every code a {@link DomainError} may carry, with when it is raised:
 * - UNAUTHENTICATED: no verified identity, or one without a user or tenant
 * - FORBIDDEN: the caller lacks a permission (`facts.requiredPermission`) or a rule forbids it
 *   (`facts.rule`, e.g. four_eyes)
 * - NOT_FOUND: no such run, approval or invoice for this caller (another tenant's looks the same)
 * - INVALID_CURSOR: a page cursor this listing did not issue (`facts.field`: the parameter)
 * - INVALID_REQUEST: a well-formed request the domain refuses as asked (`facts.errors`: `{in, path,
 *   message}` per field), e.g. a cost limit while the model has no price
 * - IDEMPOTENCY_KEY_IN_USE: an operation under this key is still running (`retryAfterSeconds`)
 * - IDEMPOTENCY_KEY_REUSED: the key was used for a different operation
 * - RUN_NOT_RUNNING: the run has ended (`facts.runStatus`)
 * - PREVIOUS_RUN_IN_PROGRESS / PREVIOUS_RUN_NOT_CONTINUABLE: a continuation's previous run cannot be
 *   continued yet (`retryAfterSeconds`) or at all (`facts.previousRunStatus`)
 * - APPROVAL_DECIDED / APPROVAL_EXPIRED / APPROVAL_CANCELLED: a decision on an approval that can no
 *   longer take it (`facts.approvalId`, `facts.approvalStatus`)
 * - HANDOVER_TOO_LARGE: a paused run's state is over a durable execution's input limit
 * - STORE_UNAVAILABLE: the data store could not be reached or is throttling (`retryAfterSeconds`)
 * - RATE_LIMITED: a run or MCP call refused at the door by a runs-per-minute or runs-in-flight limit
 *   ({@link RateLimitedError}: `facts.policy`, `facts.limit`, `retryAfterSeconds`; docs/quotas.md)
 * - QUOTA_UNAVAILABLE: the quota store failed during admission or a reservation (fail closed,
 *   {@link QuotaUnavailableError})
 */
export const DOMAIN_ERROR_CODES = [
  "UNAUTHENTICATED",
  "FORBIDDEN",
  "NOT_FOUND",
  "INVALID_CURSOR",
  "INVALID_REQUEST",
  "IDEMPOTENCY_KEY_IN_USE",
  "IDEMPOTENCY_KEY_REUSED",
  "RUN_NOT_RUNNING",
  "PREVIOUS_RUN_IN_PROGRESS",
  "PREVIOUS_RUN_NOT_CONTINUABLE",
  "APPROVAL_DECIDED",
  "APPROVAL_EXPIRED",
  "APPROVAL_CANCELLED",
  "HANDOVER_TOO_LARGE",
  "STORE_UNAVAILABLE",
  "RATE_LIMITED",
  "QUOTA_UNAVAILABLE",
] as const;

/** One code of {@link DOMAIN_ERROR_CODES}. */
export type DomainErrorCode = (typeof DOMAIN_ERROR_CODES)[number];

/** The `name` every {@link DomainError} has (copies made by a serializer keep it). */
export const DOMAIN_ERROR_NAME = "DomainError";

/**
 * A typed refusal of the domain (see {@link DOMAIN_ERROR_CODES}): a stable `code`, a sentence for a person
 * (`message`: never internal error text), `facts` the caller may act on (ids, statuses, limits; plain
 * JSON, protocol-free), and `retryAfterSeconds` when the same request may succeed later. Every domain
 * error is final for the request that raised it: a retry of the same work gets the same answer, so the
 * durable runner never retries a step that threw one.
 */
export class DomainError extends Error {
  readonly code: DomainErrorCode;
  readonly facts: Readonly<Record<string, unknown>>;
  readonly retryAfterSeconds: number | undefined;

  constructor(
    code: DomainErrorCode,
    message: string,
    options: { facts?: Record<string, unknown>; retryAfterSeconds?: number; cause?: unknown } = {},
  ) {
    super(message, { cause: options.cause });
    this.name = DOMAIN_ERROR_NAME;
    this.code = code;
    this.facts = options.facts ?? {};
    this.retryAfterSeconds = options.retryAfterSeconds;
  }
}

/**
 * True for a {@link DomainError}, or a copy of one (an error whose `name`, or `errorType` as the durable
 * SDK serializes it, is {@link DOMAIN_ERROR_NAME}).
 */
export function isDomainError(error: unknown): boolean {
  if (error instanceof DomainError) return true;
  const named = error as { name?: unknown; errorType?: unknown } | null;
  return named?.name === DOMAIN_ERROR_NAME || named?.errorType === DOMAIN_ERROR_NAME;
}

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
 * RATE_LIMITED: a run (or an MCP tool call) refused at the door, a limit on runs per minute or runs in
 * flight being reached (docs/quotas.md). Nothing was started or written. `refused` is the policy that
 * refused it, `policies` every policy in force with what is left of it (the HTTP edge's RateLimit
 * fields), `counted` the runs the refused policy counts now (started this minute, or in flight: more than
 * its limit when the limit was lowered after they started), `retryAfterSeconds` when one more is admitted
 * (the minute's end; for runs in flight, 1 s: no window says when one ends). Final for the request, like
 * every domain error.
 */
export class RateLimitedError extends DomainError {
  constructor(
    readonly refused: AdmissionPolicy,
    readonly policies: AdmissionPolicy[],
    retryAfterSeconds: number,
    readonly counted: number,
  ) {
    super("RATE_LIMITED", rateLimitedSentence(refused, counted, retryAfterSeconds), {
      facts: { policy: refused.id, limit: refused.quota, retryAfterSeconds },
      retryAfterSeconds,
    });
  }
}

/** The fixed sentence of a {@link RateLimitedError}: the runs counted, then the limit, apart. */
function rateLimitedSentence(policy: AdmissionPolicy, counted: number, retryAfterSeconds: number): string {
  const what = {
    "user-minute": `You started ${counted} run(s) this minute; your limit is ${policy.quota}`,
    "tenant-minute": `Your tenant started ${counted} run(s) this minute; its limit is ${policy.quota}`,
    "tenant-concurrent": `Your tenant has ${counted} run(s) in flight; its limit is ${policy.quota}`,
  }[policy.id];
  return `${what}. Nothing was started. Retry after ${retryAfterSeconds} s.`;
}

/** The fixed sentence of {@link QuotaUnavailableError}. */
export const QUOTA_UNAVAILABLE_MESSAGE =
  "The quota could not be checked (the data store did not answer), so nothing was started; retry shortly.";

/** The `name` of a {@link QuotaUnavailableError} (and of the copies a serializer makes). */
export const QUOTA_UNAVAILABLE_NAME = "QuotaUnavailableError";

/**
 * QUOTA_UNAVAILABLE: the quota store failed while a run was admitted or a call reserved, so it is refused
 * (fail closed, a fixed sentence); the store's error is the `cause`, for the logs only. Unlike the other
 * domain errors it is transient: its own `name` ({@link QUOTA_UNAVAILABLE_NAME}) lets the durable
 * runner retry a step that threw it (shared/durable/step-retry.ts).
 */
export class QuotaUnavailableError extends DomainError {
  constructor(cause: unknown) {
    super("QUOTA_UNAVAILABLE", QUOTA_UNAVAILABLE_MESSAGE, { cause });
    this.name = QUOTA_UNAVAILABLE_NAME;
  }
}
