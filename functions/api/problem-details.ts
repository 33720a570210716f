/**
 * RFC 9457 problem details, the HTTP edge's form of every error: the stable codes and their statuses,
 * {@link ProblemError} (Hono's `HTTPException` shape: it renders its own response), and {@link toProblem},
 * the one mapping of anything thrown (a domain refusal, an unreachable store, anything else) to a problem.
 * Used by the API's app and routes and by the streaming entry; nothing under shared/ imports it.
 */
import {
  DOMAIN_ERROR_CODES,
  DomainError,
  type DomainErrorCode,
  RateLimitedError,
} from "../../shared/domain-errors.js";
import { isStoreUnavailable } from "../../shared/store/errors.js";
import { rateLimitFields } from "./ratelimit-fields.js";

/**
 * The one table of stable HTTP problem codes and their statuses (RFC 9457 problem details).
 * Every HTTP error the API returns comes from this table through {@link toProblem}.
 */
export const PROBLEM_STATUS = {
  INVALID_REQUEST: 400,
  UNAUTHENTICATED: 401,
  FORBIDDEN: 403,
  NOT_FOUND: 404,
  METHOD_NOT_ALLOWED: 405,
  IDEMPOTENCY_KEY_IN_USE: 409,
  RUN_NOT_RUNNING: 409,
  PREVIOUS_RUN_IN_PROGRESS: 409,
  PREVIOUS_RUN_NOT_CONTINUABLE: 409,
  APPROVAL_DECIDED: 409,
  APPROVAL_EXPIRED: 409,
  APPROVAL_CANCELLED: 409,
  PAYLOAD_TOO_LARGE: 413,
  UNSUPPORTED_MEDIA_TYPE: 415,
  IDEMPOTENCY_KEY_REUSED: 422,
  CONTEXT_LENGTH_EXCEEDED: 422,
  HANDOVER_TOO_LARGE: 422,
  INVALID_POLICIES: 400,
  PRECONDITION_FAILED: 412,
  PRECONDITION_REQUIRED: 428,
  RATE_LIMITED: 429,
  INTERNAL: 500,
  MODEL_UNAVAILABLE: 502,
  STORE_UNAVAILABLE: 503,
  QUOTA_UNAVAILABLE: 503,
} as const;

/** A stable problem code, a key of {@link PROBLEM_STATUS}. */
export type ProblemCode = keyof typeof PROBLEM_STATUS;

/** Short human titles for each code (RFC 9457 `title`). */
const TITLES: Record<ProblemCode, string> = {
  INVALID_REQUEST: "Invalid request",
  UNAUTHENTICATED: "Unauthenticated",
  FORBIDDEN: "Forbidden",
  NOT_FOUND: "Not found",
  METHOD_NOT_ALLOWED: "Method not allowed",
  IDEMPOTENCY_KEY_IN_USE: "Idempotency key in use",
  RUN_NOT_RUNNING: "Run not running",
  PREVIOUS_RUN_IN_PROGRESS: "Previous run in progress",
  PREVIOUS_RUN_NOT_CONTINUABLE: "Previous run cannot be continued",
  APPROVAL_DECIDED: "Approval already decided",
  APPROVAL_EXPIRED: "Approval expired",
  APPROVAL_CANCELLED: "Approval cancelled",
  PAYLOAD_TOO_LARGE: "Payload too large",
  UNSUPPORTED_MEDIA_TYPE: "Unsupported media type",
  IDEMPOTENCY_KEY_REUSED: "Idempotency key reused",
  CONTEXT_LENGTH_EXCEEDED: "Context length exceeded",
  HANDOVER_TOO_LARGE: "Run too large to hand over",
  INVALID_POLICIES: "Invalid policies",
  PRECONDITION_FAILED: "Precondition failed",
  PRECONDITION_REQUIRED: "Precondition required",
  RATE_LIMITED: "Rate limited",
  INTERNAL: "Internal error",
  MODEL_UNAVAILABLE: "Model unavailable",
  STORE_UNAVAILABLE: "Store unavailable",
  QUOTA_UNAVAILABLE: "Quota unavailable",
};

/** Seconds a client should wait before retrying a 503 STORE_UNAVAILABLE (the `Retry-After` header). */
export const STORE_RETRY_AFTER_SECONDS = 1;

/**
 * Response headers a code always carries, besides the ones an error adds:
 * - UNAUTHENTICATED: `WWW-Authenticate` (RFC 9110 §15.5.2: a 401 must carry a challenge; `Bearer` as the
 *   gateway's JWT authorizer answers, RFC 6750 §3);
 * - STORE_UNAVAILABLE: `Retry-After` of {@link STORE_RETRY_AFTER_SECONDS} s (RFC 9110 §10.2.3).
 */
const CODE_HEADERS: Partial<Record<ProblemCode, Record<string, string>>> = {
  UNAUTHENTICATED: { "www-authenticate": 'Bearer realm="boundloop"' },
  STORE_UNAVAILABLE: { "retry-after": String(STORE_RETRY_AFTER_SECONDS) },
  QUOTA_UNAVAILABLE: { "retry-after": String(STORE_RETRY_AFTER_SECONDS) },
};

/** The body of an `application/problem+json` response. */
export interface ProblemBody {
  type: string;
  title: string;
  status: number;
  detail: string;
  code: ProblemCode;
  [extension: string]: unknown;
}

/** Media type of RFC 9457 problem responses. */
export const PROBLEM_CONTENT_TYPE = "application/problem+json";

/**
 * An error that is an HTTP problem response, and renders it itself (as Hono's
 * `HTTPException.getResponse()` does): the status comes from {@link PROBLEM_STATUS}, the body from
 * {@link ProblemError.body}, the headers from the code's own ({@link CODE_HEADERS}) and this error's.
 * `extensions` are extra members of the problem body (for example `errors` with field paths);
 * `headers` are extra response headers (for example `Retry-After` in seconds), names in any case.
 */
export class ProblemError extends Error {
  readonly code: ProblemCode;
  readonly status: number;
  readonly extensions: Record<string, unknown>;
  readonly headers: Record<string, string>;

  constructor(
    code: ProblemCode,
    detail: string,
    options: { extensions?: Record<string, unknown>; headers?: Record<string, string>; cause?: unknown } = {},
  ) {
    super(detail, { cause: options.cause });
    this.name = new.target.name;
    this.code = code;
    this.status = PROBLEM_STATUS[code];
    this.extensions = options.extensions ?? {};
    this.headers = {
      ...CODE_HEADERS[code],
      ...Object.fromEntries(Object.entries(options.headers ?? {}).map(([k, v]) => [k.toLowerCase(), v])),
    };
  }

  /** The RFC 9457 body: `type` (a URI derived from the code), `title`, `status`, `detail`, `code`, extensions. */
  get body(): ProblemBody {
    return {
      ...this.extensions,
      type: `https://boundloop.dev/problems/${this.code.toLowerCase().replaceAll("_", "-")}`,
      title: TITLES[this.code],
      status: this.status,
      detail: this.message,
      code: this.code,
    };
  }

  /** The response headers: this problem's (lower-case names) and `content-type: application/problem+json`. */
  get responseHeaders(): Record<string, string> {
    return { ...this.headers, "content-type": PROBLEM_CONTENT_TYPE };
  }

  /** The `application/problem+json` Response of this problem: status, {@link responseHeaders}, {@link body}. */
  getResponse(): Response {
    return new Response(JSON.stringify(this.body), { status: this.status, headers: this.responseHeaders });
  }
}

/**
 * Each status of {@link PROBLEM_STATUS} and its generic code: the first one listed for it (409
 * IDEMPOTENCY_KEY_IN_USE, 422 IDEMPOTENCY_KEY_REUSED; the conversation codes sharing those statuses are
 * only ever raised by name).
 */
const CODE_OF_STATUS: ReadonlyMap<number, ProblemCode> = new Map(
  (Object.entries(PROBLEM_STATUS) as Array<[ProblemCode, number]>)
    .reverse()
    .map(([code, status]) => [status, code]),
);

/**
 * The problem code of an HTTP status a layer below the app answered with (Hono's `HTTPException`, the
 * Lambda adapter): the first code {@link PROBLEM_STATUS} lists for that status, INTERNAL for a status it
 * has no code for.
 */
export function problemCodeOf(status: number): ProblemCode {
  return CODE_OF_STATUS.get(status) ?? "INTERNAL";
}

/**
 * The problem code of each domain code: the same name, except a bad cursor, which is an invalid request
 * naming its query parameter. `tsc` fails when a domain code has no problem code.
 */
const PROBLEM_OF_DOMAIN: { readonly [C in DomainErrorCode]: ProblemCode } = {
  ...(Object.fromEntries(DOMAIN_ERROR_CODES.map((code) => [code, code])) as Record<
    Exclude<DomainErrorCode, "INVALID_CURSOR">,
    Exclude<DomainErrorCode, "INVALID_CURSOR">
  >),
  INVALID_CURSOR: "INVALID_REQUEST",
};

/**
 * A domain refusal as a problem: its problem code ({@link PROBLEM_OF_DOMAIN}), its message as the detail,
 * its facts as extension members (a bad cursor's `field` as INVALID_REQUEST's `errors` entry in the
 * query) and `retryAfterSeconds` as the `Retry-After` header (RFC 9110 §10.2.3); a 429 RATE_LIMITED also
 * carries the RateLimit-Policy and RateLimit fields of every admission policy in force.
 */
export function problemOfDomain(error: DomainError): ProblemError {
  const { field, ...facts } = error.facts;
  const extensions =
    error.code === "INVALID_CURSOR"
      ? {
          ...facts,
          errors: [{ in: "query", path: String(field ?? "cursor"), message: "unknown or malformed cursor" }],
        }
      : error.facts;
  const retryAfter = error.retryAfterSeconds;
  const headers = {
    ...(retryAfter === undefined ? {} : { "retry-after": String(retryAfter) }),
    ...(error instanceof RateLimitedError ? rateLimitFields(error.policies) : {}),
  };
  return new ProblemError(PROBLEM_OF_DOMAIN[error.code], error.message, {
    cause: error,
    extensions: { ...extensions },
    ...(Object.keys(headers).length === 0 ? {} : { headers }),
  });
}

/**
 * Maps any thrown value to its {@link ProblemError}: a ProblemError as it is, a domain refusal
 * ({@link DomainError}) by {@link problemOfDomain}, a store that cannot be reached
 * (`isStoreUnavailable`, shared/store/errors.ts) as 503 STORE_UNAVAILABLE (with `Retry-After`), anything
 * else (including a store *request* error: ValidationException, a missing table) as 500 INTERNAL with a
 * generic detail: no message, stack or cause of an unexpected error reaches the client.
 * Render it with {@link ProblemError.getResponse}.
 */
export function toProblem(error: unknown): ProblemError {
  if (error instanceof ProblemError) return error;
  if (error instanceof DomainError) return problemOfDomain(error);
  if (isStoreUnavailable(error)) {
    return new ProblemError(
      "STORE_UNAVAILABLE",
      "The data store is not reachable right now; retry shortly.",
      {
        cause: error,
      },
    );
  }
  return new ProblemError("INTERNAL", "The server could not complete the request.", { cause: error });
}
