/**
 * Runs on the run's injected clock, set years away from the wall clock (a durable run, and a synchronous
 * one through the same handler): what their start writes is dated by that clock, not by the machine's;
 * so are an approval asked for during a run, its decision and expiry, and a conversation's head.
 * A durable run's admission marker outlives the longest the run may take (docs/quotas.md "Admission";
 * docs/approvals.md: ASYNC_RUN_TIMEOUT_MS + one approval wait of APPROVAL_TIMEOUT_SECONDS + the budget
 * wait of QUOTA_WAIT_SECONDS) from the run's start on that clock.
 * The real API handler, the durable runner on the SDK's local runner, DynamoDB Local, the local model
 * server.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RunRecordSchema, RunResponseSchema } from "../functions/api/contract.js";
import { namesOf, quotaRef, runKey } from "../shared/quotas/item.js";
import { markerName, type ReservationMarker } from "../shared/store/counters.js";
import { approvalRuns, decide, GBP_RULES, json, pollUntil } from "./support/approvals.js";
import { type DurableStack, runPathEvent, startAsyncRun, startDurableStack } from "./support/durable.js";
import { heldReply } from "./support/held.js";
import { runEvent } from "./support/idempotency.js";
import { runTrace, startMemoryTracing } from "./support/spans.js";
import { ManualClock } from "./support/streaming.js";

/** 2030-01-15 12:00:00 UTC, in epoch ms: far from any day this test runs on. */
const AT = Date.UTC(2030, 0, 15, 12);
const ASYNC_RUN_TIMEOUT_S = 600;
const APPROVAL_TIMEOUT_S = 3_600;
const QUOTA_WAIT_S = 7_200;
const clock = new ManualClock();
clock.advance(AT - clock.now());

let stack: DurableStack;
let tracing: ReturnType<typeof startMemoryTracing>;
beforeAll(async () => {
  tracing = startMemoryTracing();
  stack = await startDurableStack(
    {
      ASYNC_RUN_TIMEOUT_MS: String(ASYNC_RUN_TIMEOUT_S * 1000),
      APPROVAL_TIMEOUT_SECONDS: String(APPROVAL_TIMEOUT_S),
      QUOTA_WAIT_SECONDS: String(QUOTA_WAIT_S),
      APPROVAL_RULES: GBP_RULES,
    },
    { clock, quotas: { now: () => clock.now() } },
  );
});
afterAll(async () => {
  await stack?.stop();
  await tracing?.sdk.shutdown();
});

/** The runs' markers in `tenantId`'s quota item of the day of {@link AT}, as stored, by attribute name. */
async function markersOf(tenantId: string): Promise<Map<string, ReservationMarker>> {
  const quotas = stack.deps.quotas;
  if (!quotas) throw new Error("quotas are on");
  return (await quotas.counters.read(quotaRef(tenantId, AT))).markers;
}

/** Runs "hello" synchronously for `tenantId` (the model answers at once); its run id. */
async function syncRun(tenantId: string): Promise<string> {
  stack.model.script([{ content: "Nothing to do." }]);
  const response = await stack.invoke(runEvent({ tenantId, prompt: "hello" }));
  expect(response.statusCode, response.body).toBe(200);
  return RunResponseSchema.parse(JSON.parse(response.body ?? "")).runId;
}

/**
 * Scripts the next model reply held: `inFlight` resolves once its request reached the model server
 * (polling the event loop, not a clock), `release` lets the reply go.
 */
function holdModelCall() {
  const { heldUntil, release } = heldReply();
  stack.model.script([{ content: "Nothing to do.", heldUntil }]);
  const seen = stack.model.requests.length;
  const inFlight = async () => {
    while (stack.model.requests.length === seen) await new Promise((resolve) => setTimeout(resolve, 10));
  };
  return { inFlight, release };
}

describe("a durable start on an injected clock", () => {
  it("admits the run with a marker that expires the longest run duration after the clock's now", async () => {
    const tenantId = "tenant_clock_admission";
    stack.model.script([{ content: "Nothing to do." }]);
    // Read before the runner's first step, whose writes move the marker on: as the admission wrote it.
    let admitted: Map<string, ReservationMarker> | undefined;
    stack.faults.beforeStep = async () => {
      admitted ??= await markersOf(tenantId);
    };
    const started = await startAsyncRun(stack, tenantId, "hello");
    expect(started.startedAt).toBe(new Date(AT).toISOString());
    await stack.executions.get(started.runId)?.done;
    delete stack.faults.beforeStep;

    expect([...(admitted ?? [])]).toEqual([
      [
        markerName(runKey(started.runId)),
        {
          version: 1,
          open: { [namesOf("usr_idem").tenant.live]: 1 }, // its slot among the tenant's runs in flight
          expiresAtSeconds: AT / 1000 + ASYNC_RUN_TIMEOUT_S + APPROVAL_TIMEOUT_S + QUOTA_WAIT_S,
        },
      ],
    ]);
  });

  it("completes the run: its model call is timed by what the run's deadline leaves on that clock", async () => {
    const tenantId = "tenant_clock_model";
    stack.model.script([{ content: "Nothing to do." }]);
    const started = await startAsyncRun(stack, tenantId, "hello");
    const done = await pollUntil(stack, started.runId, tenantId, ["running"]);
    expect(done).toMatchObject({ status: "completed", answer: "Nothing to do.", cycles: 1 });
    expect(stack.model.requests.at(-1)?.messages.at(-1)).toMatchObject({ role: "user", content: "hello" });
  });
});

describe("a synchronous run on an injected clock", () => {
  it("records its start on the clock its deadline and duration go by", async () => {
    const tenantId = "tenant_clock_sync";
    const runId = await syncRun(tenantId);
    const read = await stack.invoke(runPathEvent(runId, tenantId));
    // The clock does not move during the run: it took 0 ms of it.
    expect(RunRecordSchema.parse(JSON.parse(read.body ?? ""))).toMatchObject({
      status: "completed",
      startedAt: new Date(AT).toISOString(),
      durationMs: 0,
    });
  });
});

describe("an Idempotency-Key held by a synchronous run on an injected clock", () => {
  it("tells a concurrent retry to come back within the run's budget", async () => {
    const tenantId = "tenant_clock_lease";
    const held = holdModelCall();
    const first = stack.invoke(runEvent({ key: "lease-1", tenantId, prompt: "hello" }));
    try {
      // The first request holds the key once its model call is in flight.
      await held.inFlight();
      const retried = await stack.invoke(runEvent({ key: "lease-1", tenantId, prompt: "hello" }));
      expect(retried.statusCode, retried.body).toBe(409);
      expect(JSON.parse(retried.body ?? "")).toMatchObject({ code: "IDEMPOTENCY_KEY_IN_USE" });
      // The key is held until the run's deadline, at most its budget from now.
      const retryAfter = Number(retried.headers?.["retry-after"]);
      expect(retryAfter).toBeGreaterThanOrEqual(1);
      expect(retryAfter).toBeLessThanOrEqual(stack.config.limits.runTimeoutMs / 1000);
    } finally {
      held.release();
    }
    expect((await first).statusCode).toBe(200);
  });
});

describe("continuing a run still in progress on an injected clock", () => {
  it("is 409 PREVIOUS_RUN_IN_PROGRESS with Retry-After the seconds to its deadline on that clock", async () => {
    const tenantId = "tenant_clock_continue";
    const held = holdModelCall();
    const started = await startAsyncRun(stack, tenantId, "hello");
    try {
      await held.inFlight();
      const body = JSON.stringify({ prompt: "and then?", previousRunId: started.runId });
      const refused = await stack.invoke(runEvent({ tenantId, body }));
      expect(refused.statusCode, refused.body).toBe(409);
      expect(JSON.parse(refused.body ?? "")).toMatchObject({ code: "PREVIOUS_RUN_IN_PROGRESS" });
      // The clock has not moved since the run started: its whole timeout is left.
      expect(refused.headers?.["retry-after"]).toBe(String(ASYNC_RUN_TIMEOUT_S));
    } finally {
      held.release();
    }
    expect((await pollUntil(stack, started.runId, tenantId, ["running"])).status).toBe("completed");
  });
});

/** A run's times as stored (record, audit steps) and as its events carry them (`at`), each in order. */
async function timesOf(tenantId: string, runId: string) {
  const stored = await stack.deps.runs.get(tenantId, runId);
  if (!stored) throw new Error(`run ${runId} is not stored`);
  const { startedAt, updatedAt, finishedAt, expiresAt } = stored.run;
  const { events } = await stack.deps.runEvents.store.read(tenantId, runId, 0);
  return {
    run: { startedAt, updatedAt, finishedAt, expiresAt },
    steps: stored.steps.map((step) => step.recordedAt),
    events: events.map((event) => event.at),
  };
}

const iso = (ms: number) => new Date(ms).toISOString();
/** A span time (`[seconds, nanoseconds]`) in epoch milliseconds. */
const hrMs = (time: [number, number]) => time[0] * 1000 + Math.round(time[1] / 1e6);

describe("one clock per run", () => {
  it("dates a synchronous run's record, steps and events by the run's clock, its end not before its start", async () => {
    const tenantId = "tenant_clock_sync_times";
    const runId = await syncRun(tenantId);
    const now = iso(clock.now());
    const times = await timesOf(tenantId, runId);
    // The clock stands still: every time the run wrote is its one instant.
    expect(times.run).toEqual({
      startedAt: now,
      updatedAt: now,
      finishedAt: now,
      expiresAt: iso(clock.now() + stack.config.runs.ttlSeconds * 1000),
    });
    expect(times.steps).toEqual([now]);
    expect(times.events.length).toBeGreaterThan(1);
    expect(new Set(times.events)).toEqual(new Set([now]));
  });

  it("dates a durable run's record, steps, events and agent span by the run's clock as it moves", async () => {
    const tenantId = "tenant_clock_durable_times";
    stack.model.script([{ content: "Nothing to do." }]);
    const startMs = clock.now();
    // The clock moves 1 s as the runner's first step begins: what its steps write is dated 1 s after the start.
    let moved = false;
    stack.faults.beforeStep = () => {
      if (!moved) clock.advance(1_000);
      moved = true;
    };
    const started = await startAsyncRun(stack, tenantId, "hello");
    await stack.executions.get(started.runId)?.done;
    delete stack.faults.beforeStep;
    const endIso = iso(startMs + 1_000);
    const times = await timesOf(tenantId, started.runId);
    expect(times.run).toEqual({
      startedAt: iso(startMs),
      updatedAt: endIso,
      finishedAt: endIso,
      expiresAt: iso(startMs + stack.config.runs.ttlSeconds * 1000),
    });
    expect(times.steps).toEqual([endIso]);
    // run.started is emitted as the runner resumes the run, before its first step moved the clock.
    expect(times.events).toEqual([iso(startMs), endIso, endIso]);
    // An end read from another clock, before the start, would be cut to the start by the SDK: 0 ms.
    const { agent } = runTrace(tracing.exporter, started.runId);
    expect([hrMs(agent.startTime), hrMs(agent.endTime)]).toEqual([startMs, startMs + 1_000]);
  });

  it("ends a cancelled durable run's record and agent span at the cancel on the run's clock", async () => {
    const tenantId = "tenant_clock_cancel";
    const held = holdModelCall();
    const startMs = clock.now();
    const started = await startAsyncRun(stack, tenantId, "hello");
    try {
      await held.inFlight();
      clock.advance(2_000);
      const cancelled = await stack.invoke(runPathEvent(started.runId, tenantId, "cancel"));
      expect(cancelled.statusCode, cancelled.body).toBe(200);
    } finally {
      held.release();
    }
    await stack.executions.get(started.runId)?.done.catch(() => undefined);
    const { run } = await timesOf(tenantId, started.runId);
    expect([run.startedAt, run.finishedAt]).toEqual([iso(startMs), iso(startMs + 2_000)]);
    // The stopped execution never reaches run:finish: the cancel emits the span, ended on the run's clock.
    const { agent } = runTrace(tracing.exporter, started.runId);
    expect([hrMs(agent.startTime), hrMs(agent.endTime)]).toEqual([startMs, startMs + 2_000]);
  });

  it("dates an approval asked for during a durable run, and its decision, by the run's clock", async () => {
    const tenantId = "tenant_clock_approval";
    const asked = clock.now();
    stack.model.usePlanner();
    const { approval, target } = await approvalRuns(stack).pausedRun(tenantId);
    expect([approval.requestedAt, approval.expiresAt]).toEqual([
      iso(asked),
      iso(asked + APPROVAL_TIMEOUT_S * 1000),
    ]);
    clock.advance(5_000);
    const decided = await decide(stack, target, "approve");
    expect(decided.statusCode, decided.body).toBe(200);
    expect(json(decided)).toMatchObject({ status: "approved", decidedAt: iso(asked + 5_000) });
    const done = await pollUntil(stack, target.runId, tenantId);
    expect(done.status).toBe("completed");
    const results = done.steps.flatMap((step) => step.toolCalls.map((call) => call.result));
    expect(results.find((result) => result.metadata.approval)?.metadata.approval).toMatchObject({
      decision: "approved",
      decidedAt: iso(asked + 5_000),
    });
  });

  it("reads a pending approval as expired once its timeout has passed on the run's clock", async () => {
    const tenantId = "tenant_clock_approval_expiry";
    stack.model.usePlanner();
    const { target } = await approvalRuns(stack).pausedRun(tenantId);
    clock.advance(APPROVAL_TIMEOUT_S * 1000);
    const late = await decide(stack, target, "approve");
    expect(late.statusCode, late.body).toBe(409);
    expect(json(late)).toMatchObject({ code: "APPROVAL_EXPIRED", approvalStatus: "pending" });
    // The run's wait ends on the SDK's timer, which runs on real time (shared/durable/runner.ts): cancel it.
    const cancelled = await stack.invoke(runPathEvent(target.runId, tenantId, "cancel"));
    expect(cancelled.statusCode, cancelled.body).toBe(200);
    await stack.executions.get(target.runId)?.done.catch(() => undefined);
    const stored = await stack.deps.approvals.get(tenantId, target.runId, target.approvalId);
    expect(stored?.approval).toMatchObject({ status: "cancelled", decidedAt: iso(clock.now()) });
  });

  it("reads a run, and a conversation's head, as gone once their expiry has passed on that clock", async () => {
    const tenantId = "tenant_clock_expiry";
    const runId = await syncRun(tenantId);
    expect((await stack.invoke(runPathEvent(runId, tenantId))).statusCode).toBe(200);
    const events = () => stack.deps.runEvents.store.read(tenantId, runId, 0).then((page) => page.events);
    expect((await events()).length).toBeGreaterThan(1);
    const conversations = stack.deps.conversations;
    const move = { from: undefined, to: runId, prior: null };
    expect(await conversations.advance(tenantId, "usr_idem", "ctx-1", move)).toBe("advanced");
    const head = () => conversations.head(tenantId, "usr_idem", "ctx-1");
    expect((await head())?.updatedAt).toBe(iso(clock.now()));
    // Last in this file: the clock moves past the retention of every record written so far.
    clock.advance(stack.config.runs.ttlSeconds * 1000);
    const read = await stack.invoke(runPathEvent(runId, tenantId));
    expect(read.statusCode, read.body).toBe(404);
    expect(await stack.deps.runs.get(tenantId, runId)).toBeUndefined();
    expect(await events()).toEqual([]);
    expect(await head()).toBeUndefined();
    // Continuing it judges its expiry on the same clock: gone, with the expired answer.
    const body = JSON.stringify({ prompt: "and then?", previousRunId: runId });
    const continued = await stack.invoke(runEvent({ tenantId, body }));
    expect(continued.statusCode, continued.body).toBe(404);
    expect(json(continued)).toMatchObject({ code: "NOT_FOUND", expired: true });
  });
});
