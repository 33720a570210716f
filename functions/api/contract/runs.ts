/** The HTTP contract of runs: starting one, reading one, listing them, cancelling one (docs/http-api.md). */

import { createRoute, z } from "@hono/zod-openapi";
import { RunOutcomeBodySchema } from "../../../shared/agent/outcome-schema.js";
import { PROMPT_MAX_CHARS, RUN_ID_PATTERN } from "../../../shared/runs/run-request.js";
import {
  RecordStatusSchema,
  RunRecordSchema as StoredRunSchema,
  RunStepSchema as StoredStepSchema,
  RunStepToolCallSchema as StoredToolCallSchema,
} from "../../../shared/store/run-record-schema.js";
import { PendingApprovalSchema } from "./approvals.js";
import {
  EventStreamSchema,
  IDEMPOTENCY_KEY_HEADER,
  MAX_IDEMPOTENCY_KEY_LENGTH,
  RESPONSE_HEADERS,
  requiredField,
  security,
} from "./common.js";
import { authErrors, payloadTooLarge, problem } from "./problems.js";
import { CostSchema, RateLimitHeaders, RunCostFields } from "./quotas.js";
import {
  GroundingSchema,
  HistorySummarySchema,
  RunDetailsSchema,
  RunStatusSchema,
  ToolResultSchema,
  UsageSchema,
} from "./run-results.js";

/** A run id as the API issues it (`run_` and a UUID) or accepts it in a path or body. */
export const RunId = z.string().regex(RUN_ID_PATTERN);

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
    // null is accepted as absent: every run record shows `previousRunId: null` for a new conversation,
    // so a client that sends the field back must not get a 400. Normalized here, at the edge: the runs
    // layer (RunBody) and the Idempotency-Key fingerprint see `undefined`, never null.
    previousRunId: RunId.nullish()
      .transform((id) => id ?? undefined)
      .openapi({
        description:
          "Continue the conversation of this earlier run of the same user: the run starts from its transcript (cut to HISTORY_MAX_TOKENS), then this prompt. Absent or null starts a new conversation (the value a new run's record shows). See docs/conversations.md.",
        example: "run_0b6f0e53-8f0c-4a6e-9f33-3c1f0d6b5e21",
      }),
  })
  .strict()
  .openapi("CreateRunRequest");

/**
 * 200 body of `POST /v1/runs`: the run outcome without its transcript, the engine's one schema
 * (shared/agent/outcome-schema.ts) with its parts as named components, and the conversation it continued.
 */
export const RunResponseSchema = RunOutcomeBodySchema.extend({
  status: RunStatusSchema,
  toolResults: z.array(ToolResultSchema),
  usage: UsageSchema,
  details: RunDetailsSchema,
  grounding: GroundingSchema,
  previousRunId: z.string().nullable().openapi({ description: "The run this one continues, or null." }),
  history: HistorySummarySchema,
  cost: RunCostFields.cost.optional(),
  costNote: RunCostFields.costNote.optional(),
}).openapi("RunResponse", { description: "The run's terminal outcome (every terminal status is a 200)." });

/**
 * One audit step: the store's one schema (shared/store/run-record-schema.ts `RunStepSchema`), its tool
 * results the engine's `ToolResult`, its usage the component `Usage`, and descriptions for the document.
 */
export const RunStepSchema = StoredStepSchema.extend({
  request: StoredStepSchema.shape.request.openapi({
    description: "A summary of the model request; never the prompt text.",
  }),
  usage: UsageSchema,
  toolCalls: z.array(
    StoredToolCallSchema.extend({
      arguments: StoredToolCallSchema.shape.arguments.openapi({
        description: "The model's raw arguments (cut at 8192 characters).",
      }),
      result: ToolResultSchema,
    }),
  ),
  cost: CostSchema.nullable()
    .optional()
    .openapi({ description: "The model call's cost; null when its model has no price." }),
}).openapi("RunStep", { description: "The audit record of one cycle." });

/**
 * 200 body of `GET /v1/runs/{runId}`: the store's one schema of a run record
 * (shared/store/run-record-schema.ts `RunRecordSchema`) with its status and grounding check the agent's,
 * its parts as named components, plus its steps in cycle order and its pending approvals.
 */
export const RunRecordSchema = StoredRunSchema.extend({
  status: z.union([RecordStatusSchema, RunStatusSchema]),
  prompt: StoredRunSchema.shape.prompt.extend({
    excerpt: StoredRunSchema.shape.prompt.shape.excerpt.openapi({
      description:
        "The prompt's first PROMPT_EXCERPT_CHARS characters (500 by default; all of it when shorter), shown to whoever may see the run. Absent when the deployment keeps none (0), and on records written before excerpts were kept.",
    }),
  }),
  usage: UsageSchema,
  previousRunId: StoredRunSchema.shape.previousRunId.openapi({
    description: "The run this one continues, or null.",
  }),
  history: HistorySummarySchema,
  grounding: GroundingSchema,
  conversationId: StoredRunSchema.shape.conversationId.openapi({
    description:
      "The conversation the run belongs to: its first run's id, or the A2A context or AG-UI thread that started it (docs/protocols.md); a continuation keeps its previous run's.",
  }),
  ...RunCostFields,
  steps: z.array(RunStepSchema),
  pendingApprovals: z.array(PendingApprovalSchema).optional().openapi({
    description: "The run's approvals still waiting for a decision (GET, and a paused run's 202).",
  }),
}).openapi("RunRecord", {
  description:
    "A stored run and its audit steps; `running` until the outcome is written, `cancelled` once a durable run was stopped, `abandoned` (a fixed `reason`) once it is still unfinished 30 s past the end of what runs it (a synchronous run's deadline, a durable run's execution timeout): it will never write an outcome (docs/reliability.md).",
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
    "no list, one header; not beginning with `a2a:`, `agui:` or `mcp:` (the key scopes of A2A, AG-UI and " +
    "MCP, whose tool calls such a key would replay). Anything else is 400 INVALID_REQUEST naming the header, and nothing is written. " +
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
      "IDEMPOTENCY_KEY_IN_USE: a run with this Idempotency-Key is still in progress. PREVIOUS_RUN_IN_PROGRESS: the run `previousRunId` names has not finished. Both with `Retry-After`. PREVIOUS_RUN_NOT_CONTINUABLE: that run ended without a transcript (the server failed mid-run, it was cancelled, or it stopped without recording an outcome); no `Retry-After`.",
      RESPONSE_HEADERS.retryAfterWhileInProgress,
    ),
    413: payloadTooLarge,
    415: problem("UNSUPPORTED_MEDIA_TYPE: send application/json."),
    422: problem(
      "IDEMPOTENCY_KEY_REUSED: the Idempotency-Key was used with a different body. CONTEXT_LENGTH_EXCEEDED: the model's context window could not hold the request; `history` and `contextLength` give the sizes, `runId`, `runStatus`, `cycles` and `toolResults` describe the partial run. HANDOVER_TOO_LARGE: the run paused for approval but its state (`inputBytes`) is over a durable execution's input limit (`limitBytes`); the run (`runId`) ended `failed`.",
    ),
    429: problem(
      "RATE_LIMITED: a limit on runs started per minute (the user's or the tenant's) or on the tenant's runs in flight is reached; nothing was started or written (docs/quotas.md). `policy` names it; `Retry-After` says when one more is admitted.",
      RateLimitHeaders,
    ),
    502: problem(
      "MODEL_UNAVAILABLE: the model provider kept failing after retries; `runId`, `runStatus`, `cycles` and `toolResults` describe the partial run.",
    ),
    ...authErrors,
    503: problem(
      "STORE_UNAVAILABLE: DynamoDB could not be reached or is throttling. QUOTA_UNAVAILABLE: the quota could not be checked, so nothing was started (fail closed). Retry after `Retry-After` seconds.",
      RESPONSE_HEADERS.retryAfter,
    ),
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
    // The route takes no body, but every /v1 request passes the body limit first.
    413: payloadTooLarge,
    ...authErrors,
  },
});

/** 200 body of `POST /v1/runs`. */
export type RunResponse = z.infer<typeof RunResponseSchema>;
/** 200 body of `GET /v1/runs/{runId}`. */
export type RunRecordResponse = z.infer<typeof RunRecordSchema>;
