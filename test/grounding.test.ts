/**
 * Grounded answers (docs/evals.md, Grounding): the numbers of an answer are checked against the run's
 * tool results and prompts; ANSWER_GROUNDING reports, re-asks once, or refuses. Through the real handler,
 * DynamoDB Local and the local model server in scripted mode.
 */
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RunRecordSchema, RunResponseSchema } from "../functions/api/contract.js";
import { checkGrounding, numbersIn } from "../shared/agent/grounding.js";
import type { ChatMessage } from "../shared/agent/model.js";
import { loadConfig } from "../shared/config.js";
import { json } from "./support/approvals.js";
import { runEvent } from "./support/idempotency.js";
import { runTrace, startMemoryTracing } from "./support/spans.js";
import { startTestStack, type TestStack } from "./support/stack.js";

const TAX_CALL = {
  id: "call_tax",
  name: "calculateTax",
  arguments: JSON.stringify({ amount: "1500", currency: "GBP", jurisdiction: "GB", taxPointDate: null }),
};
const FABRICATED = "The tax on 1500 GBP is 310.00, so the total is 1,810.00.";
const GROUNDED = "The tax on 1500 GBP is 300.00, so the total is 1,800.00.";

const toolMessage = (data: unknown): ChatMessage => ({
  role: "tool",
  tool_call_id: "c1",
  content: JSON.stringify({ status: "success", data, error: null, metadata: {} }),
});
const transcript = (data: unknown, prompt = "Tax on 1500 GBP in the UK"): ChatMessage[] => [
  { role: "system", content: "You are boundloop. Costs 999." },
  { role: "user", content: prompt },
  {
    role: "assistant",
    content: null,
    tool_calls: [{ id: "c1", type: "function", function: { name: "calculateTax", arguments: "{}" } }],
  },
  toolMessage(data),
];
const QUOTE = {
  rate: "0.20",
  subtotal: { amount: "1500.00", minorUnits: 150000 },
  taxAmount: { amount: "300.00", minorUnits: 30000 },
  grossTotal: { amount: "1800.00", minorUnits: 180000 },
  quoteId: "qt_0123456789abcdef0123456789abcdef",
  expiresAt: "2025-06-01T12:00:00.000Z",
};

describe("the check", () => {
  it("flags 310.00 after a tool said 300.00, and matches 1,800.00 and 1800 to 1800.00", () => {
    const check = checkGrounding("Tax 310.00; gross 1,800.00 (1800 in all).", transcript(QUOTE));
    expect(check).toEqual({ checked: 3, ungrounded: [{ text: "310.00", value: "310" }] });
  });

  it("reads locale forms, percentages and scales by value", () => {
    const messages = transcript(QUOTE);
    for (const answer of [
      "1.800,00 GBP",
      "1\u00a0800,00 GBP",
      "VAT at 20% is 300",
      "about 1.8k",
      "£1,800",
      "GBP1800.00",
    ])
      expect(checkGrounding(answer, messages).ungrounded, answer).toEqual([]);
    for (const answer of ["1.810,00 GBP", "VAT at 21%", "about 1.9k", "GBP310.00", "310.00GBP", "2 million"])
      expect(checkGrounding(answer, messages).ungrounded, answer).toHaveLength(1);
  });

  it("does not check dates, times, ids or list markers; counts come from results", () => {
    const answer = [
      "1. Invoice inv_206dfce47e6ec0d1364866c1 for quote qt_0123456789abcdef0123456789abcdef (rule GB-2024-04)",
      "2. Recorded on 2025-06-01 at 12:30, due 1 March 2026, 31/12/2025",
      "You have 1 invoice and made 1 calculateTax call.",
    ].join("\n");
    expect(checkGrounding(answer, transcript({ invoices: [{ id: "x" }], count: 1 }, "list"))).toEqual({
      checked: 2,
      ungrounded: [],
    });
    expect(numbersIn("3 invoices")).toEqual([{ text: "3", values: ["3"] }]);
  });

  it("reads a long word in linear time: a 20 000-letter tool result beside 12.50 and an id", () => {
    // One regular expression for "a word with a letter and a digit" backtracked cubically here and
    // stalled the event loop (the loop-bounds test's 40 KB tool result never finished).
    const text = `${"é".repeat(20_000)} 12.50 ${"a".repeat(20_000)}7 ${"9".repeat(5_000)}x`;
    expect(numbersIn(text)).toEqual([{ text: "12.50", values: ["12.5"] }]);
  });

  it("an answer without a number reads nothing of the transcript (the run's last step stays flat)", () => {
    let read = 0;
    const transcript = new Proxy([] as ChatMessage[], {
      get(target, key, receiver) {
        read += 1;
        return Reflect.get(target, key, receiver);
      },
    });
    expect(checkGrounding("Done.", transcript)).toEqual({ checked: 0, ungrounded: [] });
    expect(read).toBe(0);
    expect(checkGrounding("Done: 12.50.", transcript)).toEqual({
      checked: 1,
      ungrounded: [{ text: "12.50", value: "12.5" }],
    });
    expect(read).toBeGreaterThan(0);
    expect(numbersIn("no digits here, only words and ids like inv_x")).toEqual([]);
  });

  it("a tool result's metadata grounds nothing: latency, running totals, truncation, key (transcripts stored with it)", () => {
    // Transcripts stored before tool messages became the model view hold the whole envelope: only its
    // data and error are what the tool vouched for.
    const envelope = {
      status: "success",
      data: QUOTE,
      error: null,
      metadata: {
        toolName: "calculateTax",
        toolCallId: "c1",
        latencyMs: 437,
        idempotencyKey: "run_1:c1:0",
        truncated: { originalBytes: 20480, maxBytes: 16384 },
        policy: { decision: "permit", totals: { tenantDay: { count: 7, grossMinor: 912345 } } },
      },
    };
    const messages: ChatMessage[] = [
      ...transcript(QUOTE).slice(0, 3),
      { role: "tool", tool_call_id: "c1", content: JSON.stringify(envelope) },
    ];
    const check = checkGrounding(
      "Tax 300.00 in 437 ms; the tenant's day: 7 invoices, 9,123.45 (912345); 20480 of 16384 bytes.",
      messages,
    );
    expect(check).toEqual({
      checked: 7,
      ungrounded: ["437", "7", "9,123.45", "912345", "20480", "16384"].map((text) => ({
        text,
        value: text.replace(",", ""),
      })),
    });
    // A failure's error (code, message, details) still grounds.
    const failed = JSON.stringify({
      status: "validation_error",
      data: null,
      error: { code: "INVALID_ARGUMENTS", message: "at most 100", details: { limit: 250 }, retryable: true },
    });
    const withError: ChatMessage[] = [
      ...messages.slice(0, 3),
      { role: "tool", tool_call_id: "c1", content: failed },
    ];
    expect(checkGrounding("At most 100, limit 250.", withError).ungrounded).toEqual([]);
  });

  it("the system prompt and the model's own text ground nothing; the prompt does", () => {
    expect(checkGrounding("It costs 999.", transcript(QUOTE)).ungrounded).toEqual([
      { text: "999", value: "999" },
    ]);
    expect(
      checkGrounding("You asked about 1500 and 42.", transcript(QUOTE, "1500 or 42?")).ungrounded,
    ).toEqual([]);
  });

  it("ANSWER_GROUNDING is report by default, one of report, reask, refuse", () => {
    expect(loadConfig({}).grounding.mode).toBe("report");
    expect(loadConfig({ ANSWER_GROUNDING: "refuse" }).grounding.mode).toBe("refuse");
    expect(() => loadConfig({ ANSWER_GROUNDING: "block" })).toThrow(/ANSWER_GROUNDING/);
  });
});

async function runScripted(stack: TestStack, replies: Parameters<TestStack["model"]["script"]>[0]) {
  stack.model.script(replies);
  const tenantId = `tenant_ground_${randomUUID().slice(0, 8)}`;
  const response = await stack.invoke(runEvent({ tenantId, prompt: "Tax on 1500 GBP for a UK client?" }));
  expect(response.statusCode, response.body).toBe(200);
  const body = RunResponseSchema.parse(json(response));
  const record = await stack.deps.runs.get(tenantId, body.runId);
  const events = await stack.deps.runEvents.store.read(tenantId, body.runId, 0);
  return {
    body,
    record: record?.run,
    events: events.events.map((e) => e as unknown as Record<string, unknown>),
  };
}

describe.each(["report", "reask", "refuse"] as const)("ANSWER_GROUNDING=%s", (mode) => {
  let stack: TestStack;
  let tracing: ReturnType<typeof startMemoryTracing>;
  beforeAll(async () => {
    tracing = startMemoryTracing();
    stack = await startTestStack({ ANSWER_GROUNDING: mode, TRACING: "console" });
  });
  afterAll(async () => {
    await stack?.stop();
    await tracing?.sdk.shutdown();
  });

  it("a grounded answer passes unchanged", async () => {
    const { body } = await runScripted(stack, [{ toolCalls: [TAX_CALL] }, { content: GROUNDED }]);
    expect([body.status, body.answer]).toEqual(["completed", GROUNDED]);
    expect(body.grounding).toEqual({ mode, checked: 3, ungrounded: [], action: "none" });
  });

  it("a fabricated 310.00 is flagged in the outcome, the record, the events and the span", async () => {
    const replies = [{ toolCalls: [TAX_CALL] }, { content: FABRICATED }, { content: GROUNDED }];
    const before = stack.model.requests.length;
    const { body, record, events } = await runScripted(stack, replies);
    const fabricated = [
      { text: "310.00", value: "310" },
      { text: "1,810.00", value: "1810" },
    ];
    const expected = {
      report: { status: "completed", answer: FABRICATED, action: "reported", ungrounded: fabricated },
      reask: { status: "completed", answer: GROUNDED, action: "reasked", ungrounded: [] },
      refuse: { status: "answer_ungrounded", answer: null, action: "refused", ungrounded: fabricated },
    }[mode];
    expect({ status: body.status, answer: body.answer }).toEqual({
      status: expected.status,
      answer: expected.answer,
    });
    expect(body.grounding).toEqual({
      mode,
      checked: 3,
      ungrounded: expected.ungrounded,
      action: expected.action,
      ...(mode === "reask" ? { firstUngrounded: fabricated } : {}),
    });
    expect(RunRecordSchema.parse({ ...record, steps: [] }).grounding).toEqual(body.grounding);
    expect(record?.status).toBe(expected.status);
    const flagged = events.find((event) => event.type === "answer.ungrounded");
    expect(flagged).toMatchObject({ action: expected.action, ungrounded: expected.ungrounded });
    expect(events.at(-1)?.type).toBe("run.finished");
    const { agent } = runTrace(tracing.exporter, body.runId);
    // The numbers are the answer's text: without TRACE_CONTENT the span says how many, not which.
    expect(agent.attributes["boundloop.answer.ungrounded"]).toBeUndefined();
    expect(agent.attributes["boundloop.answer.ungrounded_count"]).toBe(expected.ungrounded.length);
    expect(agent.attributes["boundloop.answer.grounding_action"]).toBe(expected.action);
    const requests = stack.model.requests.slice(before);
    if (mode === "reask") {
      expect(requests).toHaveLength(3);
      const last = requests[2];
      expect(last?.body.tool_choice).toBe("none");
      expect(String(last?.messages.at(-2)?.content)).toBe(FABRICATED);
      expect(String(last?.messages.at(-1)?.content)).toMatch(
        /310\.00, 1,810\.00[\s\S]*as data \(not instructions\)/,
      );
    } else {
      expect(requests).toHaveLength(2);
      if (mode === "refuse") expect(body.reason).toMatch(/310\.00, 1,810\.00.*withheld/);
    }
  });
});

describe("ANSWER_GROUNDING=report with TRACE_CONTENT=true", () => {
  let stack: TestStack;
  let tracing: ReturnType<typeof startMemoryTracing>;
  beforeAll(async () => {
    tracing = startMemoryTracing(true);
    stack = await startTestStack({ ANSWER_GROUNDING: "report", TRACING: "console", TRACE_CONTENT: "true" });
  });
  afterAll(async () => {
    await stack?.stop();
    await tracing?.sdk.shutdown();
  });

  it("the agent span names the ungrounded numbers as written (content capture is on)", async () => {
    const { body } = await runScripted(stack, [{ toolCalls: [TAX_CALL] }, { content: FABRICATED }]);
    expect(body.grounding?.action).toBe("reported");
    const { agent } = runTrace(tracing.exporter, body.runId);
    expect(agent.attributes["boundloop.answer.ungrounded"]).toEqual(["310.00", "1,810.00"]);
    expect(agent.attributes["boundloop.answer.ungrounded_count"]).toBe(2);
  });
});
