/** One poll of `GET /v1/runs/{runId}`: the HTTP status, and the run's status and cycles recorded. */
export interface PollState {
  httpStatus: number;
  status: string;
  cycles: number | undefined;
}

/**
 * The progress lines of a polled run: a line for the first poll and for each poll whose HTTP status, run
 * status or cycle count differs from the one before; undefined for a poll that changes nothing, so a
 * long run prints a handful of lines, not one a second. Each line says how many polls it stands for
 * (`polls 3-9`) and when it was seen (s since the first poll, from `now`, ms).
 * @example const next = pollProgress(); next({ httpStatus: 200, status: "running", cycles: 1 }, 0)
 */
export function pollProgress(): (poll: PollState, now: number) => string | undefined {
  let last: string | undefined;
  let count = 0;
  let started: number | undefined;
  return (poll, now) => {
    count += 1;
    started ??= now;
    const key = `HTTP ${poll.httpStatus}, status ${poll.status}, cycles ${String(poll.cycles)}`;
    if (key === last) return undefined;
    last = key;
    return `poll ${count} (${((now - started) / 1000).toFixed(1)} s): ${key}`;
  };
}
