/**
 * How a run ended, one schema for every layer: the loop's outcomes, the run store's records, the HTTP
 * contract's `RunStatus` and the eval scenarios' expectations all take it from here.
 */
import * as z from "zod";

/**
 * Every status a run ends in (each a typed outcome, none an exception), in the order the API documents
 * them.
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
  "answer_ungrounded",
  "quota_exceeded",
] as const;

/** A run's terminal status, see {@link RUN_STATUSES}. */
export const RunStatusSchema = z.enum(RUN_STATUSES);

/** How a run ended, see {@link RUN_STATUSES}. */
export type RunStatus = z.infer<typeof RunStatusSchema>;
