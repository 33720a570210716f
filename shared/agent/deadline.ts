/** Raised (as an abort reason) when a run's deadline passes. */
export class DeadlineExceededError extends Error {
  constructor(message = "The run's deadline passed.") {
    super(message);
    this.name = new.target.name;
  }
}

/**
 * One wall-clock deadline for a run, with an AbortSignal that fires when it passes. The signal goes to
 * every model request and tool handler, so the deadline is enforced during calls, not only between them.
 * Times are epoch ms (`Date.now()` clock).
 */
export class Deadline {
  /** Epoch ms at which the run must stop. */
  readonly at: number;
  private controller = new AbortController();
  private timer: NodeJS.Timeout;

  /** @param budgetMs ms from now until the deadline (clamped to at least 0) */
  constructor(budgetMs: number, now: number = Date.now()) {
    const ms = Math.max(0, Math.floor(budgetMs));
    this.at = now + ms;
    this.timer = this.arm(ms);
  }

  /** Aborted with a {@link DeadlineExceededError} at `at`. */
  get signal(): AbortSignal {
    return this.controller.signal;
  }

  /**
   * Moves the deadline later, to `at` (epoch ms; an earlier instant changes nothing): time a run spent
   * waiting for a person's approval does not count against it (docs/approvals.md). A signal that had
   * already fired is replaced by a fresh one; nothing may be in flight on the old one (the loop calls this
   * between steps).
   */
  extendTo(at: number, now: number = Date.now()): void {
    if (at <= this.at) return;
    (this as { at: number }).at = at;
    clearTimeout(this.timer);
    if (this.controller.signal.aborted) this.controller = new AbortController();
    this.timer = this.arm(Math.max(0, at - now));
  }

  /** Starts the timer that aborts the signal in `ms`. */
  private arm(ms: number): NodeJS.Timeout {
    const controller = this.controller;
    const timer = setTimeout(() => controller.abort(new DeadlineExceededError()), ms);
    timer.unref();
    return timer;
  }

  /**
   * A deadline at the absolute instant `at` (epoch ms), e.g. the one a durable run fixed when it started:
   * every invocation that replays the run rebuilds the same deadline. An instant already past gives an
   * expired deadline that still reports `at` (so a replay reports the same `deadlineAt`).
   * @example Deadline.until(payload.deadlineAt)
   */
  static until(at: number, now: number = Date.now()): Deadline {
    const deadline = new Deadline(at - now, now);
    (deadline as { at: number }).at = at;
    return deadline;
  }

  /** ms left before the deadline, never negative. */
  remainingMs(): number {
    return Math.max(0, this.at - Date.now());
  }

  /** True once the deadline has passed (or its signal fired). */
  get expired(): boolean {
    return this.signal.aborted || this.remainingMs() === 0;
  }

  /** Stops the timer; call when the run ends early. */
  dispose(): void {
    clearTimeout(this.timer);
  }

  /**
   * The run's time budget in ms: the smaller of the configured timeout and the Lambda's remaining time
   * minus a reserve kept for persisting the outcome.
   * @param runTimeoutMs configured cap (config RUN_TIMEOUT_MS)
   * @param lambdaRemainingMs `context.getRemainingTimeInMillis()`, or undefined outside Lambda
   * @param reserveMs config DEADLINE_RESERVE_MS
   */
  static budgetMs(runTimeoutMs: number, lambdaRemainingMs: number | undefined, reserveMs: number): number {
    if (lambdaRemainingMs === undefined) return runTimeoutMs;
    return Math.max(0, Math.min(runTimeoutMs, lambdaRemainingMs - reserveMs));
  }
}

/**
 * Settles with `promise`, or rejects with the signal's reason as soon as `signal` aborts, whichever
 * comes first. The underlying work is not cancelled by this; pass the signal to it as well.
 */
export function raceAbort<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener("abort", onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener("abort", onAbort);
        reject(error);
      },
    );
  });
}
