/**
 * The HTTP contract: every request and response schema, and every route, declared once with zod
 * (@hono/zod-openapi). The same schemas validate requests at run time and generate `/openapi.json`
 * (OpenAPI 3.1); tests parse responses with them.
 */
import { createRoute, z } from "@hono/zod-openapi";
import type { RunStatus } from "../../shared/agent/loop.js";
import { PROBLEM_STATUS, type ProblemCode } from "../../shared/errors.js";
import { HEALTH_PATH } from "./health.js";

/** Prompt length bounds (characters) of `POST /v1/runs`. */
export const PROMPT_MAX_CHARS = 8_000;
/** Page size bounds of `GET /v1/invoices`: default 20, at most 100. */
export const INVOICE_PAGE = { default: 20, max: 100 } as const;

/**
 * Every run status the API can report. Statuses beyond the loop's current {@link RunStatus} union are
 * ones announced for it (budgets, loop detection); the check below fails to compile if the loop gains a
 * status this list lacks.
 */
export const RUN_STATUSES = [
  "completed",
  "max_cycles_exceeded",
  "deadline_exceeded",
  "budget_exceeded",
  "loop_detected",
  "permission_denied",
  "model_refused",
  "model_output_truncated",
  "model_error",
  "context_length_exceeded",
] as const;
type MissingRunStatus = Exclude<RunStatus, (typeof RUN_STATUSES)[number]>;
const everyRunStatusListed: [MissingRunStatus] extends [never] ? true : MissingRunStatus = true;
void everyRunStatusListed;

// ---------------------------------------------------------------- shared pieces

/** A problem response (RFC 9457) with the stable `code`. */
export const ProblemSchema = z
  .object({
    type: z.string().openapi({ example: "https://boundloop.dev/problems/invalid-request" }),
    title: z.string(),
    status: z.number().int(),
    detail: z.string(),
    code: z.enum(Object.keys(PROBLEM_STATUS) as [ProblemCode, ...ProblemCode[]]),
    errors: z
      .array(z.object({ in: z.string(), path: z.string(), message: z.string() }))
      .optional()
      .openapi({ description: "INVALID_REQUEST only: each invalid field, where it was and why." }),
  })
  .loose()
  .openapi("Problem", { description: "RFC 9457 problem details; extension members depend on `code`." });

const problemContent = { "application/problem+json": { schema: ProblemSchema } };
const problem = (description: string) => ({ description, content: problemContent });

/** Token usage of a run or cycle (`RunUsage`). */
export const UsageSchema = z
  .object({
    promptTokens: z.number().int().nonnegative(),
    completionTokens: z.number().int().nonnegative(),
    totalTokens: z.number().int().nonnegative(),
  })
  .openapi("Usage", { description: "Token usage summed over the run's model calls." });

/** One tool result (`ToolResult` in shared/agent/result.ts): status, data or error, metadata. */
export const ToolResultSchema = z
  .object({
    status: z.enum(["success", "validation_error", "permission_denied", "business_error", "fatal_error"]),
    data: z.unknown().openapi({ description: "The tool's output on success, else null." }),
    error: z
      .object({
        code: z.string(),
        message: z.string(),
        details: z.record(z.string(), z.unknown()),
        retryable: z.boolean(),
      })
      .nullable(),
    metadata: z.object({
      toolName: z.string(),
      toolCallId: z.string(),
      latencyMs: z.number().nonnegative(),
      idempotencyKey: z.string().nullable(),
    }),
  })
  .openapi("ToolResult", { description: "The envelope of one tool call, success or not." });

/** A terminal run status, see {@link RUN_STATUSES}. */
export const RunStatusSchema = z.enum(RUN_STATUSES).openapi("RunStatus");

// ---------------------------------------------------------------- runs

/** A run id as the API issues it (`run_` and a UUID) or accepts it in a path or body. */
const RunId = z.string().regex(/^[A-Za-z0-9_-]{1,128}$/);

/** The earlier conversation a run carried (`HistorySummary` in shared/store/runs.ts); null without one. */
export const HistorySummarySchema = z
  .object({
    messages: z.number().int().nonnegative(),
    estimatedTokens: z.number().int().nonnegative(),
    droppedMessages: z.number().int().nonnegative(),
  })
  .nullable()
  .openapi("HistorySummary", {
    description:
      "The earlier conversation sent with the run (previousRunId): messages, their estimated tokens, and the messages left out to stay within HISTORY_MAX_TOKENS. Null for a new conversation.",
  });

/** Body of `POST /v1/runs`: prompt and optional limits that only tighten the server caps. */
export const CreateRunBody = z
  .object({
    prompt: z
      .string()
      .trim()
      .min(1)
      .max(PROMPT_MAX_CHARS)
      .openapi({
        description: `What to do, 1 to ${PROMPT_MAX_CHARS} characters (after trimming).`,
        example: "Calculate tax on 1500 GBP for a client in the UK and record the invoice.",
      }),
    maxCycles: z.number().int().positive().optional().openapi({
      description:
        "Cap on model calls for this run. Only tightens the server's cap (MAX_CYCLES): larger values are clamped to it.",
    }),
    timeoutMs: z.number().int().positive().optional().openapi({
      description:
        "Cap on this run's wall time in ms. Only tightens the server's cap (RUN_TIMEOUT_MS): larger values are clamped to it.",
    }),
    previousRunId: RunId.optional().openapi({
      description:
        "Continue the conversation of this earlier run of the same user: the run starts from its transcript (cut to HISTORY_MAX_TOKENS), then this prompt. See docs/conversations.md.",
      example: "run_0b6f0e53-8f0c-4a6e-9f33-3c1f0d6b5e21",
    }),
  })
  .strict()
  .openapi("CreateRunRequest");

/** 200 body of `POST /v1/runs`: the run outcome without its transcript. */
export const RunResponseSchema = z
  .object({
    runId: z.string(),
    status: RunStatusSchema,
    answer: z.string().nullable(),
    reason: z.string().nullable(),
    cycles: z.number().int().nonnegative(),
    toolResults: z.array(ToolResultSchema),
    usage: UsageSchema,
    durationMs: z.number().int().nonnegative(),
    previousRunId: z.string().nullable().openapi({ description: "The run this one continues, or null." }),
    history: HistorySummarySchema,
  })
  .openapi("RunResponse", { description: "The run's terminal outcome (every terminal status is a 200)." });

/** One audit step (`RunStep` in shared/store/runs.ts). */
export const RunStepSchema = z
  .object({
    cycle: z.number().int().positive(),
    recordedAt: z.string(),
    request: z
      .object({ messageCount: z.number().int(), toolsOffered: z.array(z.string()) })
      .openapi({ description: "A summary of the model request; never the prompt text." }),
    finishReason: z.string().nullable(),
    modelLatencyMs: z.number().nonnegative(),
    usage: UsageSchema,
    toolCalls: z.array(
      z.object({
        id: z.string(),
        name: z.string(),
        arguments: z.string().openapi({ description: "The model's raw arguments (cut at 8192 characters)." }),
        argumentsTruncated: z.boolean(),
        result: ToolResultSchema,
      }),
    ),
  })
  .openapi("RunStep", { description: "The audit record of one cycle." });

/** 200 body of `GET /v1/runs/{runId}`: `RunRecord` plus its steps in cycle order. */
export const RunRecordSchema = z
  .object({
    runId: z.string(),
    tenantId: z.string(),
    userId: z.string(),
    status: z.union([z.enum(["running", "failed"]), RunStatusSchema]),
    prompt: z.object({ chars: z.number().int(), sha256: z.string() }),
    limits: z.object({ maxCycles: z.number().int(), timeoutMs: z.number().int() }),
    startedAt: z.string(),
    updatedAt: z.string(),
    finishedAt: z.string().nullable(),
    cyclesRecorded: z.number().int().nonnegative(),
    cycles: z.number().int().nullable(),
    answer: z.string().nullable(),
    reason: z.string().nullable(),
    usage: UsageSchema,
    durationMs: z.number().int().nullable(),
    expiresAt: z.string(),
    previousRunId: z.string().nullable().openapi({ description: "The run this one continues, or null." }),
    history: HistorySummarySchema,
    steps: z.array(RunStepSchema),
  })
  .openapi("RunRecord", {
    description: "A stored run and its audit steps; `running` until the outcome is written.",
  });

/** Path parameters of `GET /v1/runs/{runId}`. */
export const RunIdParam = z.object({
  runId: RunId.openapi({
    param: { name: "runId", in: "path" },
    example: "run_0b6f0e53-8f0c-4a6e-9f33-3c1f0d6b5e21",
  }),
});

// ---------------------------------------------------------------- invoices

const MoneySchema = z
  .object({ amount: z.string(), minorUnits: z.number().int(), currency: z.string() })
  .openapi("Money", { description: "Exact decimal string plus integer minor units (ISO 4217)." });

/** An invoice of the ledger (`Invoice` in shared/store/ledger.ts); amounts are exact decimal strings. */
export const InvoiceSchema = z
  .object({
    invoiceId: z.string(),
    tenantId: z.string(),
    clientName: z.string(),
    jurisdiction: z.string(),
    currency: z.string(),
    rate: z.string(),
    subtotal: MoneySchema,
    taxAmount: MoneySchema,
    grossTotal: MoneySchema,
    idempotencyKey: z.string(),
    runId: z.string(),
    createdBy: z.string(),
    createdAt: z.string(),
  })
  .openapi("Invoice");

/** 200 body of `GET /v1/invoices`: one page and the cursor of the next. */
export const InvoicePageSchema = z
  .object({
    items: z.array(InvoiceSchema),
    nextCursor: z
      .string()
      .nullable()
      .openapi({ description: "Pass as `cursor` for the next page; null on the last page." }),
  })
  .openapi("InvoicePage");

/** Query of `GET /v1/invoices`: page size and cursor. */
export const InvoiceListQuery = z.object({
  limit: z.coerce
    .number()
    .int()
    .min(1)
    .max(INVOICE_PAGE.max)
    .default(INVOICE_PAGE.default)
    .openapi({
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

/** Path parameters of `GET /v1/invoices/{invoiceId}`. */
export const InvoiceIdParam = z.object({
  invoiceId: z
    .string()
    .regex(/^[A-Za-z0-9_-]{1,64}$/)
    .openapi({ param: { name: "invoiceId", in: "path" }, example: "inv_f0fe8491dc0c6e51d9d6d30e" }),
});

// ---------------------------------------------------------------- routes

const security: Array<Record<string, string[]>> = [{ jwt: [] }, { iam: [] }];
const authErrors = {
  401: problem("UNAUTHENTICATED: no verified identity, or it lacks `sub` or the tenant."),
  500: problem("INTERNAL: nothing about the failure is disclosed."),
  503: problem("STORE_UNAVAILABLE: DynamoDB could not be reached; retry after `Retry-After` seconds."),
};

/** `GET /healthz`: liveness, no auth. */
export const healthRoute = createRoute({
  method: "get",
  path: HEALTH_PATH,
  summary: "Liveness check (no auth)",
  responses: {
    200: {
      description: "The function is up.",
      content: { "application/json": { schema: z.object({ status: z.literal("ok") }) } },
    },
  },
});

/** `POST /v1/runs`: run the agent; every terminal status is 200 except model_error (502). */
export const createRunRoute = createRoute({
  method: "post",
  path: "/v1/runs",
  summary: "Run the agent on a prompt",
  security,
  request: {
    body: { required: true, content: { "application/json": { schema: CreateRunBody } } },
  },
  responses: {
    200: {
      description: "The run ended; `status` says how (every terminal status is a 200).",
      content: { "application/json": { schema: RunResponseSchema } },
    },
    400: problem(
      "INVALID_REQUEST: the body is not valid JSON or fails the schema (`errors` has field paths).",
    ),
    404: problem(
      "NOT_FOUND: `previousRunId` names no run of this user (another tenant's or user's run looks the same), or one whose records expired (RUN_TTL_SECONDS; the detail says so).",
    ),
    409: problem(
      "IDEMPOTENCY_KEY_IN_USE: a run with this Idempotency-Key is still in progress. PREVIOUS_RUN_IN_PROGRESS: the run `previousRunId` names has not finished (`Retry-After`). PREVIOUS_RUN_NOT_CONTINUABLE: it ended without a transcript (the server failed mid-run, or it stopped without recording an outcome).",
    ),
    413: problem("PAYLOAD_TOO_LARGE: the body is over MAX_BODY_BYTES."),
    415: problem("UNSUPPORTED_MEDIA_TYPE: send application/json."),
    422: problem(
      "IDEMPOTENCY_KEY_REUSED: the Idempotency-Key was used with a different body. CONTEXT_LENGTH_EXCEEDED: the model's context window could not hold the request; `history` and `contextLength` give the sizes, `runId`, `runStatus`, `cycles` and `toolResults` describe the partial run.",
    ),
    502: problem(
      "MODEL_UNAVAILABLE: the model provider kept failing after retries; `runId`, `runStatus`, `cycles` and `toolResults` describe the partial run.",
    ),
    ...authErrors,
  },
});

/** `GET /v1/runs/{runId}`: the stored run with its audit steps. */
export const getRunRoute = createRoute({
  method: "get",
  path: "/v1/runs/{runId}",
  summary: "A stored run with its audit steps",
  security,
  request: { params: RunIdParam },
  responses: {
    200: { description: "The run.", content: { "application/json": { schema: RunRecordSchema } } },
    400: problem("INVALID_REQUEST: malformed runId."),
    404: problem("NOT_FOUND: no such run for this caller (another tenant's run is not found either)."),
    ...authErrors,
  },
});

/** `GET /v1/invoices`: the tenant's ledger, paginated (needs billing:read). */
export const listInvoicesRoute = createRoute({
  method: "get",
  path: "/v1/invoices",
  summary: "The tenant's invoices, a page at a time (needs billing:read)",
  security,
  request: { query: InvoiceListQuery },
  responses: {
    200: { description: "One page.", content: { "application/json": { schema: InvoicePageSchema } } },
    400: problem("INVALID_REQUEST: bad `limit` or `cursor`."),
    403: problem("FORBIDDEN: the caller lacks billing:read."),
    ...authErrors,
  },
});

/** `GET /v1/invoices/{invoiceId}`: one invoice of the tenant (needs billing:read). */
export const getInvoiceRoute = createRoute({
  method: "get",
  path: "/v1/invoices/{invoiceId}",
  summary: "One invoice of the tenant (needs billing:read)",
  security,
  request: { params: InvoiceIdParam },
  responses: {
    200: { description: "The invoice.", content: { "application/json": { schema: InvoiceSchema } } },
    400: problem("INVALID_REQUEST: malformed invoiceId."),
    403: problem("FORBIDDEN: the caller lacks billing:read."),
    404: problem("NOT_FOUND: the tenant has no such invoice."),
    ...authErrors,
  },
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
  iam: {
    type: "apiKey",
    in: "header",
    name: "Authorization",
    description:
      "AWS SigV4 on a Lambda function URL (AuthType AWS_IAM); the principal must be listed in IAM_PRINCIPAL_TENANTS.",
  },
} as const;
