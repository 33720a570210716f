/**
 * A run's outcome as the API shows it: one zod schema per part, the source of the engine's types
 * (shared/agent/types.ts, budget.ts, context-length.ts and grounding.ts take them with `z.infer`,
 * type-only) and of the HTTP contract's `RunResponse`, `RunDetails`, `ContextLength`, `QuotaRefusal`
 * and `Grounding` (functions/api/contract/ names them as components). A cost is shared/money/cost.ts's.
 */
import * as z from "zod";
import { CostSchema } from "../money/cost.js";
import { TokenUsageSchema } from "../token-usage.js";
import { GROUNDING_MODES } from "./grounding-mode.js";
import { ToolResultSchema } from "./result-schema.js";
import { RunStatusSchema } from "./run-status.js";

/**
 * Why a model call could not be covered by the quotas (docs/quotas.md): `code` QUOTA_EXCEEDED (a limit)
 * or QUOTA_UNAVAILABLE (the quota store failed: fail closed); the limit's name (`user.tokensPerDay`, …),
 * its value (`quota`) and where the total stood with the holds in flight (`used`), both in `unit`
 * (`tokens`, or the price table's currency, decimal strings); `windowEndsAt`: ISO 8601 UTC end of the
 * window (the UTC day), `retryAfterSeconds` until then; `message`: a fixed sentence for people.
 */
export const QuotaRefusalSchema = z
  .object({
    code: z.enum(["QUOTA_EXCEEDED", "QUOTA_UNAVAILABLE"]),
    limit: z.string().nullable(),
    quota: z.union([z.number(), z.string()]).nullable(),
    used: z.union([z.number(), z.string()]).nullable(),
    unit: z.string().nullable().describe("`tokens`, or the price table's currency."),
    windowEndsAt: z.string().nullable(),
    retryAfterSeconds: z.number().int().nullable(),
    message: z.string(),
  })
  .strict();

/**
 * What a run that ended `context_length_exceeded` reports: the refusal's HTTP status (null without one)
 * and message, the earlier conversation's and the whole refused request's size in messages and
 * estimated tokens, and the window and request size as the provider stated them (null when it did not).
 */
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
  .strict();

/**
 * A side effect a run had before it stopped without completing: a successful call of a mutating tool;
 * `summary` is the tool's sentence from its backend result, never model text.
 */
export const RunEffectSchema = z
  .object({
    toolName: z.string(),
    toolCallId: z.string(),
    summary: z
      .string()
      .describe("The tool's sentence from its backend result, e.g. the invoice it recorded."),
  })
  .strict();

/** Why a run stopped, for the status that stopped it (see shared/agent/types.ts `RunOutcomeDetails`). */
export const RunOutcomeDetailsSchema = z
  .object({
    effects: z
      .array(RunEffectSchema)
      .optional()
      .describe(
        "Any status but completed: the successful calls of mutating tools before the run stopped (what was done), in call order; `reason` ends with the same sentences.",
      ),
    budget: z
      .object({
        name: z.enum(["maxTotalTokens", "maxToolCallsPerRun"]),
        limit: z.number().int(),
        used: z.number().int(),
      })
      .strict()
      .optional()
      .describe("budget_exceeded: the budget that ran out, its limit and the amount used."),
    permission: z
      .object({ toolName: z.string(), requiredPermission: z.string() })
      .strict()
      .optional()
      .describe("permission_denied: the tool and the permission the caller lacks."),
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
      .describe(
        "loop_detected: the repeated tool, its canonical arguments, the error code, its failures, and whether the model was given a final hint.",
      ),
    modelError: z
      .object({
        status: z.number().int().nullable(),
        message: z.string(),
        finishReason: z
          .string()
          .nullable()
          .optional()
          .describe(
            "Set when the model twice sent a reply with neither text nor tool calls: the provider's finish_reason of the last one (null when it sent none).",
          ),
        code: z
          .string()
          .optional()
          .describe(
            "A stable code of the provider's failure when the adapter knows it (Amazon Bedrock: MODEL_THROTTLED, MODEL_ACCESS_DENIED, MODEL_NOT_PERMITTED, MODEL_AUTH_FAILED, MODEL_NOT_FOUND, MODEL_REQUEST_INVALID, MODEL_SERVICE_ERROR, MODEL_KEY_UNAVAILABLE); `message` is then a fixed sentence.",
          ),
      })
      .strict()
      .optional()
      .describe("model_error: the provider's HTTP status (null without a response) and message."),
    deadline: z
      .object({
        phase: z.enum(["before_model_call", "model_call", "tool_calls"]),
        deadlineAt: z.number().describe("Epoch ms."),
      })
      .strict()
      .optional()
      .describe("deadline_exceeded: the phase the deadline hit, and the deadline."),
    finishReason: z.string().optional().describe('model_output_truncated: "length" or "content_filter".'),
    summarized: z
      .boolean()
      .optional()
      .describe("max_cycles_exceeded: whether a tool-less summary call produced `answer`."),
    contextLength: ContextLengthSchema.optional(),
    quota: QuotaRefusalSchema.optional(),
  })
  .strict();

/** One number of an answer that no tool result or prompt gave: as written, and its value read. */
export const UngroundedNumberSchema = z.object({ text: z.string(), value: z.string() }).strict();

/**
 * The grounding check of a run's answer (shared/agent/grounding.ts): the ANSWER_GROUNDING in force, how
 * many numbers the answer holds, those no tool result or prompt holds, what was done (`reasked`: the
 * model answered again, `firstUngrounded` is its first answer's), `refused` (the answer was withheld).
 */
export const AnswerGroundingSchema = z
  .object({
    mode: z.enum(GROUNDING_MODES).describe("ANSWER_GROUNDING in force."),
    checked: z.number().int().nonnegative().describe("Numbers the answer holds."),
    ungrounded: z
      .array(UngroundedNumberSchema)
      .describe("Numbers of the answer no tool result or prompt gave: as written, and read."),
    action: z.enum(["none", "reported", "reasked", "refused"]),
    firstUngrounded: z
      .array(UngroundedNumberSchema)
      .optional()
      .describe("reasked only: the first answer's ungrounded numbers."),
  })
  .strict();

/**
 * A run's typed outcome without its transcript (the engine's `RunOutcome` adds `messages`), see
 * shared/agent/types.ts for each member.
 */
export const RunOutcomeBodySchema = z
  .object({
    runId: z.string(),
    status: RunStatusSchema,
    answer: z.string().nullable(),
    reason: z.string().nullable(),
    cycles: z.number().int().nonnegative(),
    toolResults: z.array(ToolResultSchema),
    usage: TokenUsageSchema,
    durationMs: z.number().int().nonnegative(),
    modelErrorStatus: z
      .number()
      .int()
      .nullable()
      .describe("model_error only: the provider's HTTP status; null otherwise."),
    details: RunOutcomeDetailsSchema,
    grounding: AnswerGroundingSchema.nullable(),
    cost: CostSchema.nullable().optional(),
    costNote: z.string().nullable().optional(),
  })
  .strict();
