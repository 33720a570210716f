import type { Clock } from "../clock.js";
import type { RunEventStore } from "../store/run-events.js";
import { UNFINISHED_STATUSES } from "../store/run-records.js";
import type { RunStore } from "../store/runs.js";
import { RUN_ABANDONED_STATUS } from "./abandoned.js";
import { FINAL_EVENT_TYPE, type RunEvent, type RunEventHub } from "./events.js";

/**
 * How long after a run's record ended (its `finishedAt`, ms) a reader waits for the writer's final
 * batch before closing the log with a final event made from the record. The lifecycle writes the
 * outcome first and its last batch right after (shared/runs/lifecycle.ts: observers follow the write),
 * so a reader can find the record ended while that batch is on its way; the grace covers that write
 * with the SDK's retries. A cancelled run is never closed by a writer, so it is not waited for.
 */
export const FINAL_EVENT_GRACE_MS = 5_000;

/** Why a `Last-Event-ID` is refused, in every protocol's answer (HTTP, AG-UI, A2A). */
export const LAST_EVENT_ID_RULE =
  "Last-Event-ID must be the id of an event of this stream (a sequence number).";

/**
 * The run event sequence a `Last-Event-ID` names (the `id:` of an event a stream sent: plain digits, at
 * most 15 of them), after trimming; undefined for an empty one (none sent); null for any other text,
 * which each surface refuses with {@link LAST_EVENT_ID_RULE} rather than read as 0.
 */
export function lastEventSequence(value: string | undefined): number | null | undefined {
  const trimmed = value?.trim();
  if (!trimmed) return undefined;
  return /^[0-9]{1,15}$/.test(trimmed) ? Number(trimmed) : null;
}

/** What a feed yields: the next event, or `idle` after a wait of `pollMs` in which nothing came. */
export type FeedItem = { kind: "event"; event: RunEvent } | { kind: "idle" };

/**
 * A run's events as this process emits them (through the hub), kept from the moment it is made until
 * a feed takes them: a `POST /v1/runs` stream makes one before its run starts, so it misses nothing.
 * {@link LiveEvents.finish} tells the feed to end once it has handed out what is there (the request's
 * run returned, e.g. handed over to a durable execution that goes on elsewhere).
 */
export class LiveEvents {
  readonly events = new Map<number, RunEvent>();
  changed = false;
  finishing = false;
  private woken = new AbortController();
  private readonly unsubscribe: () => void;

  /** True once {@link close}d: a feed then reads the table. */
  closed = false;

  /**
   * Resolves when the run's first event comes through the hub: in a process that serves the run, its
   * `run.started`, which the lifecycle emits once the run's record is written (the run was admitted
   * and really started). Never resolves for a run that does not start here.
   */
  readonly started: Promise<void>;

  constructor(
    hub: RunEventHub,
    readonly runId: string,
  ) {
    let markStarted: () => void = () => {};
    this.started = new Promise<void>((resolve) => {
      markStarted = resolve;
    });
    this.unsubscribe = hub.subscribe(runId, (event) => {
      if (event) {
        this.events.set(event.seq, event);
        markStarted();
      }
      this.changed = true;
      this.woken.abort();
    });
  }

  /** Aborted when something came since the last {@link rearm}. */
  get wake(): AbortSignal {
    return this.woken.signal;
  }

  /** A fresh wake signal once the last one fired. */
  rearm(): void {
    if (this.woken.signal.aborted) this.woken = new AbortController();
  }

  /** Makes the feed end after what it can hand out now. */
  finish(): void {
    this.finishing = true;
    this.woken.abort();
  }

  /** Stops listening to the hub. */
  close(): void {
    this.closed = true;
    this.unsubscribe();
  }
}

/**
 * Input of {@link followRunEvents}: where to read (the run's tenant and id), from where (`after`, the
 * last sequence the reader has; 0 for all), how (`pollMs`, ms between table reads while nothing comes
 * through this process's hub) and until when (`signal`: the reader left; `live.finish()`).
 */
export interface FollowInput {
  deps: {
    runEvents: { store: RunEventStore<RunEvent>; hub: RunEventHub };
    runs: Pick<RunStore, "getRecord">;
  };
  tenantId: string;
  runId: string;
  after: number;
  pollMs: number;
  clock: Clock;
  signal: AbortSignal;
  live?: LiveEvents;
}

/**
 * Whether a run's record has ended: nothing more is appended after its status (every status but those
 * of a run still going: running, or a durable run waiting for a person or for budget).
 */
function ended(status: string): boolean {
  return !UNFINISHED_STATUSES.includes(status);
}

/**
 * The run's events after `after`, each once and in sequence order, then live ones as they come, ending
 * after the final event (`run.finished`). Events emitted in this process (the run is served here) come
 * through the hub at once, before they are written, and need no table read (`live` of the request's own
 * run reads nothing from the table); others are read from the table (when the next sequence is not
 * among those seen here) every `pollMs`,
 * and an `idle` item is yielded after each wait that brought nothing (the caller's cue for heartbeats
 * and its own time limit). A run whose record has ended without a final event in its log (cancelled
 * from the API, failed before its outcome was written) gets one made from the record, with the next
 * sequence, so every reader sees the same end. Ends early, without a final event, when `signal` aborts
 * or after `live.finish()` once what is stored and emitted so far is handed out.
 * @throws the store's errors (the caller closes the stream)
 */
export async function* followRunEvents(input: FollowInput): AsyncGenerator<FeedItem> {
  const { deps, tenantId, runId, clock, signal } = input;
  const live = input.live ?? new LiveEvents(deps.runEvents.hub, runId);
  // A feed given the live events of a run this request serves (made before it started) needs no table.
  const here = input.live !== undefined && input.live.runId === runId && !input.live.closed;
  const onAbort = () => live.finish();
  signal.addEventListener("abort", onAbort);
  let last = input.after;
  let from = 0;
  let highest = 0;
  try {
    while (!signal.aborted) {
      const finishing = live.finishing;
      live.changed = false;
      // The table is read only when what this process saw emitted does not go on from `last` (events
      // are emitted before their batch is written: a run served here streams without a read per event).
      const events: RunEvent[] = [];
      if (!here && !live.events.has(last + 1)) {
        const page = await deps.runEvents.store.read(tenantId, runId, last, from, { signal });
        from = page.nextFrom;
        highest = Math.max(highest, page.last?.seq ?? 0);
        events.push(...page.events);
      }
      let yielded = false;
      for (;;) {
        const event = events[0]?.seq === last + 1 ? events.shift() : live.events.get(last + 1);
        if (!event) break;
        live.events.delete(event.seq);
        last = event.seq;
        yielded = true;
        yield { kind: "event", event };
        if (event.type === FINAL_EVENT_TYPE || signal.aborted) return;
        highest = Math.max(highest, last);
      }
      if (finishing) return;
      if (yielded || live.changed) continue;
      if (here) {
        // The run is this request's own: every event comes through the hub, and live.finish() ends it.
        await clock.sleep(input.pollMs, live.wake);
        if (live.wake.aborted) live.rearm();
        else yield { kind: "idle" };
        continue;
      }
      const record = await deps.runs.getRecord(tenantId, runId);
      if (!record || ended(record.status)) {
        // Read once more: the final batch may have landed between the two reads.
        const again = await deps.runEvents.store.read(tenantId, runId, last, from, { signal });
        if (again.events.length > 0) continue;
        // The reader already has the log's final event (it resumed after it), or more than the log holds.
        if (!record || again.last?.type === FINAL_EVENT_TYPE) return;
        highest = Math.max(highest, again.last?.seq ?? 0);
        if (highest + 1 <= last) return;
        if (!finalBatchMayComeLater(record, clock.now())) {
          yield { kind: "event", event: finalFromRecord(record, highest + 1) };
          return;
        }
      }
      await clock.sleep(input.pollMs, live.wake);
      if (live.wake.aborted) live.rearm();
      else yield { kind: "idle" };
    }
  } finally {
    if (!input.live) live.close();
    signal.removeEventListener("abort", onAbort);
  }
}
/**
 * Whether a reader that has every event of a run up to sequence `after` already has its last one, so
 * a stream would carry nothing (the resume an EventSource makes when a stream closes after the final
 * event): the record has ended, and the log's final event is at or before `after` — or, for a log
 * without one (a run cancelled from the API, a writer that failed), `after` is past the log, i.e. the
 * reader got the final event {@link followRunEvents} made from the record. One read of the log, and
 * only for an ended record.
 * @param run the run's record, as the caller read it
 * @throws the store's errors
 */
export async function readerHasEnd(
  deps: Pick<FollowInput["deps"], "runEvents">,
  tenantId: string,
  run: EndedRecord,
  after: number,
): Promise<boolean> {
  if (!ended(run.status) || after === 0) return false;
  const page = await deps.runEvents.store.read(tenantId, run.runId, after);
  if (page.events.length > 0) return false;
  if (page.last?.type === FINAL_EVENT_TYPE) return true;
  return after > (page.last?.seq ?? 0);
}

/**
 * Whether the writer of a run that ended may still be writing its final batch: every end but a cancel
 * from the API and an abandoned run (its server died: shared/runs/abandoned.ts) is followed by one (the
 * lifecycle's `finished` / `failed` points), for up to {@link FINAL_EVENT_GRACE_MS} after the record's
 * `finishedAt` (epoch ms `now` on the feed's clock).
 */
function finalBatchMayComeLater(record: EndedRecord, now: number): boolean {
  if (record.status === "cancelled" || record.status === RUN_ABANDONED_STATUS) return false;
  return now < Date.parse(record.finishedAt ?? record.updatedAt) + FINAL_EVENT_GRACE_MS;
}

type EndedRecord = NonNullable<Awaited<ReturnType<RunStore["getRecord"]>>>;

/** The final event of a run that ended without writing one, made from its record. */
function finalFromRecord(record: EndedRecord, seq: number): RunEvent {
  return {
    type: FINAL_EVENT_TYPE,
    status: record.status,
    answer: record.answer,
    reason: record.reason,
    cycles: record.cycles,
    usage: record.usage,
    durationMs: record.durationMs,
    runId: record.runId,
    seq,
    at: record.finishedAt ?? record.updatedAt,
  };
}
