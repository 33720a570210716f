import { CallbackTimeoutError, createRetryStrategy, JitterStrategy } from "@aws/durable-execution-sdk-js";
import { isDomainError, QUOTA_UNAVAILABLE_NAME } from "../domain-errors.js";

/**
 * The runner's own errors a step attempt is not retried for (by name: the SDK may hand the retry strategy
 * a copy). A domain refusal (`isDomainError`, e.g. of `history:load`: the previous run can no longer be
 * continued) is never retried either: it gives the same answer on every attempt — except a quota store
 * that failed (QuotaUnavailableError, by its own name), which a later attempt may find answering.
 */
const NOT_RETRIED = new Set(["RunStoppedError", "StepResultTooLargeError"]);

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
    NOT_RETRIED.has(error?.name) || (isDomainError(error) && error?.name !== QUOTA_UNAVAILABLE_NAME)
      ? { shouldRetry: false }
      : base(error, attempt);
})();

/** True for the SDK's error of a `waitForCallback` whose timeout passed (by name: it may be a copy). */
export function isCallbackTimeout(error: unknown): boolean {
  return (
    error instanceof CallbackTimeoutError ||
    (error as { errorType?: unknown } | null)?.errorType === "CallbackTimeoutError"
  );
}
