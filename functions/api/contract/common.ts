/**
 * The HTTP contract's shared pieces: response headers, the security of the API's routes and the OpenAPI
 * document's fixed parts, the Idempotency-Key header, the page query every listing takes, and the SSE body.
 */

import { z } from "@hono/zod-openapi";
import { MAX_KEY_LENGTH } from "../../../shared/runs/exactly-once.js";

/** Page size bounds of `GET /v1/invoices`: default 20, at most 100. */
export const INVOICE_PAGE = { default: 20, max: 100 } as const;

/**
 * Response headers the API sends, as zod objects (@hono/zod-openapi documents each member as a
 * response header; optional members are documented as not required):
 * - `Retry-After` (RFC 9110 §10.2.3): seconds to wait, on 409 IDEMPOTENCY_KEY_IN_USE (until the holder's
 *   lease ends), 409 PREVIOUS_RUN_IN_PROGRESS (until the previous run's deadline; `retryAfterWhileInProgress`:
 *   optional, since the other 409 of `POST /v1/runs`, PREVIOUS_RUN_NOT_CONTINUABLE, has none) and 503
 *   STORE_UNAVAILABLE;
 * - `WWW-Authenticate` (RFC 9110 §11.6.1): the challenge of every 401;
 * - `Idempotent-Replayed`: `true` on a response replayed for a repeated Idempotency-Key;
 * - `accepted`: the 202 of `POST /v1/runs`: `Location` (RFC 9110 §10.2.2) of the run, `Retry-After` (s)
 *   when to poll it, and `Preference-Applied: respond-async` (RFC 7240 §3) only when the run was started
 *   durable because of `Prefer: respond-async` (not on the 202 of a synchronous run that paused for
 *   approval and was handed over);
 * - `pollAfter`: `Retry-After` (s) on a run that is still `running`.
 */
export const RESPONSE_HEADERS = {
  retryAfter: z.object({
    "Retry-After": z.number().int().min(1).openapi({ description: "Seconds to wait before retrying." }),
  }),
  retryAfterWhileInProgress: z.object({
    "Retry-After": z.number().int().min(1).optional().openapi({
      description:
        "Seconds to wait before retrying: on IDEMPOTENCY_KEY_IN_USE and PREVIOUS_RUN_IN_PROGRESS; absent on PREVIOUS_RUN_NOT_CONTINUABLE.",
    }),
  }),
  wwwAuthenticate: z.object({
    "WWW-Authenticate": z.string().openapi({
      description:
        "The authentication challenge (`Bearer`), from the gateway's JWT authorizer or the function.",
    }),
  }),
  idempotentReplayed: z.object({
    "Idempotent-Replayed": z.literal("true").optional().openapi({
      description:
        "`true` when this is the stored response of an earlier request with the same Idempotency-Key; absent otherwise.",
    }),
  }),
  accepted: z.object({
    Location: z.string().openapi({ description: "The run's URL (`/v1/runs/{runId}`), to poll." }),
    "Retry-After": z
      .number()
      .int()
      .min(1)
      .openapi({ description: "Seconds to wait before polling the run." }),
    "Preference-Applied": z.literal("respond-async").optional().openapi({
      description:
        "`respond-async`: the honoured preference (RFC 7240), when the request sent `Prefer: respond-async`. Absent on the 202 of a synchronous run that paused for approval.",
    }),
    "Idempotent-Replayed": z.literal("true").optional().openapi({
      description: "`true` when this is the stored 202 of an earlier start with the same Idempotency-Key.",
    }),
  }),
  pollAfter: z.object({
    "Retry-After": z.number().int().min(1).optional().openapi({
      description: "Present while the run is `running`: seconds to wait before polling again.",
    }),
  }),
};

/**
 * The error option of a required body member: a missing one says "<name> is required" instead of zod's
 * "expected string, received undefined"; any other failure keeps zod's message.
 */
export function requiredField(name: string) {
  return {
    error: (issue: { input?: unknown }) => (issue.input === undefined ? `${name} is required` : undefined),
  };
}

/** The security of every `/v1` route: a JWT (API Gateway's authorizer) or SigV4 (IAM) on a function URL. */
export const security: Array<Record<string, string[]>> = [{ jwt: [] }, { iam: [] }];

/**
 * A query parameter that is one whole number from `min` to `max` written in plain digits (`20` or `020`;
 * not `2e1`, ` 20`, `+20`, `20.0`, `0x14` or empty, which `Number()` would take), documented as an
 * integer (its range in the document too: a preprocessed schema shows only its type). In any other form
 * it fails with one issue whose message names the parameter, its range and what was sent; the route
 * answers 400 INVALID_REQUEST (functions/api/routes/deps.ts `invalidRequest`, which also answers for a
 * parameter sent more than once, as `limit=1&limit=2`).
 */
export function wholeNumberQuery(name: string, min: number, max: number) {
  const rule = `${name} must be one whole number from ${min} to ${max}, in digits`;
  const shown = (input: unknown) => (typeof input === "number" ? String(input) : JSON.stringify(input));
  return z
    .preprocess(
      (value) => (typeof value === "string" && /^[0-9]+$/.test(value) ? Number(value) : value),
      // Digits only, so a whole number: no `.int()`, whose safe-integer check would add a second issue.
      z
        .number({ error: ({ input }) => `${rule} (got ${shown(input)})` })
        .min(min)
        .max(max),
    )
    .openapi({ type: "integer", minimum: min, maximum: max });
}

/** Query of `GET /v1/invoices` (and the page size and cursor of every listing): page size and cursor. */
export const InvoiceListQuery = z.object({
  limit: wholeNumberQuery("limit", 1, INVOICE_PAGE.max)
    .default(INVOICE_PAGE.default)
    .openapi({
      default: INVOICE_PAGE.default,
      param: { name: "limit", in: "query" },
      description: `Page size, 1 to ${INVOICE_PAGE.max} (default ${INVOICE_PAGE.default}).`,
    }),
  cursor: z
    .string()
    .min(1)
    .max(2048)
    .optional()
    .openapi({ param: { name: "cursor", in: "query" }, description: "Opaque cursor from `nextCursor`." }),
});

/** Request header of `POST /v1/runs` carrying the client's key (draft-ietf-httpapi-idempotency-key-header). */
export const IDEMPOTENCY_KEY_HEADER = "Idempotency-Key";

/** Response header set on every response replayed for a repeated Idempotency-Key (value `true`). */
export const IDEMPOTENT_REPLAYED_HEADER = "Idempotent-Replayed";

/**
 * Longest accepted Idempotency-Key, in characters after unquoting (house limit; the draft sets none): the
 * idempotency engine's one bound for every surface (shared/runs/exactly-once.ts).
 */
export const MAX_IDEMPOTENCY_KEY_LENGTH = MAX_KEY_LENGTH;

/**
 * The `Last-Event-ID` request header of a route whose stream resumes with it, as the document declares it:
 * the `id:` of the last event the client got, a run event sequence (each surface reads it with
 * `lastEventSequence`, shared/runs/event-feed.ts, and refuses any other value in its own protocol, never
 * as 0). `description` says what the route does with it.
 */
export function lastEventIdParameter(description: string) {
  return {
    name: "Last-Event-ID",
    in: "header",
    required: false,
    description,
    schema: { type: "string", pattern: "^[0-9]{1,15}$" },
  } as const;
}

/** The SSE body of the event stream routes (docs/run-events.md): `id:` is the event's sequence. */
export const EventStreamSchema = z.string().openapi("RunEventStream", {
  description:
    "Server-Sent Events (docs/run-events.md): `event: <type>`, `id: <sequence>`, `data: <the event as JSON>`; `: heartbeat` comments; a `retry:` hint before the stream's time limit (resume with `Last-Event-ID`). A `POST /v1/runs` stream ends with `event: run.outcome`, the JSON answer.",
  example: 'event: run.started\nid: 1\ndata: {"type":"run.started","seq":1,…}\n\n',
});

/** The OpenAPI document's fixed parts (info, servers, security schemes). */
export const OPENAPI_INFO = {
  openapi: "3.1.0",
  info: {
    title: "boundloop API",
    version: "1.0.0",
    description:
      "An LLM orchestrates deterministic backend tools inside a bounded agent loop. Errors are RFC 9457 application/problem+json with a stable `code`.",
  },
} as const;

/** Security schemes: a JWT verified by API Gateway, or SigV4 (IAM) on a Lambda function URL. */
export const SECURITY_SCHEMES = {
  jwt: {
    type: "http",
    scheme: "bearer",
    bearerFormat: "JWT",
    description:
      "Verified by the API Gateway JWT (HTTP API) or Cognito (REST API) authorizer; claims give sub, tenant and permissions.",
  },
  mcp: {
    type: "http",
    scheme: "bearer",
    bearerFormat: "JWT",
    description:
      "`/mcp` only: a JWT of JWT_ISSUER whose audience is the endpoint's URL (MCP_RESOURCE_URL), verified by the function (OAuth 2.1 resource server, RFC 9728 metadata at /.well-known/oauth-protected-resource/mcp).",
  },
  iam: {
    type: "apiKey",
    in: "header",
    name: "Authorization",
    description:
      "AWS SigV4 on a Lambda function URL (AuthType AWS_IAM); the principal must be listed in IAM_PRINCIPAL_TENANTS.",
  },
} as const;
