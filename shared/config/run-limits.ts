/**
 * Configuration section: the limits of a run, and the history a continuing run carries.
 * - MAX_CYCLES (default 5): the design card's default cycle cap per run.
 * - RUN_TIMEOUT_MS (default 25000 ms): below the function timeout (FUNCTION_TIMEOUT_SECONDS in
 *   shared/config.ts), so a run ends, and its outcome is written, before the function is stopped.
 * - DEADLINE_RESERVE_MS (default 1500 ms): time kept back from the Lambda's remaining time to persist
 *   the outcome and answer.
 * - MAX_TOTAL_TOKENS (default 100000): a cost guard. A run resends its transcript on every cycle; five
 *   cycles with the 8000-character prompt cap (~2k tokens), the tool schemas and a few tool results at
 *   the 16 KB cap stay well below it, so reaching it means a runaway run.
 * - MAX_TOOL_CALLS_PER_TURN (default 8): the seed scenario asks for 2 per turn; a turn asking for more
 *   than 8 is treated as runaway, the excess calls get a validation_error and do not run.
 * - MAX_TOOL_CALLS_PER_RUN (default 20): MAX_CYCLES' default (5) × 4 calls per cycle.
 * - MAX_PARALLEL_TOOL_CALLS (default 4): the tools are I/O-bound (DynamoDB); 4 keeps a typical turn
 *   fully parallel without bursting the table's write capacity from one run.
 * - MAX_TOOL_RESULT_BYTES (default 16384): cap on one tool message (UTF-8 bytes); a bigger result is
 *   cut (shared/agent/result.ts capToolResult) so one result cannot flood the model's context.
 * - LOOP_BREAKER_THRESHOLD (default 2): N, the count of identical failures (same tool, canonical
 *   arguments, error code) at which the N-th gets a final hint; the next ends the run loop_detected.
 * - SUMMARIZE_ON_MAX_CYCLES (default false): off, so a run never makes more than MAX_CYCLES model calls
 *   unless the operator opts in to one last tool-less summary call.
 * - HISTORY_MAX_TOKENS (default 8000, estimated tokens; 0 to 1000000): cap
 *   on the earlier conversation a run continuing `previousRunId` sends (shared/agent/transcript.ts
 *   estimates without a tokenizer and drops the oldest whole turns). A follow-up such as "now record it"
 *   needs the last exchange (well under 2000 tokens with a few tool results); 8000 keeps several. The
 *   history is resent on every cycle, so at the default 5 cycles it can take 40% of MAX_TOTAL_TOKENS'
 *   default; a run also never gets more history than MAX_TOTAL_TOKENS leaves after its own prompt
 *   (see docs/conversations.md). 0 turns history off: a continuation starts from the new prompt alone.
 */
import type { RunLimits } from "../agent/run-limits.js";
import { envBoolean, envInt, positiveInt } from "./env.js";
import { configSection, type SectionDocs } from "./section.js";

/** The run limits section's variables, see the module comment. */
export const runLimitsFields = {
  MAX_CYCLES: positiveInt(5, 50),
  RUN_TIMEOUT_MS: positiveInt(25_000, 900_000),
  DEADLINE_RESERVE_MS: envInt(1_500, 0, 60_000),
  MAX_TOTAL_TOKENS: positiveInt(100_000, 10_000_000),
  MAX_TOOL_CALLS_PER_TURN: positiveInt(8, 128),
  MAX_TOOL_CALLS_PER_RUN: positiveInt(20, 1_000),
  MAX_PARALLEL_TOOL_CALLS: positiveInt(4, 64),
  MAX_TOOL_RESULT_BYTES: positiveInt(16_384, 1_048_576),
  LOOP_BREAKER_THRESHOLD: positiveInt(2, 20),
  SUMMARIZE_ON_MAX_CYCLES: envBoolean(false),
  HISTORY_MAX_TOKENS: envInt(8_000, 0, 1_000_000),
};

/**
 * The run limits section:
 * - `limits`: the server's caps for a run ({@link RunLimits}: a request may lower them through
 *   `clampRunLimits`, never raise them), plus `deadlineReserveMs` (ms kept back for persisting the outcome);
 * - `history`: `maxTokens`, the estimated-token cap on the conversation a continuing run carries.
 */
export const runLimitsSection = configSection({
  fields: runLimitsFields,
  config: (env): { limits: RunLimits & { deadlineReserveMs: number }; history: { maxTokens: number } } => ({
    limits: {
      maxCycles: env.MAX_CYCLES,
      runTimeoutMs: env.RUN_TIMEOUT_MS,
      deadlineReserveMs: env.DEADLINE_RESERVE_MS,
      maxTotalTokens: env.MAX_TOTAL_TOKENS,
      maxToolCallsPerTurn: env.MAX_TOOL_CALLS_PER_TURN,
      maxToolCallsPerRun: env.MAX_TOOL_CALLS_PER_RUN,
      maxConcurrentToolCalls: env.MAX_PARALLEL_TOOL_CALLS,
      maxToolResultBytes: env.MAX_TOOL_RESULT_BYTES,
      loopBreakerThreshold: env.LOOP_BREAKER_THRESHOLD,
      summarizeOnMaxCycles: env.SUMMARIZE_ON_MAX_CYCLES,
    },
    history: { maxTokens: env.HISTORY_MAX_TOKENS },
  }),
});

/** The prose of the run limits section's variables (docs/configuration.md). */
export const runLimitsDocs: SectionDocs<typeof runLimitsFields> = {
  MAX_CYCLES: {
    group: "Limits of a run",
    unit: "model calls",
    description:
      "Cap on model calls per run; past it the run ends `max_cycles_exceeded`. A request's `maxCycles` can lower it, never raise it.",
  },
  RUN_TIMEOUT_MS: {
    group: "Limits of a run",
    unit: "ms",
    description:
      "Cap on a run's wall time; the default (25 s) stays below the function's 29 s timeout, itself below API Gateway HTTP API's 30 s maximum integration timeout. A request's `timeoutMs` can lower it, never raise it.",
  },
  DEADLINE_RESERVE_MS: {
    group: "Limits of a run",
    unit: "ms",
    description:
      "Time kept back from the Lambda's remaining time to persist the outcome and answer: the run's deadline is the smaller of `RUN_TIMEOUT_MS` and remaining time minus this. Deploy setting `deadlineReserveMs`, which must leave some of the API function's 29 s timeout (checked at synth), or every synchronous run would end `deadline_exceeded` before its first model call.",
  },
  MAX_TOTAL_TOKENS: {
    group: "Limits of a run",
    unit: "tokens",
    description:
      "Cost guard: prompt + completion tokens per run; past it the run ends `budget_exceeded`. Five cycles with the 8000-character prompt cap, the tool schemas and a few 16 KB tool results stay well below it, so reaching it means a runaway run.",
  },
  MAX_TOOL_CALLS_PER_TURN: {
    group: "Limits of a run",
    unit: "tool calls",
    description:
      "Tool calls run from one model response; the rest get validation_error `TOO_MANY_TOOL_CALLS` and do not run. The seed scenario asks for 2 per turn.",
  },
  MAX_TOOL_CALLS_PER_RUN: {
    group: "Limits of a run",
    unit: "tool calls",
    description:
      "Tool calls per run; past it the run ends `budget_exceeded`. Default: `MAX_CYCLES`' default × 4.",
  },
  MAX_PARALLEL_TOOL_CALLS: {
    group: "Limits of a run",
    unit: "tool calls",
    description:
      "Tool calls running at once within a turn (their tool messages still follow call order). The tools are I/O-bound; 4 keeps a typical turn parallel without bursting the table's write capacity from one run.",
  },
  MAX_TOOL_RESULT_BYTES: {
    group: "Limits of a run",
    unit: "bytes",
    description:
      "Size cap of one tool message (UTF-8 bytes); a larger one is cut with a `[truncated by boundloop: …]` marker and `metadata.truncated`.",
  },
  LOOP_BREAKER_THRESHOLD: {
    group: "Limits of a run",
    unit: "failures",
    description:
      "Identical failures (same tool, canonical arguments, error code) before the final hint to the model; the next identical one ends the run `loop_detected`.",
  },
  SUMMARIZE_ON_MAX_CYCLES: {
    group: "Limits of a run",
    description:
      "At the cycle limit, make one last tool-less model call to summarize. Off by default, so a run never makes more than `MAX_CYCLES` model calls unless the operator opts in.",
  },
  HISTORY_MAX_TOKENS: {
    group: "Limits of a run",
    unit: "tokens",
    description:
      "Cap on the earlier conversation a run continuing `previousRunId` carries, estimated without a tokenizer (3 UTF-8 bytes a token, 4 a message); the oldest whole turns go first. 0 turns history off. See [conversations](conversations.md).",
  },
};
