/**
 * The console's calls to the public API (same origin), with the caller's bearer token from session
 * storage, and its live run events: Server-Sent Events read over `fetch` with eventsource-parser
 * (EventSource cannot send an Authorization header) from the streaming function URL the page names
 * (`boundloop-stream-url`; its own origin without one), resumed with `Last-Event-ID` whenever a stream
 * ends before the run does (a stream's time limit, a dropped connection), until a resume is 204.
 */
import { createParser } from "eventsource-parser";
import type { z } from "zod";
import type { PolicyAuditSchema, ToolResultSchema } from "../../shared/agent/result-schema.js";
import type { ApprovalRecord } from "../../shared/store/approval-record.js";
import type {
  RunRecordSchema,
  RunStepSchema,
  RunStepToolCallSchema,
} from "../../shared/store/run-record-schema.js";

const TOKEN_KEY = "boundloop.console.token";

/** The stored bearer token, if signed in. */
export const getToken = (): string | null => sessionStorage.getItem(TOKEN_KEY);

/** Stores the bearer token for this tab (session storage: gone when the tab closes). */
export const setToken = (token: string): void => sessionStorage.setItem(TOKEN_KEY, token);

/** Forgets the token. */
export const clearToken = (): void => sessionStorage.removeItem(TOKEN_KEY);

/**
 * The caller as the API verified it (`GET /v1/me`): its user, tenant and permissions, read the way every
 * route reads them (the deploy's PERMISSION_CLAIMS), so what the page offers is what the API allows.
 */
export interface Caller {
  sub: string;
  tenant: string;
  scopes: string[];
}

/**
 * Whether `token` reads as a JWT (three dot-separated parts whose second is a JSON object): a pasted
 * text that does not is no token, and the sign-in form says so before asking the API.
 */
export function tokenReads(token: string): boolean {
  try {
    const part = token.split(".")[1] ?? "";
    const claims: unknown = JSON.parse(atob(part.replaceAll("-", "+").replaceAll("_", "/")));
    return typeof claims === "object" && claims !== null;
  } catch {
    return false;
  }
}

/**
 * Asks the API who the caller is (`GET /v1/me`).
 * @returns the caller, or the API's refusal (a 401 has already shown the sign-in: {@link whenUnauthorized})
 */
export async function fetchCaller(): Promise<Caller | ApiAnswer> {
  const answer = await api<{ userId: string; tenantId: string; permissions: string[] }>("/v1/me");
  if (!answer.ok) return answer;
  const { userId, tenantId, permissions } = answer.body;
  return { sub: userId, tenant: tenantId, scopes: permissions };
}

/** An answer of the API: status and parsed JSON body (a problem's body on errors). */
export interface ApiAnswer<T = unknown> {
  status: number;
  ok: boolean;
  body: T;
  /** The response's headers (an `ETag` to send back as `If-Match`). */
  headers: Headers;
}

/** A problem+json body as the API answers errors; a 400's `errors` name each refused field and why. */
export interface Problem {
  code?: string;
  title?: string;
  detail?: string;
  rule?: string;
  errors?: Array<{ in?: string; path?: string; message: string }>;
}

/** Called when the API refuses the token (401), with why when it says: the page shows the sign-in again. */
let onUnauthorized: (why?: string) => void = () => {};

/** Sets what happens on a 401; `why` is the problem's detail or the authorizer's `error_description`. */
export function whenUnauthorized(handler: (why?: string) => void): void {
  onUnauthorized = handler;
}

/**
 * Why a 401 refused the token: the verifier's RFC 6750 `error_description` ("the token has expired"),
 * which the JWT authorizer (whose body is only `{"message":"Unauthorized"}`) and the streaming function
 * (whose problem `detail` wraps it in a sentence of its own) both send; else the problem's `detail`;
 * undefined when neither says.
 */
function refusalOf(headers: Headers, body: unknown): string | undefined {
  const described = /error_description="([^"]*)"/.exec(headers.get("www-authenticate") ?? "")?.[1];
  if (described) return described;
  const detail = (body as Problem | null)?.detail;
  return typeof detail === "string" ? detail : undefined;
}

/**
 * Calls the API at `path` with the bearer token; a JSON `body` is sent as such.
 * @returns the status and the parsed JSON (null when the body is not JSON)
 */
export async function api<T = unknown>(
  path: string,
  init: { method?: string; body?: unknown; headers?: Record<string, string> } = {},
): Promise<ApiAnswer<T>> {
  const headers: Record<string, string> = { accept: "application/json", ...init.headers };
  const token = getToken();
  if (token) headers.authorization = `Bearer ${token}`;
  if (init.body !== undefined) headers["content-type"] = "application/json";
  const response = await fetch(path, {
    method: init.method ?? "GET",
    headers,
    ...(init.body === undefined ? {} : { body: JSON.stringify(init.body) }),
  });
  const text = await response.text();
  let body: unknown = null;
  try {
    body = text ? JSON.parse(text) : null;
  } catch {
    body = null;
  }
  if (response.status === 401) onUnauthorized(refusalOf(response.headers, body));
  return { status: response.status, ok: response.ok, body: body as T, headers: response.headers };
}

/** One run event (docs/run-events.md): `type`, `seq` (from 1, no gaps), `at`, and the type's fields. */
export interface RunEvent {
  type: string;
  runId: string;
  seq: number;
  at: string;
  [field: string]: unknown;
}

const sleep = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal.addEventListener("abort", () => {
      clearTimeout(timer);
      resolve();
    });
  });

/** Where run events are read: the streaming function URL the page names, else this origin. */
export function streamBase(): string {
  const meta = document.querySelector<HTMLMetaElement>('meta[name="boundloop-stream-url"]');
  return meta?.content ?? "";
}

/**
 * How a follow's connection stands, told as it changes: `down` after each failed attempt (`status` 0:
 * no answer, or the connection dropped; else the server's 5xx with its problem body, null when not
 * JSON), with how many attempts failed in a row and when the next is made; `live` when a stream opens
 * again after being down.
 */
export type StreamHealth =
  | { state: "down"; status: number; problem: unknown; failures: number; retryMs: number }
  | { state: "live" };

/** A failed attempt's answer: the server's status (5xx) and its problem body. */
class StreamDown extends Error {
  constructor(
    readonly status: number,
    readonly problem: unknown,
    readonly retryAfterMs: number,
  ) {
    super(`HTTP ${status}`);
  }
}

/**
 * Follows a run's events from after `after` until `run.finished` (or a 204: nothing more will come) or
 * `signal` aborts: each event once, in sequence order, to `onEvent`. A stream that ends early is resumed
 * after the last sequence seen, after the server's `retry:` hint (1 s by default); a failed connection or
 * a 5xx is retried with backoff up to 10 s (longer when a 503's `Retry-After` says so), each failure and
 * the recovery told to `onHealth`. `onStream` is told each time a stream opens (its count: 1, 2, …). A
 * 401 stops the follow and shows the sign-in ({@link whenUnauthorized}).
 * @param onError told of a refusal (4xx other than 401) with its problem body (null when not JSON): the
 *   follow stops
 */
export async function followEvents(
  runId: string,
  options: {
    after?: number;
    signal: AbortSignal;
    onEvent: (event: RunEvent) => void;
    onError?: (status: number, problem: unknown) => void;
    onStream?: (streams: number) => void;
    onHealth?: (health: StreamHealth) => void;
  },
): Promise<void> {
  let streams = 0;
  let last = options.after ?? 0;
  let retryMs = 1000;
  let failures = 0;
  while (!options.signal.aborted) {
    let finished = false;
    try {
      const headers: Record<string, string> = { accept: "text/event-stream" };
      const token = getToken();
      if (token) headers.authorization = `Bearer ${token}`;
      if (last > 0) headers["last-event-id"] = String(last);
      const response = await fetch(`${streamBase()}/v1/runs/${encodeURIComponent(runId)}/events`, {
        headers,
        signal: options.signal,
      });
      if (response.status === 401) {
        const problem: unknown = await response.json().catch(() => null);
        return onUnauthorized(refusalOf(response.headers, problem));
      }
      if (response.status === 204) return;
      streams += 1;
      options.onStream?.(streams);
      if (response.status >= 400 && response.status < 500) {
        const problem: unknown = await response.json().catch(() => null);
        return options.onError?.(response.status, problem);
      }
      if (!response.ok || !response.body) {
        const retryAfter = Number(response.headers.get("retry-after")) * 1000;
        const problem: unknown = await response.json().catch(() => null);
        throw new StreamDown(response.status, problem, Number.isFinite(retryAfter) ? retryAfter : 0);
      }
      if (failures > 0) options.onHealth?.({ state: "live" });
      const parser = createParser({
        onEvent(message) {
          if (message.event === "error") return;
          const event = JSON.parse(message.data) as RunEvent;
          if (typeof event.seq !== "number" || event.seq <= last) return;
          last = event.seq;
          options.onEvent(event);
          if (event.type === "run.finished") finished = true;
        },
        onRetry(ms) {
          retryMs = ms;
        },
      });
      const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        parser.feed(value);
      }
      failures = 0;
    } catch (error) {
      if (options.signal.aborted || finished) return;
      failures += 1;
      const down = error instanceof StreamDown ? error : new StreamDown(0, null, 0);
      const wait = Math.min(60_000, Math.max(down.retryAfterMs, Math.min(10_000, 500 * 2 ** failures)));
      options.onHealth?.({
        state: "down",
        status: down.status,
        problem: down.problem,
        failures,
        retryMs: wait,
      });
      await sleep(wait, options.signal);
      continue;
    }
    if (finished) return;
    await sleep(retryMs, options.signal);
  }
}

/**
 * A run record as `GET /v1/runs/{runId}` and `GET /v1/runs` answer it, the fields the console reads: the
 * store's one schema of the record and its steps (shared/store/run-record-schema.ts), each tool call's
 * result the engine's (shared/agent/result-schema.ts); types only, nothing of shared/ is bundled. A
 * list item has no `steps` or `pendingApprovals`; `cost` is null when a model of the run has no price
 * (`costNote` names it) and the console shows "—".
 */
export type RunRecord = Pick<
  z.infer<typeof RunRecordSchema>,
  | "runId"
  | "userId"
  | "status"
  | "prompt"
  | "cycles"
  | "cyclesRecorded"
  | "usage"
  | "cost"
  | "costNote"
  | "startedAt"
  | "finishedAt"
  | "durationMs"
  | "answer"
  | "reason"
> & {
  steps?: Array<
    Pick<z.infer<typeof RunStepSchema>, "cycle" | "cost"> & {
      toolCalls: Array<
        Pick<z.infer<typeof RunStepToolCallSchema>, "id" | "name" | "arguments"> & {
          result: z.infer<typeof ToolResultSchema>;
        }
      >;
    }
  >;
  pendingApprovals?: Approval[];
};

/** A policy decision's explanation (docs/policies.md): the engine's one schema (type only, shared/agent/result-schema.ts). */
export type PolicyExplanation = z.infer<typeof PolicyAuditSchema>;

/**
 * An approval as `GET /v1/approvals` carries it (its one schema, shared/store/approval-record.ts; type
 * only, nothing of shared/ is bundled), or as a run's `pendingApprovals` do (the fields they pick).
 */
export type Approval = Pick<
  ApprovalRecord,
  "approvalId" | "toolName" | "arguments" | "preview" | "requestedBy" | "requestedAt" | "expiresAt"
> &
  Partial<ApprovalRecord>;
