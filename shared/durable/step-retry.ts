import { CallbackTimeoutError, createRetryStrategy, JitterStrategy } from "@aws/durable-execution-sdk-js";

/**
 * Errors a step attempt is not retried for (by name: the SDK may hand the retry strategy a copy).
 * `ProblemError`: a refusal of `history:load` (the previous run can no longer be continued) gives the
 * same answer on every attempt.
 */
const NOT_RETRIED = new Set(["RunStoppedError", "StepResultTooLargeError", "ProblemError"]);

/**
 * Retries of a step attempt that threw (cut off, or failed before its checkpoint): 3 attempts in all,
 * 1 s then 2 s apart (no jitter: one execution retries alone). A model call or tool turn never throws for
 * model or tool failures (those are results), so a throw means the attempt was interrupted; tool
 * idempotency keys make the repeated turn's effects exactly-once. A stop, or a result over the checkpoint
 * limit, is never retried.
 */
export const STEP_RETRY = (() => {
  const base = createRetryStrategy({
    maxAttempts: 3,
    initialDelay: { seconds: 1 },
    maxDelay: { seconds: 10 },
    backoffRate: 2,
    jitter: JitterStrategy.NONE,
  });
  return (error: Error, attempt: number) =>
    NOT_RETRIED.has(error?.name) ? { shouldRetry: false } : base(error, attempt);
})();

/** True for the SDK's error of a `waitForCallback` whose timeout passed (by name: it may be a copy). */
export function isCallbackTimeout(error: unknown): boolean {
  return (
    error instanceof CallbackTimeoutError ||
    (error as { errorType?: unknown } | null)?.errorType === "CallbackTimeoutError"
  );
}
