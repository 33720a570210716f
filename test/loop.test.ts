import { getEventListeners, once } from "node:events";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import type OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { type LocalModelServer, startModelServer } from "../local/model-server.js";
import { Deadline } from "../shared/agent/deadline.js";
import { createRegistry } from "../shared/agent/dispatcher.js";
import { type CycleRecord, runAgent } from "../shared/agent/loop.js";
import { clampRunLimits } from "../shared/agent/run-limits.js";
import { defineTool } from "../shared/agent/tool.js";
import { loadConfig } from "../shared/config.js";
import { OpenAIChatModel } from "../shared/model/openai-chat.js";
import { createModelClient } from "../shared/model-client.js";

let model: LocalModelServer;
let client: OpenAI;
beforeAll(async () => {
  model = await startModelServer();
  client = createModelClient({ apiKey: "test", baseURL: model.baseURL, maxRetries: 0 });
});
afterAll(async () => {
  await model?.stop();
});

const caps = loadConfig({}).limits;
const security = { userId: "usr_1", tenantId: "tenant_a", permissions: [] };

describe("the bounded loop", () => {
  it("runs the tool calls of one turn concurrently and answers them in call order", async () => {
    const intervals = new Map<string, { start: number; end: number }>();
    const wait = defineTool({
      name: "wait",
      description: "Waits 200 ms.",
      inputSchema: z.object({ label: z.string() }).strict(),
      isMutating: false,
      requiredPermission: undefined,
      handler: async ({ label }) => {
        const start = performance.now();
        await new Promise((resolve) => setTimeout(resolve, label === "a" ? 200 : 150));
        intervals.set(label, { start, end: performance.now() });
        return { label };
      },
    });
    model.script([
      {
        toolCalls: [
          { id: "call_a", name: "wait", arguments: '{"label":"a"}' },
          { id: "call_b", name: "wait", arguments: '{"label":"b"}' },
        ],
      },
      { content: "done" },
    ]);
    const deadline = new Deadline(10_000);
    const cycleRecords: CycleRecord[] = [];
    const outcome = await runAgent({
      hooks: { onCycle: (record) => void cycleRecords.push(record) },
      model: new OpenAIChatModel(client, "scripted"),
      tools: createRegistry([wait] as never[]),
      security,
      prompt: "wait twice",
      runId: "run_c",
      runScope: "run_c",
      limits: clampRunLimits(caps, { maxCycles: 5 }),
      deadline,
    });
    deadline.dispose();
    expect(outcome.status).toBe("completed");
    expect(outcome.answer).toBe("done");
    const a = intervals.get("a") ?? { start: Number.NaN, end: Number.NaN };
    const b = intervals.get("b") ?? { start: Number.NaN, end: Number.NaN };
    // Overlap: each started before the other ended (NaN, for a tool that never ran, fails both).
    expect(a.start).toBeLessThan(b.end);
    expect(b.start).toBeLessThan(a.end);
    // b finished first, yet the tool messages follow call order.
    const toolMessages = model.requests.at(-1)?.messages.filter((m) => m.role === "tool");
    expect(toolMessages?.map((m) => m.tool_call_id)).toEqual(["call_a", "call_b"]);
    expect(outcome.toolResults.map((r) => r.metadata.toolCallId)).toEqual(["call_a", "call_b"]);
    // The audit hook saw both cycles: the tool turn with its results, then the answer.
    expect(cycleRecords.map((r) => [r.cycle, r.toolCalls.map((c) => `${c.id}:${c.result.status}`)])).toEqual([
      [1, ["call_a:success", "call_b:success"]],
      [2, []],
    ]);
    expect(cycleRecords[0]?.request).toEqual({ messageCount: 2, toolsOffered: ["wait"] });
  });

  it("stops at the cycle limit with a typed outcome and the partial transcript", async () => {
    const echo = defineTool({
      name: "echo",
      description: "Echoes.",
      inputSchema: z.object({ n: z.number() }).strict(),
      isMutating: false,
      requiredPermission: undefined,
      handler: async ({ n }) => ({ n }),
    });
    model.script(
      [1, 2, 3].map((n) => ({ toolCalls: [{ id: `call_${n}`, name: "echo", arguments: `{"n":${n}}` }] })),
    );
    const deadline = new Deadline(10_000);
    const outcome = await runAgent({
      model: new OpenAIChatModel(client, "scripted"),
      tools: createRegistry([echo] as never[]),
      security,
      prompt: "loop",
      runId: "run_d",
      runScope: "run_d",
      limits: clampRunLimits(caps, { maxCycles: 2 }),
      deadline,
    });
    deadline.dispose();
    expect(outcome.status).toBe("max_cycles_exceeded");
    expect(outcome.cycles).toBe(2);
    expect(outcome.toolResults.map((r) => r.data)).toEqual([{ n: 1 }, { n: 2 }]);
    expect(outcome.messages.filter((m) => m.role === "tool")).toHaveLength(2);
  });
});

describe("the model adapter and the run's signal", () => {
  it("leaves no abort listener on the run's signal after its calls, and a call still stops when it aborts", async () => {
    const chat = new OpenAIChatModel(client, "scripted");
    const run = new AbortController();
    model.script(Array.from({ length: 12 }, (_, n) => ({ content: `answer ${n}` })));
    for (let n = 0; n < 12; n++) {
      const reply = await chat.call({
        messages: [{ role: "user", content: "hi" }],
        tools: [],
        toolChoice: "auto",
        signal: run.signal,
        deadlineAt: Date.now() + 10_000,
      });
      expect(reply).toMatchObject({ kind: "reply", content: `answer ${n}` });
    }
    expect(getEventListeners(run.signal, "abort")).toHaveLength(0);

    model.script([{ content: "too late", delayMs: 5_000 }]);
    const pending = chat.call({
      messages: [{ role: "user", content: "hi" }],
      tools: [],
      toolChoice: "auto",
      signal: run.signal,
      deadlineAt: Date.now() + 10_000,
    });
    setTimeout(() => run.abort(new Error("deadline")), 50);
    expect(await pending).toMatchObject({ kind: "failure", cause: "deadline" });
    expect(getEventListeners(run.signal, "abort")).toHaveLength(0);
  });

  it("the run's abort aborts the request in flight: the server sees its connection closed", async () => {
    // A server that takes the request and never answers: only the client's abort ends the exchange.
    let onRequest = () => {};
    const received = new Promise<void>((resolve) => {
      onRequest = resolve;
    });
    let onClose = (_unanswered: boolean) => {};
    const closed = new Promise<boolean>((resolve) => {
      onClose = resolve;
    });
    const server = createServer((request, response) => {
      request.resume();
      onRequest();
      response.on("close", () => onClose(!response.writableEnded));
    });
    server.listen(0, "127.0.0.1");
    await once(server, "listening");
    const { port } = server.address() as AddressInfo;
    try {
      const silent = createModelClient({
        apiKey: "test",
        baseURL: `http://127.0.0.1:${port}/v1`,
        maxRetries: 0,
      });
      const chat = new OpenAIChatModel(silent, "silent");
      const run = new AbortController();
      const pending = chat.call({
        messages: [{ role: "user", content: "hi" }],
        tools: [],
        toolChoice: "auto",
        signal: run.signal,
        deadlineAt: Date.now() + 60_000,
      });
      await received;
      run.abort(new Error("deadline"));
      expect(await pending).toMatchObject({ kind: "failure", cause: "deadline" });
      // Closed unanswered: the abort reached the request's own fetch, not only the race around it.
      expect(await closed).toBe(true);
    } finally {
      server.closeAllConnections();
      server.close();
    }
  });
});
