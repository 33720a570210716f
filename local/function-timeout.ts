import { FUNCTION_TIMEOUT_SECONDS } from "../shared/config/function-timeout.js";

/** Lambda's largest function timeout (s): what `npm run invoke` and `npm run dev` accept for `--timeout`. */
export const MAX_FUNCTION_TIMEOUT_SECONDS = 900;

/**
 * The function timeout a local command gives the handler's Lambda context, and a note for the user.
 * - `timeoutMs`: ms the context's `getRemainingTimeInMillis` counts down from
 * - `note`: set when the configured run timeout and the function timeout disagree: the run's budget is
 *   capped by the function timeout (which one, and to what), or this local run allows more than the
 *   deployed function would (and how to get that on AWS); undefined when they agree
 */
export interface LocalFunctionTimeout {
  timeoutMs: number;
  note: string | undefined;
}

/**
 * Chooses the local function timeout. A run's deadline is the smaller of RUN_TIMEOUT_MS and the Lambda's
 * remaining time minus DEADLINE_RESERVE_MS (`Deadline.budgetMs`), so the function timeout caps it.
 * - `explicitSeconds` given (`--timeout`): used as is; the note says when it caps RUN_TIMEOUT_MS.
 * - otherwise the deployed function's timeout ({@link FUNCTION_TIMEOUT_SECONDS}), raised to fit
 *   RUN_TIMEOUT_MS + DEADLINE_RESERVE_MS when those need more (at most `maxSeconds`): a local run takes
 *   the timeout the user configured, e.g. for a model on a laptop's CPU; the note says that a deployed
 *   synchronous run is capped and `--async` (`Prefer: respond-async`) lifts the cap, or that
 *   DEADLINE_RESERVE_MS leaves a deployed synchronous run nothing (infra/stack.ts refuses it at synth).
 * @param limits config `limits`: `runTimeoutMs`, `deadlineReserveMs` (ms)
 * @param maxSeconds the largest timeout the command may use (undefined: no limit)
 */
export function localFunctionTimeout(
  limits: { runTimeoutMs: number; deadlineReserveMs: number },
  explicitSeconds?: number,
  maxSeconds?: number,
): LocalFunctionTimeout {
  const { runTimeoutMs, deadlineReserveMs } = limits;
  const needMs = runTimeoutMs + deadlineReserveMs;
  const deployedMs = FUNCTION_TIMEOUT_SECONDS * 1000;
  const cappedNote = (timeoutMs: number, by: string) =>
    `RUN_TIMEOUT_MS ${runTimeoutMs} ms is capped by ${by}: a run ends within ${Math.max(0, timeoutMs - deadlineReserveMs)} ms ` +
    `(the function timeout less DEADLINE_RESERVE_MS ${deadlineReserveMs} ms).`;
  if (explicitSeconds !== undefined) {
    const timeoutMs = Math.round(explicitSeconds * 1000);
    return {
      timeoutMs,
      note:
        needMs > timeoutMs
          ? cappedNote(timeoutMs, `the function timeout (--timeout ${explicitSeconds} s)`)
          : undefined,
    };
  }
  if (needMs <= deployedMs) return { timeoutMs: deployedMs, note: undefined };
  const limitMs = maxSeconds === undefined ? Number.POSITIVE_INFINITY : maxSeconds * 1000;
  if (needMs > limitMs) {
    return {
      timeoutMs: limitMs,
      note: cappedNote(limitMs, `Lambda's largest function timeout (${maxSeconds} s)`),
    };
  }
  const local = `RUN_TIMEOUT_MS ${runTimeoutMs} ms: this local run gives the function ${needMs / 1000} s. Deployed, the function times out after ${FUNCTION_TIMEOUT_SECONDS} s, `;
  const deployed =
    deployedMs > deadlineReserveMs
      ? `so a synchronous run there ends within ${deployedMs - deadlineReserveMs} ms; send long runs with --async (Prefer: respond-async, up to ASYNC_RUN_TIMEOUT_MS).`
      : `which DEADLINE_RESERVE_MS ${deadlineReserveMs} ms leaves nothing of: every synchronous run there would end deadline_exceeded before its first model call (the synth refuses it).`;
  return { timeoutMs: needMs, note: local + deployed };
}
