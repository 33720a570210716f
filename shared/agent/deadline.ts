import { type Clock, SYSTEM_CLOCK } from "../clock.js";

/** Raised (as an abort reason) when a run's deadline passes. */
export class DeadlineExceededError extends Error {
  constructor(message = "The run's deadline passed.") {
    super(message);
    this.name = new.target.name;
  }
}

/**
 * One deadline for a run, with an AbortSignal that fires when it passes. The signal goes to every model
 * request and tool handler, so the deadline is enforced during calls, not only between them. Times are
 * epoch ms of `clock` (shared/clock.ts; default the wall clock, whose timer never keeps a process alive);
 * an injected clock (tests) moves the deadline's time and fires its signal.
 */
export class Deadline {
  /** Epoch ms at which the run must stop. */
  readonly at: number;
  private controller = new AbortController();
  private disarm: () => void;

  /**
   * @param budgetMs ms from now until the deadline (clamped to at least 0)
   * @param clock the clock `at`, `remainingMs` and the signal go by; the run's duration goes by it too
   *   (shared/agent/run-state.ts), so a test that moves it moves the whole run's time
   */
  constructor(
    budgetMs: number,
    readonly clock: Clock = SYSTEM_CLOCK,
  ) {
    const ms = Math.max(0, Math.floor(budgetMs));
    this.at = clock.now() + ms;
    this.disarm = this.arm(ms);
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
  extendTo(at: number): void {
    if (at <= this.at) return;
    (this as { at: number }).at = at;
    this.disarm();
    if (this.controller.signal.aborted) this.controller = new AbortController();
    this.disarm = this.arm(Math.max(0, at - this.clock.now()));
  }

  /**
   * Starts the timer that aborts the signal in `ms`; returns what stops it. The wall clock's is an
   * unref'd timeout (a pending deadline never keeps a process alive); any other clock's is its `sleep`.
   */
  private arm(ms: number): () => void {
    const fire = firing(this.controller);
    if (this.clock === SYSTEM_CLOCK) {
      const timer = setTimeout(fire, ms);
      timer.unref();
      return () => clearTimeout(timer);
    }
    const cancel = new AbortController();
    void this.clock.sleep(ms, cancel.signal).then(() => {
      if (!cancel.signal.aborted) fire();
    });
    return () => cancel.abort();
  }

  /**
   * A deadline at the absolute instant `at` (epoch ms), e.g. the one a durable run fixed when it started:
   * every invocation that replays the run rebuilds the same deadline. An instant already past gives an
   * expired deadline that still reports `at` (so a replay reports the same `deadlineAt`).
   * @example Deadline.until(payload.deadlineAt, deps.clock)
   */
  static until(at: number, clock: Clock = SYSTEM_CLOCK): Deadline {
    const deadline = new Deadline(at - clock.now(), clock);
    (deadline as { at: number }).at = at;
    return deadline;
  }

  /** ms left before the deadline, never negative. */
  remainingMs(): number {
    return Math.max(0, this.at - this.clock.now());
  }

  /**
   * The deadline on the wall clock (epoch ms): now plus what it leaves on its own clock, for whatever
   * times itself by the wall clock (a provider's timeout, a lease the idempotency store reads).
   */
  wallClockAt(): number {
    return Date.now() + this.remainingMs();
  }

  /** True once the deadline has passed (or its signal fired). */
  get expired(): boolean {
    return this.signal.aborted || this.remainingMs() === 0;
  }

  /** Stops the timer; call when the run ends early. */
  dispose(): void {
    this.disarm();
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
 * What aborts `controller` with a {@link DeadlineExceededError}. The closures below are made by helpers
 * so they are unnamed: under esbuild's `keepNames` (tsx, the durable runner's bundle) a named closure
 * pays a `name` definition each time it is made (per run, per tool call).
 */
function firing(controller: AbortController): () => void {
  return () => controller.abort(new DeadlineExceededError());
}

/** What rejects with `signal`'s reason (see {@link firing}). */
function rejecting(signal: AbortSignal, reject: (reason: unknown) => void): () => void {
  return () => reject(signal.reason);
}

/**
 * Settles with `promise`, or rejects with the signal's reason as soon as `signal` aborts, whichever
 * comes first. The underlying work is not cancelled by this; pass the signal to it as well.
 */
export function raceAbort<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = rejecting(signal, reject);
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
