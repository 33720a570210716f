import type { DynamoDBDocumentClient } from "@aws-sdk/lib-dynamodb";
import { canonicalJson } from "../../shared/agent/idempotency-key.js";
import type { Config } from "../../shared/config.js";
import { PROBLEM_CONTENT_TYPE, ProblemError, toProblem } from "../../shared/errors.js";
import { sha256Hex } from "../../shared/hash.js";
import {
  type IdempotencyClaim,
  IdempotencyStore,
  type StoredResponse,
} from "../../shared/store/idempotency.js";

/** The route whose requests the Idempotency-Key records are scoped by. */
export const RUN_ROUTE = "POST /v1/runs";

/** Request header carrying the client's key (draft-ietf-httpapi-idempotency-key-header). */
export const IDEMPOTENCY_KEY_HEADER = "Idempotency-Key";

/** Response header set on every replayed response (value `true`). */
export const IDEMPOTENT_REPLAYED_HEADER = "Idempotent-Replayed";

/** Longest accepted key, in characters (after unquoting). */
export const MAX_IDEMPOTENCY_KEY_LENGTH = 255;

/** RFC 9110 tchar, plus ":" and "/" as in an RFC 8941 sf-token (a bare UUID is accepted). */
const BARE_KEY = /^[!#$%&'*+\-.^_`|~0-9A-Za-z:/]+$/;

function invalidKey(message: string): ProblemError {
  return new ProblemError("INVALID_REQUEST", message, {
    extensions: { errors: [{ path: `header:${IDEMPOTENCY_KEY_HEADER}`, message }] },
  });
}

/**
 * Parses an Idempotency-Key header value (draft-ietf-httpapi-idempotency-key-header: an RFC 8941 Item
 * whose value is an sf-string). Accepted: a quoted sf-string (`"…"`, with `\"` and `\\` escapes, printable
 * ASCII %x20-7E) or, for clients that send the bare value, a token of RFC 9110 tchar plus `:` and `/`.
 * The key (unquoted) must be 1 to 255 characters. Parameters (`;a=1`) and lists (`"a", "b"`, which is
 * also what two headers combine to) are rejected.
 * @param value the raw header value; null/undefined when absent
 * @returns the key, or undefined when the header is absent
 * @throws ProblemError INVALID_REQUEST (400) for any other value
 */
export function parseIdempotencyKey(value: string | null | undefined): string | undefined {
  if (value === null || value === undefined) return undefined;
  const field = value.replace(/^[ \t]+|[ \t]+$/g, "");
  let key: string;
  if (field.startsWith('"')) {
    let index = 1;
    let decoded = "";
    for (;;) {
      const char = field[index];
      if (char === undefined)
        throw invalidKey(`${IDEMPOTENCY_KEY_HEADER} has an unterminated quoted string.`);
      index += 1;
      if (char === '"') break;
      if (char === "\\") {
        const escaped = field[index];
        if (escaped !== '"' && escaped !== "\\")
          throw invalidKey(`${IDEMPOTENCY_KEY_HEADER} may only escape " and \\ inside quotes.`);
        decoded += escaped;
        index += 1;
        continue;
      }
      const code = char.charCodeAt(0);
      if (code < 0x20 || code > 0x7e)
        throw invalidKey(`${IDEMPOTENCY_KEY_HEADER} must be printable ASCII characters.`);
      decoded += char;
    }
    if (index !== field.length)
      throw invalidKey(
        `${IDEMPOTENCY_KEY_HEADER} must be a single string, without parameters or list members.`,
      );
    key = decoded;
  } else {
    if (field.length > 0 && !BARE_KEY.test(field))
      throw invalidKey(
        `${IDEMPOTENCY_KEY_HEADER} must be a quoted string ("…") or a token of letters, digits and !#$%&'*+-.^_\`|~:/.`,
      );
    key = field;
  }
  if (key.length < 1 || key.length > MAX_IDEMPOTENCY_KEY_LENGTH)
    throw invalidKey(`${IDEMPOTENCY_KEY_HEADER} must be 1 to ${MAX_IDEMPOTENCY_KEY_LENGTH} characters.`);
  return key;
}

/**
 * Identifies a request for an Idempotency-Key: hex SHA-256 of the route, a newline, and the RFC 8785
 * canonical JSON of the (validated) body. Key order, whitespace and escape spelling do not change it.
 */
export function requestFingerprint(route: string, body: unknown): string {
  return sha256Hex(`${route}\n${canonicalJson(body)}`);
}

/**
 * The store the HTTP layer keeps its records in: the service table, retention IDEMPOTENCY_TTL_SECONDS.
 * @param deps the document client and config (AppDeps has both)
 */
export function runIdempotencyStore(deps: { ddb: DynamoDBDocumentClient; config: Config }): IdempotencyStore {
  return new IdempotencyStore(deps.ddb, deps.config.table.name, {
    ttlSeconds: deps.config.idempotency.ttlSeconds,
  });
}

/**
 * Input of {@link withRunIdempotency}.
 * - `tenantId`: from the verified security context (never from the body); scopes the record
 * - `body`: the validated request body, fingerprinted before `execute` runs
 * - `leaseExpiresAt`: epoch ms, the run's deadline (`Deadline.at`)
 * - `store`: defaults to {@link runIdempotencyStore}; `route` defaults to {@link RUN_ROUTE}
 * - `event`: the raw Lambda event, where an Idempotency-Key sent with an empty value is still seen
 *   (hono/aws-lambda drops empty header values from `headers`); such a key is rejected, not ignored
 */
export interface RunIdempotencyInput {
  deps: { ddb: DynamoDBDocumentClient; config: Config };
  headers: Headers;
  event?: unknown;
  tenantId: string;
  body: unknown;
  leaseExpiresAt: number;
  route?: string;
  store?: IdempotencyStore;
}

/**
 * Runs `execute` at most once per (tenant, route, Idempotency-Key) within the retention, and replays its
 * response to retries:
 * - no header: `execute(undefined)` (400 when IDEMPOTENCY_KEY_REQUIRED is true);
 * - first request: record acquired (IN_PROGRESS, lease = the run's deadline); `execute(key)` runs with the
 *   key as the run scope; a response below 500, or a thrown 4xx ProblemError, is stored (owner-fenced)
 *   and replayed later; a 5xx response or any other throw releases the record (owner-fenced) so a retry
 *   runs again (tools that committed are protected by their own keys);
 * - same request completed: the stored status, content type and body, plus `Idempotent-Replayed: true`;
 * - same request in progress: 409 IDEMPOTENCY_KEY_IN_USE with Retry-After (s, until the lease ends);
 * - different request (fingerprint), whatever the record's state: 422 IDEMPOTENCY_KEY_REUSED;
 * - holder crashed (lease passed): this request takes over and runs.
 * A response that cannot be stored (store error, over MAX_STORED_RESPONSE_BYTES compressed, fence lost) is
 * still returned; the failure is logged and the record is released or left to its lease.
 * @throws ProblemError INVALID_REQUEST (bad header), IDEMPOTENCY_KEY_IN_USE, IDEMPOTENCY_KEY_REUSED,
 *   STORE_UNAVAILABLE (the record could not be read or written); whatever `execute` throws
 */
export async function withRunIdempotency(
  input: RunIdempotencyInput,
  execute: (clientKey: string | undefined) => Promise<Response>,
): Promise<Response> {
  const key = parseIdempotencyKey(
    input.headers.get(IDEMPOTENCY_KEY_HEADER) ?? (sentEmpty(input.event, IDEMPOTENCY_KEY_HEADER) ? "" : null),
  );
  if (key === undefined) {
    if (input.deps.config.idempotency.keyRequired)
      throw invalidKey(`This API requires an ${IDEMPOTENCY_KEY_HEADER} header on ${RUN_ROUTE}.`);
    return execute(undefined);
  }
  const route = input.route ?? RUN_ROUTE;
  const store = input.store ?? runIdempotencyStore(input.deps);
  // Taken before execute: nothing the handler does to `body` afterwards changes the record it completes.
  const fingerprint = requestFingerprint(route, input.body);
  let acquired: Awaited<ReturnType<IdempotencyStore["acquire"]>>;
  try {
    acquired = await store.acquire({
      tenantId: input.tenantId,
      route,
      idempotencyKey: key,
      fingerprint,
      leaseExpiresAt: input.leaseExpiresAt,
    });
  } catch (error) {
    throw new ProblemError("STORE_UNAVAILABLE", "The idempotency record could not be read or written.", {
      cause: error,
    });
  }
  switch (acquired.kind) {
    case "mismatch":
      throw new ProblemError(
        "IDEMPOTENCY_KEY_REUSED",
        `This ${IDEMPOTENCY_KEY_HEADER} was already used for a different request; use a new key for a new request.`,
      );
    case "in_progress":
      throw new ProblemError(
        "IDEMPOTENCY_KEY_IN_USE",
        `A request with this ${IDEMPOTENCY_KEY_HEADER} is still being processed; retry after ${acquired.retryAfterSeconds} s.`,
        { headers: { "Retry-After": String(acquired.retryAfterSeconds) } },
      );
    case "completed":
      return replay(acquired.response);
    case "acquired":
      return runOwned(store, acquired.claim, () => execute(key));
  }
}

/** Executes while holding `claim`, then stores (status < 500) or releases (5xx, unexpected throw). */
async function runOwned(
  store: IdempotencyStore,
  claim: IdempotencyClaim,
  execute: () => Promise<Response>,
): Promise<Response> {
  let response: Response;
  try {
    response = await execute();
  } catch (error) {
    const problem = toProblem(error);
    if (problem.status < 500) {
      await settle(store, claim, {
        status: problem.status,
        headers: { ...lowerCaseKeys(problem.headers), "content-type": PROBLEM_CONTENT_TYPE },
        body: JSON.stringify(problem.body),
      });
    } else {
      await release(store, claim, `execution threw (${problem.status})`);
    }
    throw error;
  }
  if (response.status >= 500) {
    await release(store, claim, `response status ${response.status}`);
    return response;
  }
  const contentType = response.headers.get("content-type");
  await settle(store, claim, {
    status: response.status,
    headers: contentType ? { "content-type": contentType } : {},
    body: await response.clone().text(),
  });
  return response;
}

/** Completes the record; a response that cannot be stored is logged, and released when too large. */
async function settle(
  store: IdempotencyStore,
  claim: IdempotencyClaim,
  response: StoredResponse,
): Promise<void> {
  try {
    const result = await store.complete(claim, response);
    if (result === "too_large") await release(store, claim, "response over MAX_STORED_RESPONSE_BYTES");
    else if (result === "not_owner") log("WARN", "idempotency record taken over before completion", claim);
  } catch (error) {
    log("ERROR", `idempotency record not completed: ${String(error)}`, claim);
  }
}

/** Releases the record (owner-fenced); failures are logged, the lease then ends the claim. */
async function release(store: IdempotencyStore, claim: IdempotencyClaim, why: string): Promise<void> {
  try {
    await store.release(claim);
  } catch (error) {
    log("ERROR", `idempotency record not released (${why}): ${String(error)}`, claim);
  }
}

/** True when the Lambda event carries header `name` (any case) with an empty value. */
function sentEmpty(event: unknown, name: string): boolean {
  const bags = event as { headers?: Record<string, unknown>; multiValueHeaders?: Record<string, unknown> };
  const wanted = name.toLowerCase();
  return [bags?.headers, bags?.multiValueHeaders].some((bag) =>
    Object.entries(bag ?? {}).some(
      ([key, value]) =>
        key.toLowerCase() === wanted &&
        (value === "" || (Array.isArray(value) && value.every((v) => v === ""))),
    ),
  );
}

function replay(stored: StoredResponse): Response {
  return new Response(stored.body, {
    status: stored.status,
    headers: { ...stored.headers, [IDEMPOTENT_REPLAYED_HEADER]: "true" },
  });
}

function lowerCaseKeys(headers: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(headers).map(([name, value]) => [name.toLowerCase(), value]));
}

function log(level: "WARN" | "ERROR", message: string, claim: IdempotencyClaim): void {
  console.error(
    JSON.stringify({ level, message, tenantId: claim.tenantId, route: claim.route, owner: claim.owner }),
  );
}
