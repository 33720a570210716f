/**
 * The stored run and its audit step: one zod schema each, the source of their types (./run-records.ts
 * takes `RunRecord<S>` and `RunStep<S>` from them with `z.infer`) and of the HTTP contract's `RunRecord`
 * and `RunStep` (functions/api/contract/runs.ts extends them). No store code here, so the contract imports
 * the schemas without the store.
 *
 * The store does not import the agent layer, so the fields that hold one of the agent's shapes
 * (./run-records.ts `RunShapes`) are given at their bound: a status any string, a grounding check any
 * value, a tool result any object with `data`. These are the schemas of `RunRecord<RunShapes>` and
 * `RunStep<RunShapes>`; the types narrow those fields for a given `S`, and the contract replaces them with
 * the agent's schemas (`.extend` keeps each field where it is, so the documented field order stays).
 */
import * as z from "zod";
import { CostSchema } from "../money/cost.js";
import { TokenUsageSchema } from "../token-usage.js";

/**
 * The statuses a run record has besides the loop's outcomes (see ./run-records.ts `RunRecordStatus`).
 * `abandoned` is never written: it is how a `running` synchronous run more than 30 s past its deadline
 * reads (the application's rule, shared/runs/abandoned.ts, applied by the store's reads).
 */
export const RECORD_STATUSES = [
  "running",
  "awaiting_approval",
  "awaiting_quota",
  "failed",
  "cancelled",
  "abandoned",
] as const;

/** One of {@link RECORD_STATUSES}. */
export const RecordStatusSchema = z.enum(RECORD_STATUSES);

/**
 * What a record keeps of its prompt (./run-records.ts `promptFacts`): its length in UTF-16 code units
 * (`chars`), its SHA-256 (hex), so the audit can prove which prompt ran, and its first
 * PROMPT_EXCERPT_CHARS characters (`excerpt`, 500 by default), shown with the run to whoever may see it;
 * `excerpt` is absent when none is kept (0, or a record written before excerpts were).
 */
export const PromptSummarySchema = z
  .object({ chars: z.number().int(), sha256: z.string(), excerpt: z.string().optional() })
  .strict();

/** What a record keeps of its prompt, see {@link PromptSummarySchema}. */
export type PromptSummary = z.infer<typeof PromptSummarySchema>;

/** The effective caps of a run (the request's clamped to the server's): model calls, and wall time in ms. */
export const RunLimitsSchema = z
  .object({ maxCycles: z.number().int(), timeoutMs: z.number().int() })
  .strict();

/** The effective caps of a run, see {@link RunLimitsSchema}. */
export type RunLimits = z.infer<typeof RunLimitsSchema>;

/**
 * The size of the earlier conversation a run carried: `messages` sent, their `estimatedTokens`
 * (shared/agent/transcript.ts estimate) and `droppedMessages`, the previous transcript's messages left out
 * to stay within HISTORY_MAX_TOKENS and the run's token budget (plus any its run dropped when storing it).
 */
export const HistorySummarySchema = z.object({
  messages: z.number().int().nonnegative(),
  estimatedTokens: z.number().int().nonnegative(),
  droppedMessages: z.number().int().nonnegative(),
});

/** The size of the earlier conversation a run carried, see {@link HistorySummarySchema}. */
export type HistorySummary = z.infer<typeof HistorySummarySchema>;

/**
 * The stored run (one item, sort key `RUN#<runId>`), written at start and updated as cycles complete
 * and when the run ends; timestamps are ISO 8601 UTC.
 * - `status`: see ./run-records.ts `RunRecordStatus` (here at its bound, any string)
 * - `prompt`: see {@link PromptSummarySchema}; `limits`: see {@link RunLimitsSchema}
 * - `cyclesRecorded`: audit steps written so far (how far a killed run got), or, while the run waits
 *   for a decision, the cycle it waits in (its step is written once the turn is decided); `cycles`: the
 *   loop's count once finished, null before
 * - `usage`: tokens summed over the model calls of those cycles while running (the call of the cycle a
 *   run waits in included), the run's total once finished
 * - `durationMs`: the run's wall time in ms once finished, null before
 * - `expiresAt`: when DynamoDB TTL may delete the record (the item's `ttl` in epoch seconds)
 * - `previousRunId`: the run this one continues, null for a new conversation
 * - `history`: the earlier conversation it carried, see {@link HistorySummarySchema}; null without one
 * - `grounding`: the grounding check of its answer (docs/evals.md, "Grounding", the agent's
 *   `AnswerGrounding`; here at its bound, any value); null until it finished with an answer (and for
 *   records written before the check existed)
 * - `conversationId`: the conversation the run belongs to: its first run's id, or the id an A2A context
 *   or an AG-UI thread gave it (docs/protocols.md); a continuation takes its previous run's
 * - `cost`: the sum of the costs of the calls `usage` counts (once finished, of all its calls: "0.000000"
 *   in the price table's currency for a run that ended without one); null while it runs before its
 *   first call, for a run without prices (`costNote` then names the model without a price), and for
 *   records written before costs
 * The transcript a finished run stores for its continuations is an internal attribute of the same item
 * (never part of this shape, never logged), see ./runs.ts `RunStore.readContinuation`.
 */
export const RunRecordSchema = z
  .object({
    runId: z.string(),
    tenantId: z.string(),
    userId: z.string(),
    status: z.string(),
    prompt: PromptSummarySchema,
    limits: RunLimitsSchema,
    startedAt: z.string(),
    updatedAt: z.string(),
    finishedAt: z.string().nullable(),
    cyclesRecorded: z.number().int().nonnegative(),
    cycles: z.number().int().nullable(),
    answer: z.string().nullable(),
    reason: z.string().nullable(),
    usage: TokenUsageSchema,
    durationMs: z.number().int().nullable(),
    expiresAt: z.string(),
    previousRunId: z.string().nullable(),
    history: HistorySummarySchema.nullable(),
    grounding: z.unknown(),
    conversationId: z.string(),
    cost: CostSchema.nullable(),
    costNote: z.string().nullable(),
  })
  .strict();

/**
 * A summary of one cycle's model request, never the prompt text: how many messages were sent, and the
 * names of the tools offered.
 */
export const ModelRequestSummarySchema = z
  .object({ messageCount: z.number().int(), toolsOffered: z.array(z.string()) })
  .strict();

/** A summary of one cycle's model request, see {@link ModelRequestSummarySchema}. */
export type ModelRequestSummary = z.infer<typeof ModelRequestSummarySchema>;

/**
 * One tool call in an audit step: the model's raw arguments (cut to ./run-records.ts
 * `MAX_ARGUMENT_CHARS`, with `argumentsTruncated` saying so) and the backend's tool result (the agent's
 * `ToolResult`: status, data or error, latency, idempotency key; here at its bound, an object with `data`).
 */
export const RunStepToolCallSchema = z
  .object({
    id: z.string(),
    name: z.string(),
    arguments: z.string(),
    argumentsTruncated: z.boolean(),
    result: z.looseObject({ data: z.unknown() }),
  })
  .strict();

/**
 * One audit step: what happened in one cycle (sort key `RUN#<runId>#STEP#<cycle>`).
 * - `cycle`: from 1; `recordedAt`: ISO 8601 UTC
 * - `request`: see {@link ModelRequestSummarySchema}
 * - `modelLatencyMs`: wall time of the model call in ms; `usage`: this cycle's tokens
 * - `cost`: the model call's cost, when it was priced (null: no price for its model); absent on steps
 *   written before costs
 */
export const RunStepSchema = z
  .object({
    cycle: z.number().int().positive(),
    recordedAt: z.string(),
    request: ModelRequestSummarySchema,
    finishReason: z.string().nullable(),
    modelLatencyMs: z.number().nonnegative(),
    usage: TokenUsageSchema,
    toolCalls: z.array(RunStepToolCallSchema),
    cost: CostSchema.nullable().optional(),
  })
  .strict();
