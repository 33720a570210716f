/**
 * The A2A edge of the domain's refusals (shared/domain-errors.ts), mapped once here as the HTTP edge maps
 * them in functions/api/problem-details.ts: each {@link DomainError} code becomes one A2A error (its
 * JSON-RPC code from the SDK) whose ErrorInfo metadata carries the stable `code`, the facts a client may
 * act on and, when the same request may succeed later, `retryAfterSeconds`. An unexpected error is a
 * fixed sentence (JSON-RPC -32603), never its own text; the store out of reach says so (code
 * STORE_UNAVAILABLE). docs/a2a.md, "Errors".
 */
import {
  A2AError,
  RequestMalformedError,
  TaskNotCancelableError,
  TaskNotFoundError,
  UnsupportedOperationError,
} from "@a2a-js/sdk/errors";
import { DomainError, type DomainErrorCode } from "../domain-errors.js";
import { isStoreUnavailable } from "../store/errors.js";

/** The A2A error classes a domain code maps to (each is a JSON-RPC code of the A2A binding). */
type A2AErrorClass = new (options: { message: string; metadata: Record<string, string> }) => A2AError;

/**
 * Every domain code's A2A error: not found (another tenant's or user's task too) is TaskNotFoundError
 * (-32001); a run that is no longer running, TaskNotCancelableError (-32002); a bad cursor,
 * RequestMalformedError (-32602), as is a request the domain refuses as asked (INVALID_REQUEST); a refusal
 * the caller cannot override here (forbidden, a conflict of keys or turns, an approval decided)
 * UnsupportedOperationError (-32004) with the code saying which. A refusal that may pass later (the store
 * or the quota store out of reach, a rate limit: RATE_LIMITED) has no A2A error of its own: the base
 * A2AError (-32603) with `code` and `retryAfterSeconds` in its metadata. Typed by
 * the code list, so a new domain code does not compile until it has its line.
 */
export const A2A_ERROR_OF: Record<DomainErrorCode, A2AErrorClass> = {
  UNAUTHENTICATED: UnsupportedOperationError,
  FORBIDDEN: UnsupportedOperationError,
  NOT_FOUND: TaskNotFoundError,
  INVALID_CURSOR: RequestMalformedError,
  INVALID_REQUEST: RequestMalformedError,
  IDEMPOTENCY_KEY_IN_USE: UnsupportedOperationError,
  IDEMPOTENCY_KEY_REUSED: UnsupportedOperationError,
  RUN_NOT_RUNNING: TaskNotCancelableError,
  PREVIOUS_RUN_IN_PROGRESS: UnsupportedOperationError,
  PREVIOUS_RUN_NOT_CONTINUABLE: UnsupportedOperationError,
  APPROVAL_DECIDED: UnsupportedOperationError,
  APPROVAL_EXPIRED: UnsupportedOperationError,
  APPROVAL_CANCELLED: UnsupportedOperationError,
  HANDOVER_TOO_LARGE: UnsupportedOperationError,
  STORE_UNAVAILABLE: A2AError,
  RATE_LIMITED: A2AError,
  QUOTA_UNAVAILABLE: A2AError,
};

/** Seconds to wait before retrying when the store could not be reached (as the HTTP edge's Retry-After). */
const STORE_RETRY_AFTER_SECONDS = 1;

/**
 * The ErrorInfo metadata of a refusal: `code`, each fact as text (JSON for a non-string), and
 * `retryAfterSeconds` when there is one (ErrorInfo metadata is a map of strings).
 */
export function refusalMetadata(error: DomainError): Record<string, string> {
  const metadata: Record<string, string> = { code: error.code };
  for (const [name, value] of Object.entries(error.facts)) {
    metadata[name] = typeof value === "string" ? value : JSON.stringify(value);
  }
  if (error.retryAfterSeconds !== undefined) metadata.retryAfterSeconds = String(error.retryAfterSeconds);
  return metadata;
}

/**
 * Anything thrown while serving an A2A request as an A2A error (see the module comment). A2A errors pass
 * as they are.
 */
export function toA2AError(error: unknown): Error {
  if (error instanceof A2AError) return error;
  if (error instanceof DomainError) {
    const ErrorClass = A2A_ERROR_OF[error.code];
    return new ErrorClass({ message: error.message, metadata: refusalMetadata(error) });
  }
  if (isStoreUnavailable(error)) {
    return new A2AError({
      message: `The data store is unavailable; retry in ${STORE_RETRY_AFTER_SECONDS} s.`,
      metadata: { code: "STORE_UNAVAILABLE", retryAfterSeconds: String(STORE_RETRY_AFTER_SECONDS) },
    });
  }
  return new A2AError({
    message: "The server failed while serving the request.",
    metadata: { code: "INTERNAL" },
  });
}
