/**
 * Configuration section: durable runs (docs/durable-runs.md).
 * - ASYNC_RUN_TIMEOUT_MS (default 600000 ms = 10 min): wall-time cap of a durable run (`Prefer:
 *   respond-async`), the default. Its deadline is absolute, fixed when the run starts, and capped by
 *   DURABLE_EXECUTION_TIMEOUT_SECONDS minus DEADLINE_RESERVE_MS, so the run ends in a typed status before
 *   Lambda times the execution out.
 * - DURABLE_EXECUTION_TIMEOUT_SECONDS (default 900 s): the runner function's durable execution timeout
 *   (infra/ sets both from one setting). Lambda durable executions may last up to one year (31 536 000 s).
 * - RUNNER_FUNCTION_ARN: the qualified ARN (alias) of the durable runner the API starts executions on;
 *   unset outside AWS, where a local runner is injected instead (local/durable-executions.ts).
 */
import * as z from "zod/mini";
import { optionalString, positiveInt } from "./env.js";
import { runLimitsFields } from "./run-limits.js";
import { configSection, type SectionDocs } from "./section.js";

/** The durable runs section's variables, see the module comment. */
export const durableRunsFields = {
  ASYNC_RUN_TIMEOUT_MS: positiveInt(600_000, 31_536_000_000),
  DURABLE_EXECUTION_TIMEOUT_SECONDS: positiveInt(900, 31_536_000),
  RUNNER_FUNCTION_ARN: z.pipe(
    optionalString,
    z.optional(
      z
        .string()
        .check(
          z.regex(
            /^arn:aws[a-z-]*:lambda:[a-z0-9-]+:\d{12}:function:[A-Za-z0-9_-]+:[A-Za-z0-9_$-]+$/,
            "must be a qualified Lambda function ARN (function:name:alias)",
          ),
        ),
    ),
  ),
};

/**
 * The durable runs section: `durable`, runs beyond one request: `runTimeoutMs`, the cap of a durable
 * run's wall time in ms (ASYNC_RUN_TIMEOUT_MS capped by the execution timeout minus DEADLINE_RESERVE_MS);
 * `executionTimeoutMs`, the execution timeout in ms; `runnerFunctionArn`, the runner alias (undefined
 * outside AWS).
 */
export const durableRunsSection = configSection({
  fields: durableRunsFields,
  reads: { DEADLINE_RESERVE_MS: runLimitsFields.DEADLINE_RESERVE_MS },
  config: (
    env,
  ): {
    durable: { runTimeoutMs: number; executionTimeoutMs: number; runnerFunctionArn: string | undefined };
  } => ({
    durable: {
      executionTimeoutMs: env.DURABLE_EXECUTION_TIMEOUT_SECONDS * 1000,
      runTimeoutMs: Math.max(
        1,
        Math.min(
          env.ASYNC_RUN_TIMEOUT_MS,
          env.DURABLE_EXECUTION_TIMEOUT_SECONDS * 1000 - env.DEADLINE_RESERVE_MS,
        ),
      ),
      runnerFunctionArn: env.RUNNER_FUNCTION_ARN,
    },
  }),
});

/** The prose of the durable runs section's variables (docs/configuration.md). */
export const durableRunsDocs: SectionDocs<typeof durableRunsFields> = {
  ASYNC_RUN_TIMEOUT_MS: {
    group: "Durable runs",
    unit: "ms",
    description:
      "Cap on the wall time of a durable run (`Prefer: respond-async`, docs/durable-runs.md); default 10 minutes. Its deadline is absolute, fixed when the run starts, and capped by `DURABLE_EXECUTION_TIMEOUT_SECONDS` less `DEADLINE_RESERVE_MS`, so the run ends in a typed status before Lambda times the execution out. A request's `timeoutMs` can lower it.",
  },
  DURABLE_EXECUTION_TIMEOUT_SECONDS: {
    group: "Durable runs",
    unit: "s",
    description:
      "The runner function's durable execution timeout; the stack sets this variable and the function's `durableConfig` from one setting (infra/durable-runner.ts). Lambda allows up to one year.",
  },
  RUNNER_FUNCTION_ARN: {
    group: "Durable runs",
    description:
      "Qualified ARN (`function:name:alias`) of the durable runner the API starts executions on; set by the stack. Unset: `Prefer: respond-async` is ignored (runs are synchronous) unless a local runner is injected (`npm run dev`, `npm start -- --async`).",
  },
};
