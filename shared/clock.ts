/**
 * A clock: `now` (epoch ms) and `sleep`, which resolves after `ms` of this clock or as soon as `signal`
 * aborts (never rejects). Injected wherever time decides something (event streams' heartbeats and limits,
 * a durable run's deadline and duration), so tests drive it instead of waiting on the wall clock.
 */
export interface Clock {
  now(): number;
  sleep(ms: number, signal: AbortSignal): Promise<void>;
}

/** The wall clock: `Date.now` and a `setTimeout` that an abort cuts short. */
export const SYSTEM_CLOCK: Clock = {
  now: () => Date.now(),
  sleep: (ms, signal) =>
    new Promise((resolve) => {
      if (signal.aborted) return resolve();
      const timer = setTimeout(done, ms);
      function done() {
        clearTimeout(timer);
        signal.removeEventListener("abort", done);
        resolve();
      }
      signal.addEventListener("abort", done, { once: true });
    }),
};
