import { randomUUID } from "node:crypto";
import { EventType, HttpAgent } from "@ag-ui/client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PROMPT_MAX_CHARS } from "../shared/runs/run-request.js";
import {
  aguiAgentAt,
  CALLERS,
  eventsOfType,
  type ProtocolStack,
  runAgui,
  SEED_PROMPT,
  startProtocolStack,
} from "./support/protocols.js";

let env: ProtocolStack;
beforeAll(async () => {
  env = await startProtocolStack();
});
afterAll(async () => {
  await env?.stop();
});

/** The official AG-UI client for one caller on one thread (default a new one), with its first user message. */
const agentAs = (token: string, prompt: string, threadId?: string) =>
  aguiAgentAt(`${env.dev.url}/v1/agui`, token, prompt, threadId);

describe("AG-UI through the official HttpAgent, against the real handler behind the dev gateway", () => {
  it("runs the seed scenario: steps per cycle, each tool call with the backend's 300.00 / 1800.00, the answer, RUN_FINISHED; a repeated run id gives no second invoice", async () => {
    const agent = agentAs(env.tokens.alice, SEED_PROMPT);
    const { events, outcome, runId } = await runAgui(agent);
    const types = events.map((event) => event.type);
    expect(types[0]).toBe(EventType.RUN_STARTED);
    expect(types.at(-1)).toBe(EventType.RUN_FINISHED);
    expect(eventsOfType<{ stepName: string }>(events, EventType.STEP_STARTED).map((e) => e.stepName)).toEqual(
      ["cycle 1", "cycle 2", "cycle 3"],
    );
    expect(
      eventsOfType<{ toolCallName: string }>(events, EventType.TOOL_CALL_START).map((e) => e.toolCallName),
    ).toEqual(["calculateTax", "calculateTax", "recordInvoice"]);
    const results = eventsOfType<{ content: string }>(events, EventType.TOOL_CALL_RESULT).map((e) =>
      JSON.parse(e.content),
    );
    expect(results[0]).toMatchObject({
      status: "success",
      data: { taxAmount: { amount: "300.00" }, grossTotal: { amount: "1800.00" } },
    });
    expect(results[1]).toMatchObject({
      status: "business_error",
      error: { code: "UNSUPPORTED_JURISDICTION" },
    });
    expect(results[2]).toMatchObject({ status: "success", metadata: { toolName: "recordInvoice" } });
    const [text] = eventsOfType<{ delta: string }>(events, EventType.TEXT_MESSAGE_CONTENT);
    expect(text?.delta).toContain("1800.00");
    expect(outcome.result).toMatchObject({ status: "completed", cycles: 3 });
    expect(agent.messages.some((message) => message.role === "tool")).toBe(true);
    expect(await env.stack.deps.ledger.list("tenant_uk_01")).toHaveLength(1);

    const again = await runAgui(agentAs(env.tokens.alice, SEED_PROMPT, agent.threadId), runId);
    expect(again.outcome.result).toMatchObject({ runId: (outcome.result as { runId: string }).runId });
    expect(await env.stack.deps.ledger.list("tenant_uk_01")).toHaveLength(1);
  });

  it("continues a thread: the second run continues the first; another user's equal thread id is a thread of their own", async () => {
    const threadId = randomUUID();
    const first = await runAgui(agentAs(env.tokens.alice, "What is the UK VAT on 100 GBP?", threadId));
    const second = await runAgui(agentAs(env.tokens.alice, "And on 200 GBP?", threadId));
    const started = eventsOfType<{ rawEvent: { previousRunId: string | null } }>(
      second.events,
      EventType.RUN_STARTED,
    );
    expect(started[0]?.rawEvent.previousRunId).toBe((first.outcome.result as { runId: string }).runId);
    const bob = await runAgui(agentAs(env.tokens.bob, "What is the UK VAT on 5 GBP?", threadId));
    const bobStarted = eventsOfType<{ rawEvent: { previousRunId: string | null } }>(
      bob.events,
      EventType.RUN_STARTED,
    );
    expect(bobStarted[0]?.rawEvent.previousRunId).toBeNull();
  });

  it("resumes through the official HttpAgent: the same input with Last-Event-ID reopens the run, then every later event once", async () => {
    const threadId = randomUUID();
    const runId = randomUUID();
    const prompt = "What is the UK VAT on 40 GBP?";
    const first = await runAgui(agentAs(env.tokens.alice, prompt, threadId), runId);
    const resumedAgent = new HttpAgent({
      url: `${env.dev.url}/v1/agui`,
      headers: { authorization: `Bearer ${env.tokens.alice}`, "last-event-id": "1" },
      threadId,
      initialMessages: [{ id: randomUUID(), role: "user", content: prompt }],
    });
    // The client checks every stream it reads from its start: a resumed one must open with RUN_STARTED.
    const resumed = await runAgui(resumedAgent, runId);
    expect(resumed.outcome.result).toEqual(first.outcome.result);
    expect(resumed.events.map((event) => event.type)).toEqual(first.events.map((event) => event.type));
  });

  it("resumes mid-cycle as the unbroken stream goes on: RUN_STARTED and the open step again (no id), then a tool result closes the step it was called in", async () => {
    const threadId = randomUUID();
    const runId = randomUUID();
    const prompt = "Tax on 45 GBP for a UK client";
    await runAgui(agentAs(env.tokens.alice, prompt, threadId), runId);
    const stream = async (lastEventId?: string) => {
      const response = await env.fetchAs(env.tokens.alice)(`${env.dev.url}/v1/agui`, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          accept: "text/event-stream",
          ...(lastEventId ? { "last-event-id": lastEventId } : {}),
        },
        body: JSON.stringify({
          threadId,
          runId,
          messages: [{ id: "m1", role: "user", content: prompt }],
          tools: [],
          context: [],
        }),
      });
      return (await response.text()).split("\n\n").filter(Boolean);
    };
    const unbroken = await stream();
    // Event 3 is the tool call's start: the client saw cycle 1 open and the call made, not its result.
    const cut = unbroken.findIndex((block) => block.startsWith("id: 3\n"));
    expect(unbroken[cut]).toContain('"TOOL_CALL_END"');
    const withoutId = (block: string | undefined) => block?.replace(/^id: [0-9]+\n/, "");
    const reopenStep = unbroken.find((block) => block.includes('"STEP_STARTED"'));
    const resumed = await stream("3");
    expect(resumed).toEqual([withoutId(unbroken[0]), withoutId(reopenStep), ...unbroken.slice(cut + 1)]);
    expect(resumed.slice(0, 5).map((block) => JSON.parse(block.split("data: ")[1] ?? "{}").type)).toEqual([
      "RUN_STARTED",
      "STEP_STARTED",
      "TOOL_CALL_RESULT",
      "STEP_FINISHED",
      "STEP_STARTED",
    ]);
    // A stream resumed after its last event has nothing to send: no RUN_STARTED alone.
    const last = [...unbroken.join("\n\n").matchAll(/^id: ([0-9]+)$/gm)].at(-1)?.[1];
    expect(await stream(last)).toEqual([]);
  });

  it("answers a retry that raced its run's first request with that run, never PREVIOUS_RUN_IN_PROGRESS against itself", async () => {
    const threadId = randomUUID();
    const runId = randomUUID();
    const prompt = "What is the UK VAT on 30 GBP?";
    const first = await runAgui(agentAs(env.tokens.alice, prompt, threadId), runId);
    const boundloopRunId = (first.outcome.result as { runId: string }).runId;
    // The interleaving of a retry sent while the first request starts: the retry reads no run record
    // (not written yet), then the thread's head (already this run), then the run going.
    const runs = env.stack.deps.runs;
    const { getRecord, readContinuation } = runs;
    let reads = 0;
    runs.getRecord = async (tenantId, id, ...rest) => {
      const record = await getRecord.call(runs, tenantId, id, ...rest);
      if (id !== boundloopRunId || !record) return record;
      reads += 1;
      return reads === 1 ? undefined : { ...record, status: "running", finishedAt: null };
    };
    runs.readContinuation = async (tenantId, id, ...rest) => {
      const read = await readContinuation.call(runs, tenantId, id, ...rest);
      if (id !== boundloopRunId || read.kind !== "found") return read;
      return { ...read, run: { ...read.run, status: "running", finishedAt: null }, transcript: undefined };
    };
    try {
      const retry = await runAgui(agentAs(env.tokens.alice, prompt, threadId), runId);
      expect(eventsOfType<{ code: string }>(retry.events, EventType.RUN_ERROR)).toEqual([]);
      expect(retry.outcome.result).toEqual(first.outcome.result);
    } finally {
      runs.getRecord = getRecord;
      runs.readContinuation = readContinuation;
    }
  });

  it("tells a retry whose run id another request still holds to send again (RUN_ERROR IDEMPOTENCY_KEY_IN_USE), never an empty stream", async () => {
    const runId = randomUUID();
    const idempotency = env.stack.deps.idempotency;
    const { acquire } = idempotency;
    // The first request of this run id holds its key and has not written its run yet.
    idempotency.acquire = async (input) =>
      input.idempotencyKey === `agui:${runId}`
        ? ({ kind: "in_progress", retryAfterSeconds: 3 } as unknown as Awaited<ReturnType<typeof acquire>>)
        : acquire.call(idempotency, input);
    try {
      const retry = await runAgui(agentAs(env.tokens.alice, "What is the UK VAT on 31 GBP?"), runId);
      expect(retry.events).toEqual([
        expect.objectContaining({
          type: EventType.RUN_ERROR,
          code: "IDEMPOTENCY_KEY_IN_USE",
          rawEvent: expect.objectContaining({ code: "IDEMPOTENCY_KEY_IN_USE", retryAfterSeconds: 3 }),
        }),
      ]);
    } finally {
      idempotency.acquire = acquire;
    }
  });

  it("refuses bad input with problem+json before any stream; a run id reused for another input is RUN_ERROR with its code", async () => {
    const post = (body: unknown) =>
      env.fetchAs(env.tokens.alice)(`${env.dev.url}/v1/agui`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(body),
      });
    const noText = await post({ threadId: "t", runId: "r", messages: [], tools: [], context: [] });
    expect(noText.status).toBe(400);
    expect(noText.headers.get("content-type")).toMatch(/problem\+json/);
    const badKey = await post({
      threadId: "t",
      runId: "r".repeat(256),
      messages: [{ id: "m", role: "user", content: "Hi" }],
      tools: [],
      context: [],
    });
    expect(badKey.status).toBe(400);
    expect(((await badKey.json()) as { errors: Array<{ path: string }> }).errors[0]?.path).toBe("runId");
    const tooLong = await post({
      threadId: "t",
      runId: "r-long",
      messages: [{ id: "m", role: "user", content: `Hi ${"x".repeat(PROMPT_MAX_CHARS)}` }],
      tools: [],
      context: [],
    });
    expect(tooLong.status).toBe(400);
    expect(((await tooLong.json()) as { errors: Array<{ path: string }> }).errors[0]?.path).toBe("messages");
    const runId = randomUUID();
    await runAgui(agentAs(env.tokens.alice, "What is the UK VAT on 1 GBP?"), runId);
    const reused = await runAgui(agentAs(env.tokens.alice, "Something else"), runId);
    expect(reused.events).toEqual([
      expect.objectContaining({
        type: EventType.RUN_ERROR,
        code: "IDEMPOTENCY_KEY_REUSED",
        message: "This run id was already used for different input; use a new run id for new input.",
        rawEvent: { code: "IDEMPOTENCY_KEY_REUSED", facts: {}, retryAfterSeconds: null },
      }),
    ]);
  });

  it("refuses a last user message with a part that is not text (a file) with problem+json, never a run on its words alone", async () => {
    const runsOf = async () =>
      ((await (await env.fetchAs(env.tokens.bob)(`${env.dev.url}/v1/runs`)).json()) as { items: unknown[] })
        .items.length;
    const before = await runsOf();
    const response = await env.fetchAs(env.tokens.bob)(`${env.dev.url}/v1/agui`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({
        threadId: randomUUID(),
        runId: randomUUID(),
        messages: [
          {
            id: "m",
            role: "user",
            content: [
              { type: "text", text: "Record the invoice in the attached file for a UK client" },
              { type: "binary", mimeType: "application/pdf", url: "https://example.com/invoice.pdf" },
            ],
          },
        ],
        tools: [],
        context: [],
      }),
    });
    expect(response.status).toBe(400);
    expect(await response.json()).toMatchObject({
      code: "INVALID_REQUEST",
      errors: [{ in: "body", path: "messages.0.content.1" }],
    });
    expect(await runsOf()).toBe(before);
  });

  it("keys runs per caller: another user's or tenant's equal run id is a run of their own, and never shows the first", async () => {
    const runId = randomUUID();
    const threadId = randomUUID();
    const first = await runAgui(agentAs(env.tokens.alice, "What is the UK VAT on 3 GBP?", threadId), runId);
    const firstRun = (first.outcome.result as { runId: string }).runId;
    for (const token of [env.tokens.bob, env.tokens.mallory]) {
      const other = await runAgui(agentAs(token, "What is the UK VAT on 3 GBP?", threadId), runId);
      const otherRun = (other.outcome.result as { runId: string }).runId;
      expect(otherRun).not.toBe(firstRun);
      const started = eventsOfType<{ rawEvent: { previousRunId: string | null } }>(
        other.events,
        EventType.RUN_STARTED,
      );
      expect(started[0]?.rawEvent.previousRunId).toBeNull();
    }
    expect((await env.stack.deps.runs.get(CALLERS.alice.tenant_id, firstRun))?.run.userId).toBe(
      CALLERS.alice.sub,
    );
    expect(await env.stack.deps.runs.get(CALLERS.alice.tenant_id, `${firstRun}x`)).toBeUndefined();
  });
});
