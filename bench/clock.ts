import { subscribe, unsubscribe } from "node:diagnostics_channel";
import type { IncomingMessage, Server } from "node:http";

/** A time interval in ms on the `performance.now()` clock. */
export interface Interval {
  start: number;
  end: number;
}

/** Total length (ms) of the union of intervals: overlapping parts (parallel work) count once. */
export function unionMs(intervals: readonly Interval[]): number {
  const sorted = [...intervals].sort((a, b) => a.start - b.start);
  let total = 0;
  let current: Interval | undefined;
  for (const interval of sorted) {
    if (current && interval.start <= current.end) {
      current.end = Math.max(current.end, interval.end);
    } else {
      if (current) total += current.end - current.start;
      current = { ...interval };
    }
  }
  if (current) total += current.end - current.start;
  return total;
}

/** Collects intervals (tool executions, model requests) until `take()` hands them over and starts afresh. */
export class IntervalLog {
  private intervals: Interval[] = [];
  add(interval: Interval): void {
    this.intervals.push(interval);
  }
  /** Times `fn` and records its interval (also when it throws). */
  async time<T>(fn: () => Promise<T>): Promise<T> {
    const start = performance.now();
    try {
      return await fn();
    } finally {
      this.add({ start, end: performance.now() });
    }
  }
  /** The intervals so far, in recording order; the log is empty afterwards. */
  take(): Interval[] {
    const taken = this.intervals;
    this.intervals = [];
    return taken;
  }
}

/**
 * Server-side time of every request an in-process HTTP server on `port` handles, from Node's own HTTP
 * diagnostics channels: from `http.server.request.start` (headers parsed, handler called) to
 * `http.server.response.finish` (last byte handed to the socket). Used to subtract the local model
 * server's time from a run's wall time. `stop()` unsubscribes.
 */
export class ServerClock {
  readonly log = new IntervalLog();
  private readonly open = new WeakMap<IncomingMessage, number>();
  private readonly onStart = (message: unknown) => {
    const { request, server } = message as { request: IncomingMessage; server: Server };
    if (this.isOurs(server)) this.open.set(request, performance.now());
  };
  private readonly onFinish = (message: unknown) => {
    const { request, server } = message as { request: IncomingMessage; server: Server };
    const start = this.open.get(request);
    if (start !== undefined && this.isOurs(server)) this.log.add({ start, end: performance.now() });
  };

  constructor(private readonly port: number) {
    subscribe("http.server.request.start", this.onStart);
    subscribe("http.server.response.finish", this.onFinish);
  }

  /** Per server, whether it listens on our port: `server.address()` is a system call, too costly per request. */
  private readonly ours = new WeakMap<Server, boolean>();

  private isOurs(server: Server): boolean {
    let ours = this.ours.get(server);
    if (ours === undefined) {
      const address = server.address();
      ours = typeof address === "object" && address !== null && address.port === this.port;
      this.ours.set(server, ours);
    }
    return ours;
  }

  stop(): void {
    unsubscribe("http.server.request.start", this.onStart);
    unsubscribe("http.server.response.finish", this.onFinish);
  }
}

/** The port of an `http://host:port/...` URL. */
export function portOf(url: string): number {
  return Number(new URL(url).port);
}
