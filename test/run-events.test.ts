import fc from "fast-check";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { ProblemSchema, RunResponseSchema } from "../functions/api/contract.js";
import { OPEN_COMMENT } from "../functions/api/routes/events.js";
import type { ScriptedReply } from "../local/model-server.js";
import type { RunEvent } from "../shared/runs/events.js";
import { SEED_PROMPT } from "./support/approvals.js";
import { startTestStack, type TestStack } from "./support/stack.js";
import {
  functionUrlEvent,
  ManualClock,
  parseSse,
  runEventsOf,
  SEED_RUN_EVENT_TYPES,
  startStreamEntry,
  streamingStack,
} from "./support/streaming.js";

// docs/run-events.md: the seed run's events over the real streaming handler, read with eventsource-parser.
const SEED_USER = { sub: "usr_9918", tenant_id: "tenant_uk_01", scope: "billing:write" };

const env = streamingStack(SEED_USER);
beforeEach(() => {
  env.stack.model.usePlanner();
});

/** Streams the seed run through POST /v1/runs on the streaming entry; returns its SSE read. */
async function streamSeedRun(headers: Record<string, string> = {}) {
  const response = await env.entry.request(
    functionUrlEvent("POST", "/v1/runs", {
      token: env.token,
      headers: { accept: "text/event-stream", ...headers },
      body: { prompt: SEED_PROMPT },
    }),
  );
  await response.done;
  await response.body;
  return response;
}

/** GET /v1/runs/{runId}/events on the streaming entry, read to its end. */
async function readEvents(
  runId: string,
  options: { after?: string; lastEventId?: string; as?: string } = {},
) {
  const response = await env.entry.request(
    functionUrlEvent("GET", `/v1/runs/${runId}/events${options.after ? `?after=${options.after}` : ""}`, {
      token: options.as ?? env.token,
      headers: options.lastEventId === undefined ? {} : { "last-event-id": options.lastEventId },
    }),
  );
  await response.done;
  return { ...response, text: await response.body };
}

describe("a streamed synchronous seed run (POST /v1/runs, Accept: text/event-stream)", () => {
  let streamed: Awaited<ReturnType<typeof streamSeedRun>>;
  let events: RunEvent[];
  beforeAll(async () => {
    streamed = await streamSeedRun();
    events = runEventsOf(streamed.read);
  });

  it("streams the run's typed events in order, with consecutive ids, then the JSON answer as run.outcome", () => {
    expect(streamed.metadata.statusCode).toBe(200);
    expect(streamed.metadata.headers?.["content-type"]).toBe("text/event-stream");
    expect(events.map((e) => e.type)).toEqual(SEED_RUN_EVENT_TYPES);
    expect(streamed.read.messages.slice(0, -1).map((m) => m.id)).toEqual(events.map((_, i) => String(i + 1)));
    expect(streamed.read.messages.map((m) => m.event).slice(0, -1)).toEqual(SEED_RUN_EVENT_TYPES);
    const outcome = streamed.read.messages.at(-1);
    expect(outcome?.event).toBe("run.outcome");
    expect(outcome?.id).toBeUndefined();
    const answer = RunResponseSchema.parse(JSON.parse(outcome?.data ?? ""));
    expect(answer.status).toBe("completed");
    expect(answer.toolResults.map((r) => r.status)).toEqual(["success", "business_error", "success"]);
  });

  it("carries what the run did: limits, finish reasons, tool names, categories, codes, the invoice's idempotency key", () => {
    const answer = RunResponseSchema.parse(JSON.parse(streamed.read.messages.at(-1)?.data ?? ""));
    const [started] = events;
    expect(started).toMatchObject({ type: "run.started", runId: answer.runId, seq: 1, previousRunId: null });
    expect(started).toMatchObject({
      limits: { maxCycles: env.stack.config.limits.maxCycles, timeoutMs: 25_000 },
    });
    const models = events.filter((e) => e.type === "model.call.finished");
    expect(models.map((e) => [e.cycle, e.finishReason])).toEqual([
      [1, "tool_calls"],
      [2, "tool_calls"],
      [3, "stop"],
    ]);
    const finished = events.filter((e) => e.type === "tool.call.finished");
    expect(finished.map((e) => [e.name, e.status, e.errorCode])).toEqual([
      ["calculateTax", "success", null],
      ["calculateTax", "business_error", "UNSUPPORTED_JURISDICTION"],
      ["recordInvoice", "success", null],
    ]);
    expect(finished.map((e) => e.toolCallId)).toEqual(answer.toolResults.map((r) => r.metadata.toolCallId));
    expect(finished[2]?.idempotencyKey).toBe(answer.toolResults[2]?.metadata.idempotencyKey);
    expect(finished[2]?.idempotencyKey).toMatch(/\S/);
    const startedCalls = events.filter((e) => e.type === "tool.call.started");
    expect(startedCalls[0]).toMatchObject({
      name: "calculateTax",
      arguments: { amount: "1500", currency: "GBP" },
    });
    const last = events.at(-1);
    expect(last).toMatchObject({
      type: "run.finished",
      status: "completed",
      answer: answer.answer,
      cycles: 3,
      usage: answer.usage,
    });
    // Nothing the run was asked (its prompt) is in any event.
    expect(JSON.stringify(events)).not.toContain(SEED_PROMPT);
  });

  it("stores the same events: GET /v1/runs/{runId}/events replays them and closes after run.finished", async () => {
    const { runId } = events[0] as RunEvent;
    const read = await readEvents(runId);
    expect(read.metadata.statusCode).toBe(200);
    const stored = runEventsOf(read.read);
    expect(stored.map(({ at: _at, ...rest }) => rest)).toEqual(events.map(({ at: _at, ...rest }) => rest));
    expect(read.read.retries).toEqual([]);
    expect(read.text.trimEnd().endsWith(`id: ${events.length}`)).toBe(true);
  });

  it("resumes from every event id with every later event exactly once, in order (Last-Event-ID or ?after=)", async () => {
    const { runId } = events[0] as RunEvent;
    const ids = events.map((e) => e.seq);
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 0, max: ids.length }), fc.boolean(), async (after, useHeader) => {
        const read = await readEvents(
          runId,
          useHeader ? { lastEventId: String(after) } : { after: String(after) },
        );
        const resumed = runEventsOf(read.read);
        expect(resumed.map((e) => e.seq)).toEqual(ids.slice(after));
        const before = events.slice(0, after).map((e) => e.seq);
        expect([...before, ...resumed.map((e) => e.seq)]).toEqual(ids);
      }),
      { numRuns: 2 * (ids.length + 1) },
    );
  });
});

describe("who may read a run's events", () => {
  let runId: string;
  beforeAll(async () => {
    const streamed = await streamSeedRun();
    runId = (runEventsOf(streamed.read)[0] as RunEvent).runId;
  });

  it.each([
    [
      "another tenant's user",
      { sub: "usr_9918", tenant_id: "tenant_other", scope: "billing:read billing:write" },
    ],
    ["another user of the tenant", { sub: "usr_other", tenant_id: "tenant_uk_01", scope: "billing:write" }],
  ])("%s gets 404 problem+json and no event", async (_who, claims) => {
    const read = await readEvents(runId, { as: await env.entry.token(claims) });
    expect(read.metadata.statusCode).toBe(404);
    expect(read.metadata.headers?.["content-type"]).toBe("application/problem+json");
    expect(ProblemSchema.parse(JSON.parse(read.text)).code).toBe("NOT_FOUND");
  });

  it("a billing reader of the tenant sees them, as GET /v1/runs/{runId} allows", async () => {
    const reader = await env.entry.token({
      sub: "usr_auditor",
      tenant_id: "tenant_uk_01",
      scope: "billing:read",
    });
    const read = await readEvents(runId, { as: reader });
    expect(runEventsOf(read.read).map((e) => e.type)).toEqual(SEED_RUN_EVENT_TYPES);
  });

  it("no token, a foreign token: 401 and nothing runs", async () => {
    const foreign = await import("../local/dev-auth.js").then(async (auth) =>
      auth.mintToken(await auth.createDevIssuer(), SEED_USER),
    );
    for (const bad of [undefined, foreign, "not-a-jwt"]) {
      const response = await env.entry.request(
        functionUrlEvent("GET", `/v1/runs/${runId}/events`, { token: bad }),
      );
      await response.done;
      expect(response.metadata.statusCode).toBe(401);
      expect(ProblemSchema.parse(JSON.parse(await response.body)).code).toBe("UNAUTHENTICATED");
    }
  });
});

describe("a streamed run under an Idempotency-Key", () => {
  const keyed = (key: string, prompt = SEED_PROMPT) =>
    functionUrlEvent("POST", "/v1/runs", {
      token: env.token,
      headers: { accept: "text/event-stream", "idempotency-key": `"${key}"` },
      body: { prompt },
    });

  it("a replay of the finished run streams its stored events, then the stored answer, without a model call", async () => {
    const key = `stream-${crypto.randomUUID()}`;
    const first = await env.entry.request(keyed(key));
    await first.done;
    const firstEvents = runEventsOf(first.read);
    expect(firstEvents.map((e) => e.type)).toEqual(SEED_RUN_EVENT_TYPES);
    const modelCalls = env.stack.model.requests.length;
    const again = await env.entry.request(keyed(key));
    await again.done;
    expect(again.metadata.headers?.["idempotent-replayed"]).toBe("true");
    expect(runEventsOf(again.read).map(({ at: _at, ...rest }) => rest)).toEqual(
      firstEvents.map(({ at: _at, ...rest }) => rest),
    );
    const [outcome, replayed] = [first, again].map((r) => r.read.messages.at(-1));
    expect(replayed?.event).toBe("run.outcome");
    expect(JSON.parse(replayed?.data ?? "")).toEqual(JSON.parse(outcome?.data ?? ""));
    expect(env.stack.model.requests.length).toBe(modelCalls);
  });

  it("the key while its run is going: 409 IDEMPOTENCY_KEY_IN_USE as problem+json, not a stream; the run goes on", async () => {
    const key = `stream-${crypto.randomUUID()}`;
    const store = env.stack.deps.runEvents.store;
    const append = store.append.bind(store);
    let held: () => void = () => {};
    const holding = new Promise<void>((resolve) => {
      held = resolve;
    });
    let release: () => void = () => {};
    const released = new Promise<void>((resolve) => {
      release = resolve;
    });
    // The run's first event batch (the end of cycle 1) waits until the second request was answered.
    store.append = async (...args) => {
      held();
      await released;
      return append(...args);
    };
    try {
      const first = await env.entry.request(keyed(key));
      await holding;
      const second = await env.entry.request(keyed(key));
      await second.done;
      expect(second.metadata.statusCode).toBe(409);
      expect(second.metadata.headers?.["content-type"]).toMatch(/^application\/problem\+json/);
      expect(ProblemSchema.parse(JSON.parse(await second.body)).code).toBe("IDEMPOTENCY_KEY_IN_USE");
      release();
      await first.done;
      expect(runEventsOf(first.read).map((e) => e.type)).toEqual(SEED_RUN_EVENT_TYPES);
      expect(first.read.messages.at(-1)?.event).toBe("run.outcome");
    } finally {
      store.append = append;
      release();
    }
  });

  it("the key with another body: 422 IDEMPOTENCY_KEY_REUSED as problem+json, and no run", async () => {
    const key = `stream-${crypto.randomUUID()}`;
    const first = await env.entry.request(keyed(key, "Tax on 200 BDT for a client in Bangladesh."));
    await first.done;
    const modelCalls = env.stack.model.requests.length;
    const other = await env.entry.request(keyed(key, "Tax on 300 BDT for a client in Bangladesh."));
    await other.done;
    expect(other.metadata.statusCode).toBe(422);
    expect(ProblemSchema.parse(JSON.parse(await other.body)).code).toBe("IDEMPOTENCY_KEY_REUSED");
    expect(other.read.messages).toEqual([]);
    expect(env.stack.model.requests.length).toBe(modelCalls);
  });
});

describe("a stream of a run that is still going", () => {
  it("sends heartbeats on the injected clock, then a retry: hint before the stream's limit, and resumes", async () => {
    const clock = new ManualClock();
    const original = env.stack.deps.clock;
    env.stack.deps.clock = clock;
    try {
      const runId = `run_${crypto.randomUUID()}`;
      await env.stack.deps.runs.start({
        tenantId: "tenant_uk_01",
        runId,
        userId: "usr_9918",
        prompt: "x",
        limits: { maxCycles: 5, timeoutMs: 25_000 },
      });
      const response = await env.entry.request(
        functionUrlEvent("GET", `/v1/runs/${runId}/events`, { token: env.token }),
      );
      const { heartbeatMs, maxMs } = env.stack.config.stream;
      const { pollMs } = env.stack.config.stream;
      // Quiet for just under a heartbeat: no comment yet.
      for (let waited = 0; waited + pollMs < heartbeatMs; waited += pollMs) {
        await clock.untilSleeping();
        clock.advance(pollMs);
      }
      await clock.untilSleeping();
      // The stream opened with a comment at once (the function URL's status line goes with it).
      expect(response.metadata.statusCode).toBe(200);
      expect(response.read.comments).toEqual([OPEN_COMMENT]);
      clock.advance(pollMs);
      await clock.untilSleeping();
      expect(response.read.comments).toEqual([OPEN_COMMENT, "heartbeat"]);
      // Then on to the stream's limit: it ends with the retry hint, having sent no event.
      while (!response.read.retries.length) {
        await clock.untilSleeping();
        clock.advance(heartbeatMs);
        await new Promise((resolve) => setImmediate(resolve));
      }
      await response.done;
      expect(response.read.retries).toEqual([env.stack.config.stream.retryMs]);
      expect(response.read.messages).toEqual([]);
      expect(response.read.comments.length).toBe(1 + Math.floor(maxMs / heartbeatMs));
    } finally {
      env.stack.deps.clock = original;
    }
  });
});

describe("the buffered HTTP API entry", () => {
  it("answers Accept: text/event-stream with the whole stream at the end (within its 29 s)", async () => {
    const { seedEvent } = await import("./support/stack.js");
    const event = seedEvent();
    event.headers = { ...event.headers, accept: "text/event-stream" };
    const result = await env.stack.invoke(event);
    expect(result.statusCode).toBe(200);
    // hono/aws-lambda sends a text/event-stream body base64-encoded (API Gateway decodes it).
    const body = result.isBase64Encoded
      ? Buffer.from(result.body ?? "", "base64").toString("utf8")
      : result.body;
    const read = parseSse(body ?? "");
    expect(runEventsOf(read).map((e) => e.type)).toEqual(SEED_RUN_EVENT_TYPES);
    expect(read.messages.at(-1)?.event).toBe("run.outcome");
  });
});

describe("a client that leaves a streamed run", () => {
  it("does not affect the run: it completes, stores every event and records its invoice once", async () => {
    const leaver = await env.entry.token({
      sub: "usr_leaver",
      tenant_id: "tenant_leave_01",
      scope: "billing:write",
    });
    let hangUp = () => {};
    const response = await env.entry.request(
      functionUrlEvent("POST", "/v1/runs", {
        token: leaver,
        headers: { accept: "text/event-stream" },
        body: { prompt: SEED_PROMPT },
      }),
      // Gone after the first event, before the first model call has answered.
      { onMessage: () => hangUp() },
    );
    hangUp = response.hangUp;
    await response.done;
    const [first] = runEventsOf(response.read);
    expect(response.read.messages.length).toBeLessThan(SEED_RUN_EVENT_TYPES.length);
    const runId = (first as RunEvent).runId;
    const stored = await env.stack.deps.runs.get("tenant_leave_01", runId);
    expect(stored?.run).toMatchObject({ status: "completed", cycles: 3 });
    expect(await env.stack.deps.ledger.list("tenant_leave_01")).toHaveLength(1);
    const page = await env.stack.deps.runEvents.store.read("tenant_leave_01", runId, 0);
    expect(page.events.map((e) => e.type)).toEqual(SEED_RUN_EVENT_TYPES);
  });
});

describe("a streamed synchronous run longer than the HTTP API's 29 s", () => {
  // The run's time goes by the stack's clock (deps.clock: the run's deadline and its durationMs), which
  // each model call moves on by MODEL_CALL_MS as it answers: the run takes 31.5 s of that clock at once.
  const MODEL_CALL_MS = 10_500;
  let slow: TestStack;
  let slowEntry: Awaited<ReturnType<typeof startStreamEntry>>;
  let clock: ManualClock;
  beforeAll(async () => {
    slow = await startTestStack({ POWERTOOLS_LOG_LEVEL: "SILENT", RUN_TIMEOUT_MS: "120000" });
    clock = new ManualClock();
    slow.deps.clock = clock;
    slowEntry = await startStreamEntry(slow.deps);
  });
  afterAll(async () => {
    await slow?.stop();
  });

  /** Scripts `replies`, each answered after the clock moved on by `ms` (the model call's time). */
  function scriptTimed(replies: ScriptedReply[], ms: number) {
    const queue = [...replies];
    slow.model.respond(() => {
      clock.advance(ms);
      return queue.shift() ?? { status: 500 };
    });
  }

  /** Streams POST /v1/runs with `prompt` on the streaming entry (a 15-minute function); returns its answer. */
  async function streamRun(prompt: string) {
    const response = await slowEntry.request(
      functionUrlEvent("POST", "/v1/runs", {
        token: await slowEntry.token(SEED_USER),
        headers: { accept: "text/event-stream" },
        body: { prompt },
      }),
    );
    await response.done;
    const answer = RunResponseSchema.parse(JSON.parse(response.read.messages.at(-1)?.data ?? ""));
    return { answer, events: runEventsOf(response.read) };
  }

  it("completes on the streaming entry (15-minute function), bounded by RUN_TIMEOUT_MS", async () => {
    const gbTax = '{"amount":1500,"currency":"GBP","jurisdiction":"UK"}';
    scriptTimed(
      [
        { toolCalls: [{ id: "c1", name: "calculateTax", arguments: gbTax }] },
        { toolCalls: [{ id: "c2", name: "calculateTax", arguments: gbTax }] },
        { content: "GB tax is 300.00 GBP." },
      ],
      MODEL_CALL_MS,
    );
    const { answer, events } = await streamRun("Tax on 1500 GBP for the UK client.");
    expect(answer.status).toBe("completed");
    expect(answer.durationMs).toBeGreaterThan(29_000);
    expect(answer.durationMs).toBe(3 * MODEL_CALL_MS);
    expect(events.at(-1)).toMatchObject({ type: "run.finished", status: "completed" });
  });

  it("stops at RUN_TIMEOUT_MS (120 s) with deadline_exceeded, the model call cut off", async () => {
    const gbTax = '{"amount":1500,"currency":"GBP","jurisdiction":"UK"}';
    scriptTimed([{ toolCalls: [{ id: "c1", name: "calculateTax", arguments: gbTax }] }], 120_001);
    const { answer, events } = await streamRun("Tax on 1500 GBP for the UK client.");
    expect(answer.status).toBe("deadline_exceeded");
    // The call was made (a cycle) and cut off at the deadline, 120 s after the run started.
    expect(answer.cycles).toBe(1);
    expect(answer.details.deadline).toMatchObject({ phase: "model_call" });
    expect(answer.durationMs).toBe(120_001);
    expect(answer.toolResults).toEqual([]);
    expect(events.at(-1)).toMatchObject({ type: "run.finished", status: "deadline_exceeded" });
  });
});
