import * as z from "zod";

/**
 * The bounds of one run. The server's caps come from `shared/config.ts` (`Config.limits`, one env
 * variable each); a request may lower any of them through {@link clampRunLimits}, never raise one.
 * - `maxCycles`: model calls per run (one cycle = one model call and the tool calls it asked for)
 * - `runTimeoutMs`: wall-time cap of a run in ms (the deadline is the smaller of this and the Lambda's
 *   remaining time minus a reserve, see `Deadline.budgetMs`)
 * - `maxTotalTokens`: total tokens (prompt + completion, from the provider's `usage`) over all model calls
 * - `maxToolCallsPerTurn`: tool calls run from one assistant message; the rest get a validation_error
 * - `maxToolCallsPerRun`: tool calls run over the whole run; past it the run ends `budget_exceeded`
 * - `maxConcurrentToolCalls`: tool calls of one turn running at the same time
 * - `maxToolResultBytes`: UTF-8 bytes of one tool message; larger results are truncated with a marker
 * - `loopBreakerThreshold`: identical failures (same tool, canonical arguments, error code) after which
 *   the model gets a final hint; the next identical failure ends the run `loop_detected`
 * - `summarizeOnMaxCycles`: at the cycle limit, make one more model call with tool_choice "none" so the
 *   model can summarize (only if the deadline and token budget allow)
 */
export const RunLimitsSchema = z.object({
  maxCycles: z.number().int().positive(),
  runTimeoutMs: z.number().int().positive(),
  maxTotalTokens: z.number().int().positive(),
  maxToolCallsPerTurn: z.number().int().positive(),
  maxToolCallsPerRun: z.number().int().positive(),
  maxConcurrentToolCalls: z.number().int().positive(),
  maxToolResultBytes: z.number().int().positive(),
  loopBreakerThreshold: z.number().int().positive(),
  summarizeOnMaxCycles: z.boolean(),
});
/** See {@link RunLimitsSchema}. */
export type RunLimits = z.infer<typeof RunLimitsSchema>;

/** What a request may ask for: any subset of {@link RunLimits}; each value can only lower the cap. */
export type RequestedRunLimits = Partial<RunLimits>;

/**
 * The limits a run gets: each requested value if it is lower than the server's cap, else the cap.
 * A request may lower a limit, never raise it (`summarizeOnMaxCycles` may be turned off, not on).
 * Pure: neither argument is changed.
 * @param caps the server's caps (`config.limits`)
 * @param requested the request's wishes; undefined entries keep the cap
 * @throws RangeError when a requested number is not a positive integer (validate requests first; this
 *   is a programming error, never silently ignored)
 * @example clampRunLimits(config.limits, { maxCycles: 3, runTimeoutMs: 60_000 }) // maxCycles 3, runTimeoutMs = cap
 */
export function clampRunLimits(caps: RunLimits, requested: RequestedRunLimits = {}): RunLimits {
  const limits: RunLimits = { ...caps };
  for (const key of Object.keys(caps) as Array<keyof RunLimits>) {
    const wish = requested[key];
    if (wish === undefined) continue;
    if (typeof wish === "boolean") {
      (limits as unknown as Record<string, boolean>)[key] = Boolean(caps[key]) && wish;
      continue;
    }
    if (!Number.isSafeInteger(wish) || wish <= 0) {
      throw new RangeError(`Requested limit ${key} must be a positive integer, got ${String(wish)}.`);
    }
    (limits as unknown as Record<string, number>)[key] = Math.min(caps[key] as number, wish);
  }
  return limits;
}
