/**
 * The one table of stable HTTP problem codes and their statuses (RFC 9457 problem details).
 * Every HTTP error the API returns comes from this table through {@link toProblem}.
 */
export const PROBLEM_STATUS = {
  INVALID_REQUEST: 400,
  UNAUTHENTICATED: 401,
  FORBIDDEN: 403,
  NOT_FOUND: 404,
  IDEMPOTENCY_KEY_IN_USE: 409,
  PAYLOAD_TOO_LARGE: 413,
  UNSUPPORTED_MEDIA_TYPE: 415,
  IDEMPOTENCY_KEY_REUSED: 422,
  INTERNAL: 500,
  MODEL_UNAVAILABLE: 502,
  STORE_UNAVAILABLE: 503,
} as const;

/** A stable problem code, a key of {@link PROBLEM_STATUS}. */
export type ProblemCode = keyof typeof PROBLEM_STATUS;

/** Short human titles for each code (RFC 9457 `title`). */
const TITLES: Record<ProblemCode, string> = {
  INVALID_REQUEST: "Invalid request",
  UNAUTHENTICATED: "Unauthenticated",
  FORBIDDEN: "Forbidden",
  NOT_FOUND: "Not found",
  IDEMPOTENCY_KEY_IN_USE: "Idempotency key in use",
  PAYLOAD_TOO_LARGE: "Payload too large",
  UNSUPPORTED_MEDIA_TYPE: "Unsupported media type",
  IDEMPOTENCY_KEY_REUSED: "Idempotency key reused",
  INTERNAL: "Internal error",
  MODEL_UNAVAILABLE: "Model unavailable",
  STORE_UNAVAILABLE: "Store unavailable",
};

/**
 * An error that maps to an HTTP problem response.
 * `extensions` are extra members of the problem body (for example `errors` with field paths);
 * `headers` are extra response headers (for example `Retry-After`).
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
    this.headers = options.headers ?? {};
  }
}

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
 * Maps any thrown value to a problem response. Unknown errors become INTERNAL with a generic detail:
 * no message, stack or cause of an unexpected error reaches the client.
 * @returns `{ status, body, headers }` ready to send
 */
export function toProblem(error: unknown): {
  status: number;
  body: ProblemBody;
  headers: Record<string, string>;
} {
  const problem =
    error instanceof ProblemError
      ? error
      : new ProblemError("INTERNAL", "The server could not complete the request.");
  const body: ProblemBody = {
    ...problem.extensions,
    type: `https://boundloop.dev/problems/${problem.code.toLowerCase().replaceAll("_", "-")}`,
    title: TITLES[problem.code],
    status: problem.status,
    detail: problem.message,
    code: problem.code,
  };
  return { status: problem.status, body, headers: problem.headers };
}
