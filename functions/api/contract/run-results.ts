/**
 * The shapes of what a run produces, as the API returns them: its status, token usage, tool results,
 * why it stopped, and the history it carried. Used by the run routes and by problem bodies that describe
 * a partial run.
 */

import { z } from "@hono/zod-openapi";
import {
  AnswerGroundingSchema,
  ContextLengthSchema as BaseContextLengthSchema,
  RunOutcomeDetailsSchema,
} from "../../../shared/agent/outcome-schema.js";
import {
  PolicyAuditSchema as BasePolicyAuditSchema,
  RunningTotalSchema as BaseRunningTotalSchema,
  ToolResultSchema as BaseToolResultSchema,
} from "../../../shared/agent/result-schema.js";
import { RUN_STATUSES } from "../../../shared/agent/run-status.js";
import { HistorySummarySchema as StoredHistorySummarySchema } from "../../../shared/store/run-record-schema.js";
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

/**
 * A terminal run status, see {@link RUN_STATUSES}. Made here with the extended zod rather than by
 * `.openapi()` on shared/agent/run-status.ts's schema: only a schema made after @hono/zod-openapi
 * extended zod has `.openapi`, and a process that loads that module first (`npm run eval` reads
 * scenarios before it loads the app) would otherwise fail here.
 */
export const RunStatusSchema = z.enum(RUN_STATUSES).openapi("RunStatus");

/** A context-window refusal: the engine's schema (shared/agent/outcome-schema.ts), as a component. */
export const ContextLengthSchema = BaseContextLengthSchema.strict().openapi("ContextLength", {
  description:
    "context_length_exceeded: the provider's HTTP status and message, the history's and the whole request's size in messages and estimated tokens, and the context window and request size where the provider stated them (else null).",
});

/** Why a run stopped: the engine's schema (shared/agent/outcome-schema.ts), its parts as components. */
export const RunDetailsSchema = RunOutcomeDetailsSchema.extend({
  contextLength: ContextLengthSchema.optional(),
  quota: QuotaRefusalSchema.optional(),
}).openapi("RunDetails", {
  description:
    "Machine-readable facts about why the run stopped; only the entry for its status is set, plus `effects` when the run did something before it stopped.",
});

export const GroundingSchema = AnswerGroundingSchema.strict().nullable().openapi("Grounding", {
  description:
    "The check of the answer's numbers against the run's tool results and prompts (docs/evals.md, Grounding); null when the model gave no answer.",
});

/**
 * The earlier conversation a run carried: the store's one schema (shared/store/run-record-schema.ts
 * `HistorySummarySchema`); null without one.
 */
export const HistorySummarySchema = StoredHistorySummarySchema.nullable().openapi("HistorySummary", {
  description:
    "The earlier conversation sent with the run (previousRunId): messages, their estimated tokens, and the messages left out to stay within HISTORY_MAX_TOKENS. Null for a new conversation.",
});
