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
 * - IDEMPOTENCY_KEY_IN_USE: an operation under this key is still running (`retryAfterSeconds`)
 * - IDEMPOTENCY_KEY_REUSED: the key was used for a different operation
 * - RUN_NOT_RUNNING: the run has ended (`facts.runStatus`)
 * - PREVIOUS_RUN_IN_PROGRESS / PREVIOUS_RUN_NOT_CONTINUABLE: a continuation's previous run cannot be
 *   continued yet (`retryAfterSeconds`) or at all (`facts.previousRunStatus`)
 * - APPROVAL_DECIDED / APPROVAL_EXPIRED / APPROVAL_CANCELLED: a decision on an approval that can no
 *   longer take it (`facts.approvalId`, `facts.approvalStatus`)
 * - HANDOVER_TOO_LARGE: a paused run's state is over a durable execution's input limit
 * - STORE_UNAVAILABLE: the data store could not be reached or is throttling (`retryAfterSeconds`)
 */
export const DOMAIN_ERROR_CODES = [
  "UNAUTHENTICATED",
  "FORBIDDEN",
  "NOT_FOUND",
  "INVALID_CURSOR",
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
