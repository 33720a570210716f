/**
 * Error bodies: the RFC 9457 problem every function error is, API Gateway's own answers, and the error
 * responses every `/v1` route declares.
 */

import { z } from "@hono/zod-openapi";
import { HistorySummarySchema as StoredHistorySummarySchema } from "../../../shared/store/run-record-schema.js";
import { PROBLEM_STATUS, type ProblemCode } from "../problem-details.js";
import { RESPONSE_HEADERS } from "./common.js";
import { RateLimitedExtensions } from "./quotas.js";
import { ContextLengthSchema, RunStatusSchema, ToolResultSchema, UsageSchema } from "./run-results.js";

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
      .union([z.enum(["failed", "cancelled", "abandoned"]), RunStatusSchema])
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
    // The store's schema, not the named component: describing the component's reference here would
    // replace the component's own description in the document.
    history: StoredHistorySummarySchema.nullable().optional().openapi({
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
    ...RateLimitedExtensions,
  })
  .strict()
  .openapi("Problem", { description: "RFC 9457 problem details; extension members depend on `code`." });

/** What API Gateway's JWT authorizer answers before the function runs (missing or invalid token). */
export const GatewayErrorSchema = z
  .object({ message: z.string().openapi({ example: "Unauthorized" }) })
  .strict()
  .openapi("GatewayError", { description: "An answer of API Gateway itself, not of the function." });

const problemContent = { "application/problem+json": { schema: ProblemSchema } };
/** A problem+json response of a route, with its description and optional headers. */
export const problem = (description: string, headers?: z.ZodObject) => ({
  description,
  content: problemContent,
  ...(headers ? { headers } : {}),
});

/**
 * The 413 of a route that takes a body: the function's problem+json over MAX_BODY_BYTES, or API Gateway's
 * own answer to a body over its 10 MB payload quota, which never reaches the function
 * (`{"message":"Request Entity Too Large"}`, application/json).
 */
export const payloadTooLarge = {
  description:
    'PAYLOAD_TOO_LARGE: the body is over MAX_BODY_BYTES (problem+json from the function). A body over API Gateway\'s 10 MB quota is refused by the gateway before the function: `{"message":"Request Entity Too Large"}` (application/json, not problem+json).',
  content: { ...problemContent, "application/json": { schema: GatewayErrorSchema } },
};

/** The responses every `/v1` route may give before or beside its own: 401, 500, 503. */
export const authErrors = {
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

/** An `application/problem+json` body. */
export type Problem = z.infer<typeof ProblemSchema>;
