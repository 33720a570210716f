import type { Logger } from "@aws-lambda-powertools/logger";
import { parseItem } from "structured-headers";
import { canonicalJson } from "../../shared/agent/idempotency-key.js";
import type { Config } from "../../shared/config.js";
import { sha256Hex } from "../../shared/hash.js";
import { type KeepPolicy, protocolScopeOf, runOnce } from "../../shared/runs/exactly-once.js";
import type { IdempotencyStore, StoredOutcome } from "../../shared/store/idempotency.js";
import {
  IDEMPOTENCY_KEY_HEADER,
  IDEMPOTENT_REPLAYED_HEADER,
  MAX_IDEMPOTENCY_KEY_LENGTH,
} from "./contract/common.js";
import { rawHeaderValues } from "./lambda-adapter.js";
import { ProblemError, toProblem } from "./problem-details.js";

/** The route whose requests the Idempotency-Key records are scoped by. */
export const RUN_ROUTE = "POST /v1/runs";

/**
 * The bare form: RFC 9110 tchar plus ":" and "/" (an RFC 8941 sf-token's characters, without its rule
 * that the first be a letter or "*", so that a bare UUID is accepted).
 */
const BARE_KEY = /^[!#$%&'*+\-.^_`|~0-9A-Za-z:/]+$/;

/** Printable ASCII (%x20-7E), the only characters an RFC 8941 sf-string can hold. */
const PRINTABLE_ASCII = /^[\x20-\x7e]*$/;

function invalidKey(message: string): ProblemError {
  return new ProblemError("INVALID_REQUEST", message, {
    extensions: { errors: [{ in: "header", path: IDEMPOTENCY_KEY_HEADER, message }] },
  });
}

/**
 * Parses an Idempotency-Key header value. draft-ietf-httpapi-idempotency-key-header (section 2) defines
 * the field as an RFC 8941 Item whose value is an sf-string. Accepted:
 * - a quoted sf-string, `"…"` with `\"` and `\\` as the only escapes (parsed by the `structured-headers`
 *   package, RFC 8941 section 4.2.5); parameters (`"k";a=1`) and lists (`"a", "b"`, which is also what two
 *   headers combine to) are rejected;
 * - for clients that send the bare value, a token of RFC 9110 tchar plus `:` and `/` (a UUID, `order:42/1`).
 * Both forms name the same key: `"abc"` and `abc` are one key. Only printable ASCII (%x20-7E) is
 * accepted, and the key (after unquoting) must be 1 to {@link MAX_IDEMPOTENCY_KEY_LENGTH} characters.
 * Leading and trailing spaces and tabs (HTTP's optional whitespace, RFC 9110 section 5.5) are ignored.
 * A key beginning with a protocol's key scope (`a2a:`, `agui:`, `mcp:`; PROTOCOL_KEY_SCOPES,
 * shared/runs/exactly-once.ts) is refused: as this run's scope it would replay that protocol's tool calls.
 * @param value the header value exactly as received; null/undefined when the header is absent
 * @returns the key, or undefined when the header is absent
 * @throws ProblemError INVALID_REQUEST (400), `errors` naming the header, for any other value
 */
export function parseIdempotencyKey(value: string | null | undefined): string | undefined {
  if (value === null || value === undefined) return undefined;
  const field = value.replace(/^[ \t]+|[ \t]+$/g, "");
  if (!PRINTABLE_ASCII.test(field))
    throw invalidKey(
      `${IDEMPOTENCY_KEY_HEADER} must be printable ASCII characters (an RFC 8941 sf-string); it has a control or non-ASCII character.`,
    );
  const quoted = field.startsWith('"');
  const key = quoted ? parseQuotedKey(field) : field;
  if (!quoted && key.length > 0 && !BARE_KEY.test(key))
    throw invalidKey(
      `${IDEMPOTENCY_KEY_HEADER} must be a quoted string ("…") or a token of letters, digits and !#$%&'*+-.^_\`|~:/.`,
    );
  if (key.length < 1 || key.length > MAX_IDEMPOTENCY_KEY_LENGTH)
    throw invalidKey(`${IDEMPOTENCY_KEY_HEADER} must be 1 to ${MAX_IDEMPOTENCY_KEY_LENGTH} characters.`);
  const scope = protocolScopeOf(key);
  if (scope !== undefined)
    throw invalidKey(
      `${IDEMPOTENCY_KEY_HEADER} must not begin with "${scope}:": a2a:, agui: and mcp: are the key scopes of A2A, AG-UI and MCP, whose tool calls it would replay.`,
    );
  return key;
}

/** The string of a quoted sf-string field (RFC 8941 Item without parameters), or INVALID_REQUEST. */
function parseQuotedKey(field: string): string {
  let item: ReturnType<typeof parseItem>;
  try {
    item = parseItem(field);
  } catch (error) {
    const reason = error instanceof Error ? error.message.replace(/^Parse error: /, "") : String(error);
    throw invalidKey(`${IDEMPOTENCY_KEY_HEADER} is not a valid quoted string: ${reason}.`);
  }
  const [key, parameters] = item;
  if (typeof key !== "string" || parameters.size > 0)
    throw invalidKey(
      `${IDEMPOTENCY_KEY_HEADER} must be a single string, without parameters or list members.`,
    );
  return key;
}

/**
 * The raw Idempotency-Key value of a request: from the Lambda event when there is one (see
 * {@link rawHeaderValues}: hono/aws-lambda would have percent-encoded a non-ASCII key into a valid-looking
 * token, and dropped an empty one), else from the Request's headers. Repeated headers are joined with
 * ", " (RFC 9110 section 5.3), which {@link parseIdempotencyKey} refuses as a list.
 */
function idempotencyKeyValue(headers: Headers, event: unknown): string | null {
  const values = rawHeaderValues(event, IDEMPOTENCY_KEY_HEADER);
  if (values === undefined) return headers.get(IDEMPOTENCY_KEY_HEADER);
  return values.length > 0 ? values.join(", ") : null;
}

/**
 * Identifies a request for an Idempotency-Key: hex SHA-256 of the route, a newline, and the RFC 8785
 * canonical JSON of the (validated) body. Key order, whitespace and escape spelling do not change it.
 */
export function requestFingerprint(route: string, body: unknown): string {
  return sha256Hex(`${route}\n${canonicalJson(body)}`);
}

/**
 * Input of {@link withRunIdempotency}.
 * - `tenantId`, `userId`: the caller, from the verified security context (never from the body); a key
 *   belongs to one caller, so the record is scoped to both
 * - `body`: the validated request body, fingerprinted before `execute` runs
 * - `leaseExpiresAt`: epoch ms on the wall clock the store reads leases by, the run's deadline
 *   (`Deadline.wallClockAt`)
 * - `deps`: the one idempotency store (shared/deps.ts), the config (IDEMPOTENCY_KEY_REQUIRED) and the
 *   logger (a record that could not be completed or released, with the request's keys)
 * - `store`: another idempotency store than `deps.idempotency` (tests); `route` defaults to
 *   {@link RUN_ROUTE}
 * - `event`: the raw Lambda event, where the Idempotency-Key is read as sent (hono/aws-lambda
 *   percent-encodes non-ASCII values and drops empty ones in `headers`); such keys are rejected
 */
export interface RunIdempotencyInput {
  deps: { idempotency: IdempotencyStore; config: Config; logger: Logger };
  headers: Headers;
  event?: unknown;
  tenantId: string;
  userId: string;
  body: unknown;
  leaseExpiresAt: number;
  route?: string;
  store?: IdempotencyStore;
}

/**
 * The HTTP adapter of the idempotency engine (shared/runs/exactly-once.ts): runs `execute` at most once
 * per (tenant, user, route, Idempotency-Key) within the retention, and replays its response to retries:
 * - no header: `execute(undefined)` (400 when IDEMPOTENCY_KEY_REQUIRED is true);
 * - first request: record acquired (IN_PROGRESS, lease = the run's deadline); `execute(key)` runs with the
 *   key as the run scope; a response below 500, or a thrown error whose problem is below 500, is stored
 *   (owner-fenced) and replayed later; a 5xx response or any other throw releases the record
 *   (owner-fenced) so a retry runs again (tools that committed are protected by their own keys);
 * - same request completed: the stored status, content type and body, plus `Idempotent-Replayed: true`;
 * - same request in progress: 409 IDEMPOTENCY_KEY_IN_USE with Retry-After (s, until the lease ends);
 * - different request (fingerprint), whatever the record's state: 422 IDEMPOTENCY_KEY_REUSED;
 * - holder crashed (lease passed): this request takes over and runs.
 * A response that cannot be stored (store error, over MAX_STORED_RESPONSE_BYTES compressed, fence lost) is
 * still returned; the failure is logged and the record is released or left to its lease.
 * @throws ProblemError INVALID_REQUEST (bad header), IDEMPOTENCY_KEY_IN_USE, IDEMPOTENCY_KEY_REUSED;
 *   the store's own error when the record cannot be read or written (problem-details.ts `toProblem` makes
 *   an unreachable or throttled store 503 STORE_UNAVAILABLE, a request error 500 INTERNAL); whatever
 *   `execute` throws
 */
export async function withRunIdempotency(
  input: RunIdempotencyInput,
  execute: (clientKey: string | undefined) => Promise<Response>,
): Promise<Response> {
  const key = parseIdempotencyKey(idempotencyKeyValue(input.headers, input.event));
  if (key === undefined) {
    if (input.deps.config.idempotency.keyRequired)
      throw invalidKey(`This API requires an ${IDEMPOTENCY_KEY_HEADER} header on ${RUN_ROUTE}.`);
    return execute(undefined);
  }
  const route = input.route ?? RUN_ROUTE;
  const operation = {
    tenantId: input.tenantId,
    userId: input.userId,
    route,
    key,
    // Taken before execute: nothing the handler does to `body` afterwards changes the record it completes.
    fingerprint: requestFingerprint(route, input.body),
    leaseExpiresAt: input.leaseExpiresAt,
  };
  const deps = { idempotency: input.store ?? input.deps.idempotency, logger: input.deps.logger };
  const outcome = await runOnce(deps, operation, KEEP_RESPONSES, () => execute(key));
  switch (outcome.kind) {
    case "reused":
      throw new ProblemError(
        "IDEMPOTENCY_KEY_REUSED",
        `This ${IDEMPOTENCY_KEY_HEADER} was already used for a different request; use a new key for a new request.`,
      );
    case "in_progress":
      throw new ProblemError(
        "IDEMPOTENCY_KEY_IN_USE",
        `A request with this ${IDEMPOTENCY_KEY_HEADER} is still being processed; retry after ${outcome.retryAfterSeconds} s.`,
        { headers: { "Retry-After": String(outcome.retryAfterSeconds) } },
      );
    case "replayed":
      return replay(outcome.stored);
    case "executed":
      return outcome.result;
  }
}

/** The `kind` of a stored HTTP response (shared/store/idempotency.ts `StoredOutcome`). */
const HTTP_RESPONSE = "http_response";

/**
 * What the HTTP adapter keeps: a response below 500 (status, headers with lower-case names, body), and a
 * thrown error as the problem it renders (`toProblem`, the quotas' refusals included) when that is below
 * 500; a 5xx is not kept (the key is released, so a retry runs again), nor a 429 (the run was not
 * admitted: a retry after Retry-After must run it).
 */
const KEEP_RESPONSES: KeepPolicy<Response> = {
  keep: async (response) => (kept(response.status) ? stored(response.clone()) : undefined),
  keepThrown: (error) => {
    const problem = toProblem(error);
    if (!kept(problem.status)) return undefined;
    return {
      kind: HTTP_RESPONSE,
      status: problem.status,
      headers: problem.responseHeaders,
      body: JSON.stringify(problem.body),
    };
  },
};

/** Whether a response of `status` is kept for a repeat: below 500 and not 429 (see {@link KEEP_RESPONSES}). */
function kept(status: number): boolean {
  return status < 500 && status !== 429;
}

/** The stored form of `response` (its body read). */
async function stored(response: Response): Promise<StoredOutcome> {
  return {
    kind: HTTP_RESPONSE,
    status: response.status,
    headers: Object.fromEntries(response.headers),
    body: await response.text(),
  };
}

/** A stored response as the replay of a repeated request: as first sent, plus `Idempotent-Replayed: true`. */
function replay(outcome: StoredOutcome): Response {
  return new Response(outcome.body, {
    status: outcome.status ?? 200,
    headers: { ...outcome.headers, [IDEMPOTENT_REPLAYED_HEADER]: "true" },
  });
}
