import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FINAL_EVENT_GRACE_MS, followRunEvents, readerHasEnd } from "../shared/runs/event-feed.js";
import { type RunEvent, RunEventHub } from "../shared/runs/events.js";
import { seedEvent, startTestStack, type TestStack } from "./support/stack.js";
import { ManualClock, SEED_RUN_EVENT_TYPES } from "./support/streaming.js";

// docs/run-events.md: a reader in another process (its own hub: nothing reaches it but the table) that
// finds the run's record ended before the writer's last batch has landed. The lifecycle writes the
// outcome first and the final batch after it, so that moment exists on every run.
let stack: TestStack;
beforeAll(async () => {
  stack = await startTestStack({ POWERTOOLS_LOG_LEVEL: "SILENT" });
  stack.model.usePlanner();
});
afterAll(async () => {
  await stack?.stop();
});

/** Writes a run record (`running`) as a run's start does, with nothing in its log. */
const startRecord = (tenantId: string, runId: string) =>
  stack.deps.runs.start({
    tenantId,
    runId,
    userId: "usr_1",
    prompt: "x",
    limits: { maxCycles: 5, timeoutMs: 25_000 },
  });

/**
 * Reads a run's events after `after` as a reader elsewhere would, on `clock`; `done` settles with what
 * it read.
 */
function readElsewhere(tenantId: string, runId: string, clock: ManualClock, after = 0) {
  const events: RunEvent[] = [];
  const feed = followRunEvents({
    deps: { runEvents: { store: stack.deps.runEvents.store, hub: new RunEventHub() }, runs: stack.deps.runs },
    tenantId,
    runId,
    after,
    pollMs: 50,
    clock,
    signal: new AbortController().signal,
  });
  const done = (async () => {
    for await (const item of feed) if (item.kind === "event") events.push(item.event);
    return events;
  })();
  return { events, done };
}

/** Resolves `"waiting"` once the feed sleeps on `clock`, or `"ended"` if it ended first. */
const waitingOrEnded = (clock: ManualClock, done: Promise<unknown>) =>
  Promise.race([clock.untilSleeping().then(() => "waiting"), done.then(() => "ended")]);

describe("a reader that finds the run ended before its final batch landed", () => {
  it("waits for the writer's batch instead of closing the log early: every event once, the real final", async () => {
    const tenantId = "tenant_feed_late";
    const store = stack.deps.runEvents.store;
    const append = store.append.bind(store);
    let held: (runId: string) => void = () => {};
    const holding = new Promise<string>((resolve) => {
      held = resolve;
    });
    let release: () => void = () => {};
    const released = new Promise<void>((resolve) => {
      release = resolve;
    });
    // The last batch (the final cycle's events and run.finished) is held until the reader has looked.
    store.append = async (tenant, runId, events, ttl) => {
      if (tenant === tenantId && events.some((e) => e.type === "run.finished")) {
        held(runId);
        await released;
      }
      return append(tenant, runId, events, ttl);
    };
    try {
      const clock = new ManualClock();
      const run = stack.invoke(
        seedEvent({ claims: { sub: "usr_9918", tenant_id: tenantId, scope: "billing:write" } }),
      );
      // A run that never reaches its last batch fails here rather than hanging the test.
      const runId = await Promise.race([holding, run.then((r) => Promise.reject(new Error(r.body)))]);
      // The outcome is written: the record has ended while its last batch is still on its way.
      expect((await stack.deps.runs.getRecord(tenantId, runId))?.status).toBe("completed");
      const reader = readElsewhere(tenantId, runId, clock);
      expect(await waitingOrEnded(clock, reader.done)).toBe("waiting");
      expect(reader.events.map((e) => e.seq)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9]);
      release();
      expect((await run).statusCode).toBe(200);
      clock.advance(50);
      const events = await reader.done;
      expect(events.map((e) => e.type)).toEqual(SEED_RUN_EVENT_TYPES);
      expect(events.map((e) => e.seq)).toEqual(SEED_RUN_EVENT_TYPES.map((_, i) => i + 1));
      expect(events[9]).toMatchObject({ type: "model.call.finished", cycle: 3, finishReason: "stop" });
      expect(events[10]).toMatchObject({ type: "run.finished", status: "completed", cycles: 3 });
    } finally {
      store.append = append;
      release();
    }
  });

  it("a failed run whose final batch never comes: closed from the record once the grace is over", async () => {
    const tenantId = "tenant_feed_failed";
    const runId = `run_${crypto.randomUUID()}`;
    const clock = new ManualClock();
    await startRecord(tenantId, runId);
    const started = { type: "run.started", limits: { maxCycles: 5, timeoutMs: 25_000 }, previousRunId: null };
    const first = { ...started, runId, seq: 1, at: new Date(clock.now()).toISOString() } as RunEvent;
    await stack.deps.runEvents.store.append(tenantId, runId, [first], Math.floor(clock.now() / 1000) + 3600);
    await stack.deps.runs.fail(tenantId, runId, "The server failed during the run.", new Date(clock.now()));
    const reader = readElsewhere(tenantId, runId, clock);
    expect(await waitingOrEnded(clock, reader.done)).toBe("waiting");
    // Still within the grace: the writer's batch may yet land, so the reader keeps waiting.
    clock.advance(FINAL_EVENT_GRACE_MS - 50);
    expect(await waitingOrEnded(clock, reader.done)).toBe("waiting");
    expect(reader.events.map((e) => e.seq)).toEqual([1]);
    clock.advance(50);
    const events = await reader.done;
    expect(events.map((e) => [e.seq, e.type])).toEqual([
      [1, "run.started"],
      [2, "run.finished"],
    ]);
    expect(events[1]).toMatchObject({ status: "failed", reason: "The server failed during the run." });
  });

  it("a durable run waiting for budget (awaiting_quota) is live: the reader waits, no final event is made up", async () => {
    const tenantId = "tenant_feed_quota";
    const runId = `run_${crypto.randomUUID()}`;
    const clock = new ManualClock();
    await startRecord(tenantId, runId);
    expect(await stack.deps.runs.setAwaitingQuota(tenantId, runId, true, new Date(clock.now()))).toBe(true);
    const reader = readElsewhere(tenantId, runId, clock);
    expect(await waitingOrEnded(clock, reader.done)).toBe("waiting");
    // Past the grace a writer's final batch gets: a waiting run has none to come, and is not over.
    clock.advance(FINAL_EVENT_GRACE_MS + 1_000);
    expect(await waitingOrEnded(clock, reader.done)).toBe("waiting");
    expect(reader.events).toEqual([]);
    // Its budget came back, and the run ended later: the reader gets the real end, at sequence 1.
    await stack.deps.runs.cancel(tenantId, runId, "Cancelled by usr_2.", new Date(clock.now()));
    clock.advance(50);
    expect((await reader.done).map((e) => [e.seq, e.type, "status" in e ? e.status : null])).toEqual([
      [1, "run.finished", "cancelled"],
    ]);
  });

  it("a run cancelled from the API, which no writer closes: its final event at once, without waiting", async () => {
    const tenantId = "tenant_feed_cancelled";
    const runId = `run_${crypto.randomUUID()}`;
    const clock = new ManualClock();
    await startRecord(tenantId, runId);
    await stack.deps.runs.cancel(tenantId, runId, "Cancelled by usr_2.", new Date(clock.now()));
    const reader = readElsewhere(tenantId, runId, clock);
    expect(await waitingOrEnded(clock, reader.done)).toBe("ended");
    expect((await reader.done).map((e) => [e.seq, e.type, "status" in e ? e.status : null])).toEqual([
      [1, "run.finished", "cancelled"],
    ]);
  });

  it("a reader that already has a cancelled run's last event still gets its final one", async () => {
    const tenantId = "tenant_feed_resumed";
    const runId = `run_${crypto.randomUUID()}`;
    const clock = new ManualClock();
    await startRecord(tenantId, runId);
    const at = new Date(clock.now()).toISOString();
    const started = { type: "run.started", limits: { maxCycles: 5, timeoutMs: 25_000 }, previousRunId: null };
    const model = { type: "model.call.finished", cycle: 1, finishReason: "stop", latencyMs: 3 };
    const usage = { promptTokens: 1, completionTokens: 1, totalTokens: 2 };
    const batch = [
      { ...started, runId, seq: 1, at },
      { ...model, usage, runId, seq: 2, at },
    ] as RunEvent[];
    await stack.deps.runEvents.store.append(tenantId, runId, batch, Math.floor(clock.now() / 1000) + 3600);
    await stack.deps.runs.cancel(tenantId, runId, "Cancelled by usr_2.", new Date(clock.now()));
    // Last-Event-ID 2: nothing after it is stored, yet the stream must still end with the final event.
    const reader = readElsewhere(tenantId, runId, clock, 2);
    expect((await reader.done).map((e) => [e.seq, e.type])).toEqual([[3, "run.finished"]]);
  });
});

describe("a durable run waiting for budget (awaiting_quota, docs/quotas.md)", () => {
  it("is still going: the reader waits on, past the grace, closes nothing, and a resume is not 204", async () => {
    const tenantId = "tenant_feed_quota";
    const runId = `run_${crypto.randomUUID()}`;
    const clock = new ManualClock();
    await startRecord(tenantId, runId);
    const at = new Date(clock.now()).toISOString();
    const started = { type: "run.started", limits: { maxCycles: 5, timeoutMs: 25_000 }, previousRunId: null };
    const batch = [{ ...started, runId, seq: 1, at }] as RunEvent[];
    await stack.deps.runEvents.store.append(tenantId, runId, batch, Math.floor(clock.now() / 1000) + 3600);
    expect(await stack.deps.runs.setAwaitingQuota(tenantId, runId, true, new Date(clock.now()))).toBe(true);
    const record = await stack.deps.runs.getRecord(tenantId, runId);
    if (!record) throw new Error("the record was written");
    // A reader past the log (Last-Event-ID 2: the final event a reader would have made of the record) is
    // not told that it has the end (204).
    expect(await readerHasEnd(stack.deps, tenantId, record, 2)).toBe(false);
    const reader = readElsewhere(tenantId, runId, clock);
    for (let waited = 0; waited <= FINAL_EVENT_GRACE_MS; waited += 50) {
      expect(await waitingOrEnded(clock, reader.done)).toBe("waiting");
      clock.advance(50);
    }
    expect(await waitingOrEnded(clock, reader.done)).toBe("waiting");
    expect(reader.events.map((e) => e.type)).toEqual(["run.started"]);
    // Woken, it goes on and finishes: its own final event is the one the reader gets.
    expect(await stack.deps.runs.setAwaitingQuota(tenantId, runId, false, new Date(clock.now()))).toBe(true);
    await stack.deps.runs.cancel(tenantId, runId, "Cancelled by usr_2.", new Date(clock.now()));
    clock.advance(50);
    expect((await reader.done).map((e) => [e.seq, e.type, "status" in e ? e.status : null])).toEqual([
      [1, "run.started", null],
      [2, "run.finished", "cancelled"],
    ]);
  });
});
