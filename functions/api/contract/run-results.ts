/**
 * The shapes of what a run produces, as the API returns them: its status, token usage, tool results,
 * why it stopped, and the history it carried. Used by the run routes and by problem bodies that describe
 * a partial run.
 */

import { z } from "@hono/zod-openapi";
import {
  PolicyAuditSchema as BasePolicyAuditSchema,
  RunningTotalSchema as BaseRunningTotalSchema,
  ToolResultSchema as BaseToolResultSchema,
} from "../../../shared/agent/result-schema.js";
import { RunStatusSchema as BaseRunStatusSchema, RUN_STATUSES } from "../../../shared/agent/run-status.js";
import { TokenUsageSchema } from "../../../shared/token-usage.js";
import { QuotaRefusalSchema } from "./quotas.js";

/** Every run status the API can report: the loop's, one list (shared/agent/run-status.ts). */
export { RUN_STATUSES };

/** Token usage of a run or cycle (`RunUsage`). */
export const UsageSchema = TokenUsageSchema.strict().openapi("Usage", {
  description: "Token usage summed over the run's model calls.",
});

/**
 * One running total of a policy decision, as the component `RunningTotal`. Each schema below is the
 * engine's one schema (shared/agent/result-schema.ts); `.strict()` and `.extend` make instances built
 * after @hono/zod-openapi extended zod, so they can be named components.
 */
const RunningTotalSchema = BaseRunningTotalSchema.strict().openapi("RunningTotal");

/** A decision's explanation (`PolicyAuditSchema`), its totals referring to the component `RunningTotal`. */
export const PolicyAuditSchema = BasePolicyAuditSchema.extend({
  totals: z
    .record(z.string(), RunningTotalSchema)
    .optional()
    .describe(BasePolicyAuditSchema.shape.totals.description ?? ""),
}).openapi("PolicyDecision", {
  description: "Why the tenant's policies let a call run, or not (docs/policies.md).",
});

/** One tool result (`ToolResultSchema`): status, data or error, metadata; its policy the component `PolicyDecision`. */
export const ToolResultSchema = BaseToolResultSchema.extend({
  metadata: BaseToolResultSchema.shape.metadata.extend({
    policy: PolicyAuditSchema.optional().describe(
      BaseToolResultSchema.shape.metadata.shape.policy.description ?? "",
    ),
  }),
}).openapi("ToolResult", { description: "The envelope of one tool call, success or not." });

/** A terminal run status, see {@link RUN_STATUSES}. */
export const RunStatusSchema = BaseRunStatusSchema.openapi("RunStatus");

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
    quota: QuotaRefusalSchema.optional(),
  })
  .strict()
  .openapi("RunDetails", {
    description:
      "Machine-readable facts about why the run stopped; only the entry for its status is set, plus `effects` when the run did something before it stopped.",
  });

/** One number of an answer that no tool result or prompt gave: as written, and its value read. */
const UngroundedNumberSchema = z.object({ text: z.string(), value: z.string() }).strict();

/** An answer's grounding check (`AnswerGrounding` in shared/agent/grounding.ts); null without an answer. */
export const GroundingSchema = z
  .object({
    mode: z.enum(["report", "reask", "refuse"]).openapi({ description: "ANSWER_GROUNDING in force." }),
    checked: z.number().int().nonnegative().openapi({ description: "Numbers the answer holds." }),
    ungrounded: z
      .array(UngroundedNumberSchema)
      .openapi({ description: "Numbers of the answer no tool result or prompt gave: as written, and read." }),
    action: z.enum(["none", "reported", "reasked", "refused"]),
    firstUngrounded: z
      .array(UngroundedNumberSchema)
      .optional()
      .openapi({ description: "reasked only: the first answer's ungrounded numbers." }),
  })
  .strict()
  .nullable()
  .openapi("Grounding", {
    description:
      "The check of the answer's numbers against the run's tool results and prompts (docs/evals.md, Grounding); null when the model gave no answer.",
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
