/**
 * The HTTP contract: every request and response schema, and every route, declared once with zod
 * (@hono/zod-openapi). The same schemas validate requests at run time and generate `/openapi.json`
 * (OpenAPI 3.1). Response schemas are strict (`additionalProperties: false`): tests parse every
 * response with them, so a field the document does not declare fails. The response types are derived
 * from them (`z.infer`), and the compile-time checks at the end of this file fail `tsc` when a domain
 * type the API returns (Invoice, RunRecord, RunOutcome, ToolResult) and its schema differ by a field.
 */
import { createRoute, z } from "@hono/zod-openapi";
import type { ToolResult } from "../../shared/agent/result.js";
import type { RunOutcome, RunStatus } from "../../shared/agent/types.js";
import type { AgentRunShapes } from "../../shared/deps.js";
import { PROBLEM_STATUS, type ProblemCode } from "../../shared/errors.js";
import type { ApprovalRecord } from "../../shared/store/approvals.js";
import type { Invoice } from "../../shared/store/ledger.js";
import type { RunRecord, RunStep } from "../../shared/store/runs.js";
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

/** Token usage of a run or cycle (`RunUsage`). */
export const UsageSchema = z
  .object({
    promptTokens: z.number().int().nonnegative(),
    completionTokens: z.number().int().nonnegative(),
    totalTokens: z.number().int().nonnegative(),
  })
  .strict()
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
      .strict()
      .nullable(),
    metadata: z
      .object({
        toolName: z.string(),
        toolCallId: z.string(),
        latencyMs: z.number().nonnegative(),
        idempotencyKey: z.string().nullable(),
        truncated: z
          .object({ originalBytes: z.number().int().positive(), maxBytes: z.number().int().positive() })
          .strict()
          .optional()
          .openapi({
            description:
              "Present when the result was cut to MAX_TOOL_RESULT_BYTES: its size before (UTF-8 bytes) and the cap.",
          }),
        approval: z
          .object({
            approvalId: z.string(),
            decision: z.enum(["approved", "rejected", "expired"]),
            decidedBy: z.string().nullable(),
            decidedAt: z.string(),
            reason: z.string().nullable(),
          })
          .strict()
          .optional()
          .openapi({
            description:
              "Present when the call waited for a person's approval (docs/approvals.md): who decided, when and why.",
          }),
      })
      .strict(),
  })
  .strict()
  .openapi("ToolResult", { description: "The envelope of one tool call, success or not." });

/** A terminal run status, see {@link RUN_STATUSES}. */
export const RunStatusSchema = z.enum(RUN_STATUSES).openapi("RunStatus");

/** A context-window refusal (`ContextLengthDetails` in shared/agent/context-length.ts). */
export const ContextLengthSchema = z
  .object({
    providerStatus: z.number().int().nullable(),
    message: z.string(),
    historyMessages: z.number().int().nonnegative(),
    historyEstimatedTokens: z.number().int().nonnegative(),
    requestMessages: z.number().int().nonnegative(),
    requestEstimatedTokens: z.number().int().nonnegative(),
    contextTokens: z.number().int().nullable(),
    requestTokens: z.number().int().nullable(),
  })
  .strict()
  .openapi("ContextLength", {
    description:
      "context_length_exceeded: the provider's HTTP status and message, the history's and the whole request's size in messages and estimated tokens, and the context window and request size where the provider stated them (else null).",
  });

/** Why a run stopped, for the status that stopped it (`RunOutcomeDetails` in shared/agent/loop.ts). */
export const RunDetailsSchema = z
  .object({
    effects: z
      .array(
        z
          .object({
            toolName: z.string(),
            toolCallId: z.string(),
            summary: z.string().openapi({
              description: "The tool's sentence from its backend result, e.g. the invoice it recorded.",
            }),
          })
          .strict(),
      )
      .optional()
      .openapi({
        description:
          "Any status but completed: the successful calls of mutating tools before the run stopped (what was done), in call order; `reason` ends with the same sentences.",
      }),
    budget: z
      .object({
        name: z.enum(["maxTotalTokens", "maxToolCallsPerRun"]),
        limit: z.number().int(),
        used: z.number().int(),
      })
      .strict()
      .optional()
      .openapi({ description: "budget_exceeded: the budget that ran out, its limit and the amount used." }),
    permission: z
      .object({ toolName: z.string(), requiredPermission: z.string() })
      .strict()
      .optional()
      .openapi({ description: "permission_denied: the tool and the permission the caller lacks." }),
    loop: z
      .object({
        toolName: z.string(),
        arguments: z.string(),
        errorCode: z.string(),
        failures: z.number().int(),
        hinted: z.boolean(),
      })
      .strict()
      .optional()
      .openapi({
        description:
          "loop_detected: the repeated tool, its canonical arguments, the error code, its failures, and whether the model was given a final hint.",
      }),
    modelError: z
      .object({
        status: z.number().int().nullable(),
        message: z.string(),
        finishReason: z.string().nullable().optional().openapi({
          description:
            "Set when the model twice sent a reply with neither text nor tool calls: the provider's finish_reason of the last one (null when it sent none).",
        }),
        code: z.string().optional().openapi({
          description:
            "A stable code of the provider's failure when the adapter knows it (Amazon Bedrock: MODEL_THROTTLED, MODEL_ACCESS_DENIED, MODEL_NOT_PERMITTED, MODEL_AUTH_FAILED, MODEL_NOT_FOUND, MODEL_REQUEST_INVALID, MODEL_SERVICE_ERROR, MODEL_KEY_UNAVAILABLE); `message` is then a fixed sentence.",
        }),
      })
      .strict()
      .optional()
      .openapi({
        description: "model_error: the provider's HTTP status (null without a response) and message.",
      }),
    deadline: z
      .object({
        phase: z.enum(["before_model_call", "model_call", "tool_calls"]),
        deadlineAt: z.number().openapi({ description: "Epoch ms." }),
      })
      .strict()
      .optional()
      .openapi({ description: "deadline_exceeded: the phase the deadline hit, and the deadline." }),
    finishReason: z
      .string()
      .optional()
      .openapi({ description: 'model_output_truncated: "length" or "content_filter".' }),
    summarized: z
      .boolean()
      .optional()
      .openapi({ description: "max_cycles_exceeded: whether a tool-less summary call produced `answer`." }),
    contextLength: ContextLengthSchema.optional(),
  })
  .strict()
  .openapi("RunDetails", {
    description:
      "Machine-readable facts about why the run stopped; only the entry for its status is set, plus `effects` when the run did something before it stopped.",
  });

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

/** A problem response (RFC 9457) with the stable `code`, and every extension member a code adds. */
export const ProblemSchema = z
  .object({
    type: z.string().openapi({ example: "https://boundloop.dev/problems/invalid-request" }),
    title: z.string(),
    status: z.number().int(),
    detail: z.string(),
    code: z.enum(Object.keys(PROBLEM_STATUS) as [ProblemCode, ...ProblemCode[]]),
    errors: z
      .array(
        z
          .object({ in: z.enum(["body", "query", "path", "header"]), path: z.string(), message: z.string() })
          .strict(),
      )
      .optional()
      .openapi({ description: "INVALID_REQUEST only: each invalid field, where it was and why." }),
    requiredPermission: z
      .string()
      .optional()
      .openapi({ description: "FORBIDDEN only: the permission the caller lacks." }),
    rule: z
      .literal("four_eyes")
      .optional()
      .openapi({ description: "FORBIDDEN only: the approver started the run (four-eyes rule)." }),
    approvalId: z
      .string()
      .optional()
      .openapi({ description: "APPROVAL_DECIDED, APPROVAL_EXPIRED and APPROVAL_CANCELLED only." }),
    approvalStatus: z.enum(["pending", "approved", "rejected", "expired", "cancelled"]).optional().openapi({
      description:
        "APPROVAL_DECIDED, APPROVAL_EXPIRED and APPROVAL_CANCELLED only: the approval's stored status.",
    }),
    runId: z.string().optional().openapi({
      description:
        "MODEL_UNAVAILABLE, CONTEXT_LENGTH_EXCEEDED, RUN_NOT_RUNNING and HANDOVER_TOO_LARGE only. With the first two, as are cycles, toolResults, usage and durationMs: the partial run.",
    }),
    runStatus: z
      .union([z.enum(["failed", "cancelled"]), RunStatusSchema])
      .optional()
      .openapi({
        description:
          "MODEL_UNAVAILABLE: `model_error`; CONTEXT_LENGTH_EXCEEDED: `context_length_exceeded`; RUN_NOT_RUNNING: the run's final status; HANDOVER_TOO_LARGE: `failed`.",
      }),
    providerStatus: z.number().int().nullable().optional().openapi({
      description: "MODEL_UNAVAILABLE only: the provider's last HTTP status; null without an HTTP response.",
    }),
    modelErrorCode: z.string().nullable().optional().openapi({
      description:
        "MODEL_UNAVAILABLE only: the stable code of the provider's failure when known (Amazon Bedrock's, e.g. MODEL_ACCESS_DENIED; `detail` then says what to do), else null.",
    }),
    cycles: z.number().int().nonnegative().optional(),
    toolResults: z.array(ToolResultSchema).optional(),
    usage: UsageSchema.optional(),
    durationMs: z.number().int().nonnegative().optional(),
    previousRunId: z
      .string()
      .nullable()
      .optional()
      .openapi({ description: "CONTEXT_LENGTH_EXCEEDED only: the run this one continued, or null." }),
    history: HistorySummarySchema.optional().openapi({
      description: "CONTEXT_LENGTH_EXCEEDED only: the earlier conversation the run carried, or null.",
    }),
    contextLength: ContextLengthSchema.nullable()
      .optional()
      .openapi({ description: "CONTEXT_LENGTH_EXCEEDED only: the refusal and the sizes." }),
    expired: z
      .literal(true)
      .optional()
      .openapi({ description: "NOT_FOUND of a `previousRunId` whose records expired (RUN_TTL_SECONDS)." }),
    expiresAt: z
      .string()
      .optional()
      .openapi({ description: "With `expired`: when the previous run's records expired (ISO 8601)." }),
    inputBytes: z.number().int().positive().optional().openapi({
      description:
        "HANDOVER_TOO_LARGE only: the size of the durable execution's input the run needed (bytes).",
    }),
    limitBytes: z.number().int().positive().optional().openapi({
      description: "HANDOVER_TOO_LARGE only: the input limit of a durable execution (262 144 bytes).",
    }),
    previousRunStatus: z.string().optional().openapi({
      description:
        "PREVIOUS_RUN_IN_PROGRESS and PREVIOUS_RUN_NOT_CONTINUABLE only: the status of the run `previousRunId` names.",
    }),
  })
  .strict()
  .openapi("Problem", { description: "RFC 9457 problem details; extension members depend on `code`." });

/** What API Gateway's JWT authorizer answers before the function runs (missing or invalid token). */
export const GatewayErrorSchema = z
  .object({ message: z.string().openapi({ example: "Unauthorized" }) })
  .strict()
  .openapi("GatewayError", { description: "An answer of API Gateway itself, not of the function." });

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

const problemContent = { "application/problem+json": { schema: ProblemSchema } };
const problem = (description: string, headers?: z.ZodObject) => ({
  description,
  content: problemContent,
  ...(headers ? { headers } : {}),
});

/**
 * The 413 of a route that takes a body: the function's problem+json over MAX_BODY_BYTES, or API Gateway's
 * own answer to a body over its 10 MB payload quota, which never reaches the function
 * (`{"message":"Request Entity Too Large"}`, application/json).
 */
const payloadTooLarge = {
  description:
    'PAYLOAD_TOO_LARGE: the body is over MAX_BODY_BYTES (problem+json from the function). A body over API Gateway\'s 10 MB quota is refused by the gateway before the function: `{"message":"Request Entity Too Large"}` (application/json, not problem+json).',
  content: { ...problemContent, "application/json": { schema: GatewayErrorSchema } },
};

// ---------------------------------------------------------------- runs

/**
 * The error option of a required body member: a missing one says "<name> is required" instead of zod's
 * "expected string, received undefined"; any other failure keeps zod's message.
 */
function requiredField(name: string) {
  return {
    error: (issue: { input?: unknown }) => (issue.input === undefined ? `${name} is required` : undefined),
  };
}

/** A run id as the API issues it (`run_` and a UUID) or accepts it in a path or body. */
const RunId = z.string().regex(/^[A-Za-z0-9_-]{1,128}$/);

/** Body of `POST /v1/runs`: prompt and optional limits that only tighten the server caps. */
export const CreateRunBody = z
  .object({
    prompt: z
      .string(requiredField("prompt"))
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

/** 200 body of `POST /v1/runs`: the run outcome (`RunOutcome`) without its transcript. */
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
    modelErrorStatus: z
      .number()
      .int()
      .nullable()
      .openapi({ description: "model_error only: the provider's HTTP status; null otherwise." }),
    details: RunDetailsSchema,
    previousRunId: z.string().nullable().openapi({ description: "The run this one continues, or null." }),
    history: HistorySummarySchema,
  })
  .strict()
  .openapi("RunResponse", { description: "The run's terminal outcome (every terminal status is a 200)." });

/** One audit step (`RunStep` in shared/store/runs.ts). */
export const RunStepSchema = z
  .object({
    cycle: z.number().int().positive(),
    recordedAt: z.string(),
    request: z
      .object({ messageCount: z.number().int(), toolsOffered: z.array(z.string()) })
      .strict()
      .openapi({ description: "A summary of the model request; never the prompt text." }),
    finishReason: z.string().nullable(),
    modelLatencyMs: z.number().nonnegative(),
    usage: UsageSchema,
    toolCalls: z.array(
      z
        .object({
          id: z.string(),
          name: z.string(),
          arguments: z
            .string()
            .openapi({ description: "The model's raw arguments (cut at 8192 characters)." }),
          argumentsTruncated: z.boolean(),
          result: ToolResultSchema,
        })
        .strict(),
    ),
  })
  .strict()
  .openapi("RunStep", { description: "The audit record of one cycle." });

// ---------------------------------------------------------------- approvals

/** One approval (`ApprovalRecord` in shared/store/approvals.ts); the durable callback id is never shown. */
export const ApprovalSchema = z
  .object({
    approvalId: z.string(),
    runId: z.string(),
    tenantId: z.string(),
    toolName: z.string(),
    toolCallId: z.string(),
    arguments: z.unknown().openapi({ description: "The call's validated arguments." }),
    preview: z.record(z.string(), z.unknown()).openapi({
      description:
        "The backend's numbers the decision is about (recordInvoice: quoteId, subtotal, taxAmount, grossTotal, currency, threshold; decimal strings).",
    }),
    requestedBy: z.string().openapi({ description: "The user who started the run; they may not decide." }),
    requestedAt: z.string(),
    expiresAt: z.string(),
    status: z.enum(["pending", "approved", "rejected", "expired", "cancelled"]).openapi({
      description:
        "`cancelled`: the run was cancelled while the approval waited; it can no longer be decided.",
    }),
    decidedBy: z.string().nullable(),
    decidedAt: z.string().nullable(),
    reason: z.string().nullable(),
  })
  .strict()
  .openapi("Approval", { description: "A person's sign-off on one tool call (docs/approvals.md)." });

/** A pending approval as a run shows it. */
export const PendingApprovalSchema = ApprovalSchema.pick({
  approvalId: true,
  toolName: true,
  arguments: true,
  preview: true,
  requestedBy: true,
  requestedAt: true,
  expiresAt: true,
})
  .strict()
  .openapi("PendingApproval");

/** Body of `POST /v1/runs/{runId}/approvals/{approvalId}`. */
export const DecideApprovalBody = z
  .object({
    decision: z.enum(["approve", "reject"], requiredField("decision")),
    reason: z
      .string()
      .trim()
      .min(1)
      .max(500)
      .optional()
      .openapi({ description: "Why (1-500 characters); a rejection's reason is given to the model." }),
  })
  .strict()
  .openapi("DecideApprovalRequest");

/** Path parameters of `POST /v1/runs/{runId}/approvals/{approvalId}`. */
export const ApprovalParams = z.object({
  runId: z
    .string()
    .regex(/^[A-Za-z0-9_-]{1,128}$/)
    .openapi({ param: { name: "runId", in: "path" }, example: "run_0b6f0e53-8f0c-4a6e-9f33-3c1f0d6b5e21" }),
  approvalId: z
    .string()
    .regex(/^apr_[a-f0-9]{32}$/)
    .openapi({ param: { name: "approvalId", in: "path" }, example: "apr_5c1f0d6b5e213c1f0d6b5e213c1f0d6b" }),
});

/** 200 body of `GET /v1/approvals`. */
export const ApprovalPageSchema = z
  .object({
    items: z.array(ApprovalSchema),
    nextCursor: z
      .string()
      .nullable()
      .openapi({ description: "Pass as `cursor` for the next page; null on the last page." }),
  })
  .strict()
  .openapi("ApprovalPage");

/** 200 body of `GET /v1/runs/{runId}`: `RunRecord` plus its steps in cycle order. */
export const RunRecordSchema = z
  .object({
    runId: z.string(),
    tenantId: z.string(),
    userId: z.string(),
    status: z.union([z.enum(["running", "awaiting_approval", "failed", "cancelled"]), RunStatusSchema]),
    prompt: z
      .object({
        chars: z.number().int(),
        sha256: z.string(),
        excerpt: z.string().optional().openapi({
          description:
            "The prompt's first PROMPT_EXCERPT_CHARS characters (500 by default; all of it when shorter), shown to whoever may see the run. Absent when the deployment keeps none (0), and on records written before excerpts were kept.",
        }),
      })
      .strict(),
    limits: z.object({ maxCycles: z.number().int(), timeoutMs: z.number().int() }).strict(),
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
    pendingApprovals: z.array(PendingApprovalSchema).optional().openapi({
      description: "The run's approvals still waiting for a decision (GET, and a paused run's 202).",
    }),
  })
  .strict()
  .openapi("RunRecord", {
    description:
      "A stored run and its audit steps; `running` until the outcome is written, `cancelled` once a durable run was stopped.",
  });

/** 200 body of `GET /v1/runs`: one page of the caller's runs (records without steps) and the next cursor. */
export const RunPageSchema = z
  .object({
    items: z.array(RunRecordSchema.omit({ steps: true, pendingApprovals: true })),
    nextCursor: z
      .string()
      .nullable()
      .openapi({ description: "Pass as `cursor` for the next page; null on the last page." }),
  })
  .strict()
  .openapi("RunPage");

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
  .strict()
  .openapi("Money", { description: "Exact decimal string plus integer minor units (ISO 4217)." });

/** An invoice of the ledger (`Invoice` in shared/store/ledger.ts); amounts are exact decimal strings. */
export const InvoiceSchema = z
  .object({
    invoiceId: z.string(),
    tenantId: z.string(),
    clientName: z.string(),
    clientReference: z.string().nullable().openapi({ description: "The client's own reference, if given." }),
    description: z.string().nullable(),
    quoteId: z.string().openapi({ description: "The calculateTax quote the amounts come from." }),
    jurisdiction: z.string(),
    currency: z.string(),
    rateVersion: z.string().openapi({ description: "Version of the tax rule the rate comes from." }),
    rate: z.string(),
    taxPointDate: z.string().openapi({ description: "The date the tax rule was chosen for (YYYY-MM-DD)." }),
    subtotal: MoneySchema,
    taxAmount: MoneySchema,
    grossTotal: MoneySchema,
    idempotencyKey: z.string(),
    runId: z.string(),
    createdBy: z.string(),
    createdAt: z.string(),
  })
  .strict()
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
  .strict()
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

/**
 * Query of `GET /v1/approvals`: `status` (`pending`, the default, or `decided`), and page size and cursor
 * as `GET /v1/invoices` (a cursor belongs to the status it was issued for).
 */
export const ApprovalListQuery = z.object({
  status: z
    .enum(["pending", "decided"])
    .default("pending")
    .openapi({
      param: { name: "status", in: "query" },
      description:
        "Which approvals: `pending` (waiting for a decision; oldest `requestedAt` first) or `decided` (no longer pending: approved, rejected, expired or cancelled; newest `decidedAt` first). A page holds `limit` approvals unless it is the last. The lists are eventually consistent: a decision moves its approval from one to the other within moments.",
    }),
  limit: InvoiceListQuery.shape.limit,
  cursor: InvoiceListQuery.shape.cursor,
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
  401: {
    description:
      'UNAUTHENTICATED: no verified identity, or it lacks `sub` or the tenant (problem+json from the function). A missing or invalid token is answered by the gateway\'s JWT authorizer before the function: `{"message":"Unauthorized"}`.',
    content: { ...problemContent, "application/json": { schema: GatewayErrorSchema } },
    headers: RESPONSE_HEADERS.wwwAuthenticate,
  },
  500: problem("INTERNAL: nothing about the failure is disclosed."),
  503: problem(
    "STORE_UNAVAILABLE: DynamoDB could not be reached or is throttling; retry after `Retry-After` seconds.",
    RESPONSE_HEADERS.retryAfter,
  ),
};

/** 200 body of `GET /healthz`. */
export const HealthSchema = z
  .object({ status: z.literal("ok") })
  .strict()
  .openapi("Health");

/** `GET /healthz`: liveness, no auth. */
export const healthRoute = createRoute({
  method: "get",
  path: HEALTH_PATH,
  summary: "Liveness check (no auth)",
  responses: {
    200: {
      description: "The function is up.",
      content: { "application/json": { schema: HealthSchema } },
    },
  },
});

// ---------------------------------------------------------------- MCP (docs/mcp.md)

/** A JSON-RPC 2.0 response (MCP Streamable HTTP, JSON mode): a result or an error, or a batch of them. */
const JsonRpcResponseSchema = z
  .object({
    jsonrpc: z.literal("2.0"),
    id: z.union([z.string(), z.number(), z.null()]),
    result: z.record(z.string(), z.unknown()).optional(),
    error: z.object({ code: z.number().int(), message: z.string(), data: z.unknown().optional() }).optional(),
  })
  .openapi("JsonRpcResponse");

const jsonRpc = (description: string, headers?: z.ZodObject) => ({
  description,
  content: {
    "application/json": { schema: z.union([JsonRpcResponseSchema, z.array(JsonRpcResponseSchema)]) },
  },
  ...(headers ? { headers } : {}),
});

/** RFC 9728 protected-resource metadata of `/mcp`. */
export const ResourceMetadataSchema = z
  .object({
    resource: z.string().openapi({ description: "The audience a token must carry (the endpoint's URL)." }),
    authorization_servers: z.array(z.string()),
    bearer_methods_supported: z.array(z.literal("header")),
    resource_name: z.string(),
  })
  .strict()
  .openapi("ProtectedResourceMetadata");

/** Security of `/mcp`: a bearer JWT verified by the function itself, audience = the endpoint's URL. */
const mcpSecurity: Array<Record<string, string[]>> = [{ mcp: [] }];

const mcpUnauthorized = {
  description:
    'No token, or one the function refuses (signature, issuer, expiry, audience other than this endpoint\'s URL, claims). `WWW-Authenticate: Bearer resource_metadata="…"` points at the RFC 9728 metadata; no body.',
  headers: RESPONSE_HEADERS.wwwAuthenticate,
};

/** `POST /mcp`: one JSON-RPC message (or batch) of the MCP Streamable HTTP transport, stateless, JSON. */
export const mcpRoute = createRoute({
  method: "post",
  path: "/mcp",
  summary: "MCP endpoint (Streamable HTTP, stateless, JSON responses)",
  description:
    'Model Context Protocol over Streamable HTTP (docs/mcp.md): `initialize`, `tools/list` (the tools the token\'s permissions allow), `tools/call` (through the same dispatcher as the loop; idempotency key in `_meta["io.boundloop/idempotency-key"]`). Send `Accept: application/json, text/event-stream` and `Content-Type: application/json`. Tool failures are results with `isError: true`; protocol failures are JSON-RPC errors.',
  security: mcpSecurity,
  responses: {
    200: jsonRpc("The JSON-RPC response(s)."),
    202: { description: "Only notifications or responses were sent: accepted, no body." },
    400: jsonRpc(
      "Malformed JSON (-32700), not a JSON-RPC message (-32700/-32600), or an unsupported MCP-Protocol-Version (-32000).",
    ),
    401: mcpUnauthorized,
    403: jsonRpc(
      "An `Origin` header other than the endpoint's own origin (DNS-rebinding protection, -32000).",
    ),
    406: jsonRpc("The Accept header does not list both application/json and text/event-stream (-32000)."),
    413: jsonRpc("The body is over MAX_BODY_BYTES (-32000)."),
    415: jsonRpc("The Content-Type is not application/json (-32000)."),
    500: problem("INTERNAL: nothing about the failure is disclosed."),
    503: problem(
      "STORE_UNAVAILABLE: the service's dependencies could not be loaded or reached; retry after `Retry-After` seconds.",
      RESPONSE_HEADERS.retryAfter,
    ),
  },
});

/** `GET /mcp`: this server offers no server-initiated SSE stream (stateless), so 405 as the transport says. */
export const mcpGetRoute = createRoute({
  method: "get",
  path: "/mcp",
  summary: "No SSE stream on GET (stateless server)",
  security: mcpSecurity,
  responses: {
    401: mcpUnauthorized,
    405: jsonRpc("Method not allowed: this server answers POST only (-32000); `Allow: POST`."),
    503: problem("STORE_UNAVAILABLE.", RESPONSE_HEADERS.retryAfter),
  },
});

/** Paths of the RFC 9728 metadata: the well-known root and its `/mcp`-suffixed form (section 3.1). */
export const RESOURCE_METADATA_PATHS = [
  "/.well-known/oauth-protected-resource",
  "/.well-known/oauth-protected-resource/mcp",
] as const;

/** `GET` of the protected-resource metadata (no auth): where an MCP client learns the resource and issuer. */
export const resourceMetadataRoutes = RESOURCE_METADATA_PATHS.map((path) =>
  createRoute({
    method: "get",
    path,
    summary: "OAuth 2.0 protected-resource metadata of /mcp (RFC 9728, no auth)",
    responses: {
      200: {
        description: "The metadata.",
        content: { "application/json": { schema: ResourceMetadataSchema } },
      },
    },
  }),
);

/** Request header of `POST /v1/runs` carrying the client's key (draft-ietf-httpapi-idempotency-key-header). */
export const IDEMPOTENCY_KEY_HEADER = "Idempotency-Key";

/** Longest accepted Idempotency-Key, in characters after unquoting (house limit; the draft sets none). */
export const MAX_IDEMPOTENCY_KEY_LENGTH = 255;

/**
 * The Idempotency-Key header as the OpenAPI document declares it. Parsed at run time by
 * `parseIdempotencyKey` (functions/api/run-idempotency.ts), not by a zod schema: it needs the value as
 * API Gateway sent it, before hono/aws-lambda percent-encodes non-ASCII characters.
 */
const idempotencyKeyParameter = {
  name: IDEMPOTENCY_KEY_HEADER,
  in: "header",
  required: false,
  description:
    "Makes the run happen at most once per tenant and key (draft-ietf-httpapi-idempotency-key-header): a " +
    "retry with the same key and body replays the first answer with `Idempotent-Replayed: true`. Accepted " +
    'forms: an RFC 8941 sf-string in double quotes (`"8e03978e-40d5-43e8-bc93-6894a57f9324"`, with `\\"` ' +
    "and `\\\\` as the only escapes), or the same key bare as a token of letters, digits and " +
    "``!#$%&'*+-.^_`|~:/`` (`8e03978e-40d5-43e8-bc93-6894a57f9324`); both forms are the same key. " +
    `Printable ASCII only, 1 to ${MAX_IDEMPOTENCY_KEY_LENGTH} characters after unquoting; no parameters, ` +
    "no list, one header. Anything else is 400 INVALID_REQUEST naming the header, and nothing is written. " +
    "Required when the server sets IDEMPOTENCY_KEY_REQUIRED=true.",
  schema: { type: "string" },
  example: '"8e03978e-40d5-43e8-bc93-6894a57f9324"',
} as const;

/**
 * The Prefer request header (RFC 7240) of `POST /v1/runs`: `respond-async` starts a durable run
 * (docs/durable-runs.md) answered 202; other preferences are ignored.
 */
const preferParameter = {
  name: "Prefer",
  in: "header",
  required: false,
  description:
    "`respond-async` (RFC 7240) starts the run as a durable run and answers 202 at once with `Location` " +
    "to poll; without it, or on a deployment without a durable runner, the run is synchronous. Other " +
    "preferences are ignored.",
  schema: { type: "string" },
  example: "respond-async",
} as const;

/** The SSE body of the event stream routes (docs/run-events.md): `id:` is the event's sequence. */
const EventStreamSchema = z.string().openapi("RunEventStream", {
  description:
    "Server-Sent Events (docs/run-events.md): `event: <type>`, `id: <sequence>`, `data: <the event as JSON>`; `: heartbeat` comments; a `retry:` hint before the stream's time limit (resume with `Last-Event-ID`). A `POST /v1/runs` stream ends with `event: run.outcome`, the JSON answer.",
  example: 'event: run.started\nid: 1\ndata: {"type":"run.started","seq":1,…}\n\n',
});

/** `POST /v1/runs`: run the agent; every terminal status is 200 except model_error (502). */
export const createRunRoute = createRoute({
  method: "post",
  path: "/v1/runs",
  summary: "Run the agent on a prompt",
  security,
  parameters: [idempotencyKeyParameter, preferParameter],
  request: {
    body: { required: true, content: { "application/json": { schema: CreateRunBody } } },
  },
  responses: {
    200: {
      description:
        "The run ended; `status` says how (every terminal status is a 200). With `Accept: text/event-stream`: its events as it runs, then `event: run.outcome`.",
      content: {
        "application/json": { schema: RunResponseSchema },
        "text/event-stream": { schema: EventStreamSchema },
      },
      headers: RESPONSE_HEADERS.idempotentReplayed,
    },
    202: {
      description:
        "The run goes on as a durable run; the body is the stored run, `Location` its URL to poll and `Retry-After` (s) when. Two cases: with `Prefer: respond-async` (RFC 7240) the run was started durable (docs/durable-runs.md): `status` running, `Preference-Applied: respond-async`. Without it, a run that reached a tool call needing a person's approval (APPROVAL_RULES, docs/approvals.md) paused and was handed over: `status` awaiting_approval with `pendingApprovals` (or running if the runner had not reached the approval yet), no `Preference-Applied`.",
      content: { "application/json": { schema: RunRecordSchema } },
      headers: RESPONSE_HEADERS.accepted,
    },
    400: problem(
      "INVALID_REQUEST: the body is not valid JSON (or not the base64 or UTF-8 it claims to be), fails the schema, or the Idempotency-Key is malformed (`errors` says where).",
    ),
    404: problem(
      "NOT_FOUND: `previousRunId` names no run of this user (another tenant's or user's run looks the same), or one whose records expired (RUN_TTL_SECONDS; the detail says so, with `expired` and `expiresAt`).",
    ),
    409: problem(
      "IDEMPOTENCY_KEY_IN_USE: a run with this Idempotency-Key is still in progress. PREVIOUS_RUN_IN_PROGRESS: the run `previousRunId` names has not finished. Both with `Retry-After`. PREVIOUS_RUN_NOT_CONTINUABLE: that run ended without a transcript (the server failed mid-run, or it stopped without recording an outcome); no `Retry-After`.",
      RESPONSE_HEADERS.retryAfterWhileInProgress,
    ),
    413: payloadTooLarge,
    415: problem("UNSUPPORTED_MEDIA_TYPE: send application/json."),
    422: problem(
      "IDEMPOTENCY_KEY_REUSED: the Idempotency-Key was used with a different body. CONTEXT_LENGTH_EXCEEDED: the model's context window could not hold the request; `history` and `contextLength` give the sizes, `runId`, `runStatus`, `cycles` and `toolResults` describe the partial run. HANDOVER_TOO_LARGE: the run paused for approval but its state (`inputBytes`) is over a durable execution's input limit (`limitBytes`); the run (`runId`) ended `failed`.",
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
    200: {
      description: "The run.",
      content: { "application/json": { schema: RunRecordSchema } },
      headers: RESPONSE_HEADERS.pollAfter,
    },
    400: problem("INVALID_REQUEST: malformed runId."),
    404: problem("NOT_FOUND: no such run for this caller (another tenant's run is not found either)."),
    ...authErrors,
  },
});

/** `GET /v1/runs`: the caller's own runs, a page at a time (a page may hold fewer than `limit`). */
/**
 * Query of `GET /v1/runs`: whose runs (`scope`, `userId`), which (`status`, `from`/`to` on `startedAt`,
 * a `runId` prefix), and page size and cursor as `GET /v1/invoices`.
 */
export const RunListQuery = z
  .object({
    scope: z
      .enum(["own", "tenant"])
      .default("own")
      .openapi({
        param: { name: "scope", in: "query" },
        description:
          "`own` (default): the caller's runs. `tenant`: every run of the tenant (needs `billing:read`, as seeing another user's run does).",
      }),
    userId: z
      .string()
      .regex(/^[!-~]{1,256}$/)
      .optional()
      .openapi({
        param: { name: "userId", in: "query" },
        description: "Only the runs this user started; another user's need `billing:read`.",
      }),
    status: z
      .union([z.enum(["running", "awaiting_approval", "failed", "cancelled"]), RunStatusSchema])
      .optional()
      .openapi({ param: { name: "status", in: "query" }, description: "Only runs in this status now." }),
    from: z.iso
      .datetime({ offset: true })
      .optional()
      .openapi({
        param: { name: "from", in: "query" },
        description: "Only runs started at or after this instant (ISO 8601, e.g. `2026-05-01T00:00:00Z`).",
      }),
    to: z.iso
      .datetime({ offset: true })
      .optional()
      .openapi({
        param: { name: "to", in: "query" },
        description: "Only runs started before this instant (ISO 8601; must be after `from`).",
      }),
    runId: z
      .string()
      .regex(/^[A-Za-z0-9_-]{1,128}$/)
      .optional()
      .openapi({
        param: { name: "runId", in: "query" },
        description: "Only runs whose id starts with this.",
      }),
    limit: InvoiceListQuery.shape.limit,
    cursor: InvoiceListQuery.shape.cursor,
  })
  .refine((query) => !query.from || !query.to || Date.parse(query.from) < Date.parse(query.to), {
    message: "`to` must be after `from`.",
    path: ["to"],
  });

/** `GET /v1/runs`: the runs the caller may see (its own, or the tenant's with billing:read), newest first. */
export const listRunsRoute = createRoute({
  method: "get",
  path: "/v1/runs",
  summary: "Runs, newest first, a page at a time: the caller's, or the tenant's for billing readers",
  security,
  request: { query: RunListQuery },
  responses: {
    200: {
      description:
        "One page, newest `startedAt` first. A page reads at most 500 runs of the tenant's list, so with filters it may hold fewer than `limit` runs while `nextCursor` is set. The list is eventually consistent on AWS: a run started a moment ago may be missing.",
      content: { "application/json": { schema: RunPageSchema } },
    },
    400: problem("INVALID_REQUEST: bad `limit`, `cursor`, `status`, `from`, `to`, `userId` or `runId`."),
    403: problem("FORBIDDEN: another user's runs, or the tenant's, without `billing:read`."),
    ...authErrors,
  },
});

/** Query of `GET /v1/runs/{runId}/events`: `after`, the sequence to resume after. */
export const RunEventsQuery = z.object({
  after: z.coerce
    .number()
    .int()
    .min(0)
    .max(Number.MAX_SAFE_INTEGER)
    .optional()
    .openapi({
      param: { name: "after", in: "query" },
      description:
        "Resume after this event sequence (as `Last-Event-ID`, which wins when both are sent); 0 or absent: from the first event.",
    }),
});

/** `GET /v1/runs/{runId}/events`: the run's events as Server-Sent Events, then live until it ends. */
export const runEventsRoute = createRoute({
  method: "get",
  path: "/v1/runs/{runId}/events",
  summary: "Watch a run: its events so far, then live until it ends (Server-Sent Events, resumable)",
  security,
  request: { params: RunIdParam, query: RunEventsQuery },
  parameters: [
    {
      name: "Last-Event-ID",
      in: "header",
      required: false,
      description: "The `id` of the last event received: the stream resumes with every later event, once.",
      schema: { type: "string", pattern: "^[0-9]{1,15}$" },
    },
  ],
  responses: {
    200: {
      description:
        "`text/event-stream`: every event after the resume point, then live events; the stream closes after `run.finished`.",
      content: { "text/event-stream": { schema: EventStreamSchema } },
    },
    204: {
      description:
        "The run has ended and the resume point is at or after its final event (`Last-Event-ID` = the last id, as an EventSource resumes when a stream closes): nothing more will come, and an EventSource stops.",
    },
    400: problem("INVALID_REQUEST: malformed runId, `after` or `Last-Event-ID`."),
    404: problem(
      "NOT_FOUND: no such run for this caller (another tenant's or user's run is not found either).",
    ),
    ...authErrors,
  },
});

/** `POST /v1/runs/{runId}/cancel`: stops a running durable run; it ends `cancelled`. */
export const cancelRunRoute = createRoute({
  method: "post",
  path: "/v1/runs/{runId}/cancel",
  summary: "Cancel a running (or approval-awaiting) durable run (its execution is stopped)",
  security,
  request: { params: RunIdParam },
  responses: {
    200: {
      description:
        "The run was stopped; its record now says `cancelled`. Approvals it waited for are withdrawn (`cancelled`).",
      content: { "application/json": { schema: RunRecordSchema } },
    },
    400: problem("INVALID_REQUEST: malformed runId."),
    404: problem("NOT_FOUND: no such run for this caller (another tenant's run is not found either)."),
    409: problem("RUN_NOT_RUNNING: the run has already ended; `runStatus` is its final status."),
    ...authErrors,
  },
});

/** `POST /v1/runs/{runId}/approvals/{approvalId}`: a person approves or rejects a paused call. */
export const decideApprovalRoute = createRoute({
  method: "post",
  path: "/v1/runs/{runId}/approvals/{approvalId}",
  summary: "Approve or reject a call a run waits on (needs billing:approve; not the run's own user)",
  security,
  request: {
    params: ApprovalParams,
    body: { required: true, content: { "application/json": { schema: DecideApprovalBody } } },
  },
  responses: {
    200: {
      description: "The decision was recorded (or the same decision had been: the stored one is returned).",
      content: { "application/json": { schema: ApprovalSchema } },
    },
    400: problem("INVALID_REQUEST: malformed ids or body."),
    403: problem(
      "FORBIDDEN: the caller lacks billing:approve (`requiredPermission`), or started the run (`rule`: four_eyes).",
    ),
    404: problem("NOT_FOUND: the tenant has no such run or approval."),
    409: problem(
      "APPROVAL_DECIDED: the opposite decision was taken first; APPROVAL_EXPIRED: the approval expired; APPROVAL_CANCELLED: its run was cancelled (`approvalStatus`).",
    ),
    413: payloadTooLarge,
    415: problem("UNSUPPORTED_MEDIA_TYPE: send application/json."),
    ...authErrors,
  },
});

/** `GET /v1/approvals`: the tenant's pending or decided approvals, paginated (needs billing:approve). */
export const listApprovalsRoute = createRoute({
  method: "get",
  path: "/v1/approvals",
  summary: "The tenant's pending or decided approvals, a page at a time (needs billing:approve)",
  security,
  request: { query: ApprovalListQuery },
  responses: {
    200: {
      description:
        "One page: with `status=decided`, who decided (`decidedBy`, null for an expired or cancelled approval), when (`decidedAt`) and why (`reason`), beside the backend's `preview`.",
      content: { "application/json": { schema: ApprovalPageSchema } },
    },
    400: problem(
      "INVALID_REQUEST: bad `status` (not `pending` or `decided`), `limit` or `cursor` (also a cursor of the other status); `errors` names the parameter.",
    ),
    403: problem("FORBIDDEN: the caller lacks billing:approve."),
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

// ---------------------------------------------------------------- response types

/** 200 body of `POST /v1/runs`. */
export type RunResponse = z.infer<typeof RunResponseSchema>;
/** 200 body of `GET /v1/runs/{runId}`. */
export type RunRecordResponse = z.infer<typeof RunRecordSchema>;
/** One invoice as `GET /v1/invoices…` return it. */
export type InvoiceResponse = z.infer<typeof InvoiceSchema>;
/** 200 body of `GET /v1/invoices`. */
export type InvoicePageResponse = z.infer<typeof InvoicePageSchema>;
/** One tool result as the API returns it. */
export type ToolResultResponse = z.infer<typeof ToolResultSchema>;
/** An `application/problem+json` body. */
export type Problem = z.infer<typeof ProblemSchema>;
/** One approval as the API returns it. */
export type ApprovalResponse = z.infer<typeof ApprovalSchema>;
/** 200 body of `GET /v1/approvals`. */
export type ApprovalPageResponse = z.infer<typeof ApprovalPageSchema>;

/** True when X and Y are the same type, field for field (optional fields included). */
type Same<X, Y> = (<T>() => T extends X ? 1 : 2) extends <T>() => T extends Y ? 1 : 2 ? true : false;
/** Compiles only when `value` is `true`, i.e. when the {@link Same} check it is given holds. */
const sameShape = <Check extends true>(value: Check): Check => value;
// The domain types the routes return are exactly their schemas' types: a field added to one and not the
// other fails `tsc` here.
sameShape<Same<Invoice, InvoiceResponse>>(true);
sameShape<Same<ToolResult, ToolResultResponse>>(true);
sameShape<
  Same<
    Omit<RunOutcome & Pick<RunRecord<AgentRunShapes>, "previousRunId" | "history">, "messages">,
    RunResponse
  >
>(true);
sameShape<
  Same<
    Omit<
      RunRecord<AgentRunShapes> & {
        steps: RunStep<AgentRunShapes>[];
        pendingApprovals?: Array<
          Pick<
            ApprovalRecord,
            "approvalId" | "toolName" | "arguments" | "preview" | "requestedBy" | "requestedAt" | "expiresAt"
          >
        >;
      },
      never
    >,
    RunRecordResponse
  >
>(true);
sameShape<Same<ApprovalRecord, ApprovalResponse>>(true);
