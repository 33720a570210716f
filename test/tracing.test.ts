import type { InMemorySpanExporter, ReadableSpan } from "@opentelemetry/sdk-trace";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { agentTraceOf } from "../shared/run-trace.js";
import type { TracingSdk } from "../shared/telemetry/sdk.js";
import { configureTracing } from "../shared/tracing.js";
import { CONTENT_KEYS, runTrace, startMemoryTracing, treeOf } from "./support/spans.js";
import { seedEvent, startTestStack, type TestStack } from "./support/stack.js";

let stack: TestStack;
let sdk: TracingSdk;
let exporter: InMemorySpanExporter;
beforeAll(async () => {
  ({ sdk, exporter } = startMemoryTracing());
  stack = await startTestStack({ POWERTOOLS_LOG_LEVEL: "SILENT" });
});
afterAll(async () => {
  await stack?.stop();
  await sdk?.shutdown();
});
beforeEach(() => {
  exporter.reset();
  configureTracing({ enabled: true, captureContent: false });
});

async function seedRun() {
  const response = await stack.invoke(seedEvent());
  expect(response.statusCode).toBe(200);
  return JSON.parse(response.body ?? "") as { runId: string; status: string; cycles: number };
}

const named = (spans: ReadableSpan[], prefix: string) => spans.filter((span) => span.name.startsWith(prefix));

describe("the seed run's trace (synchronous)", () => {
  it("is one invoke_agent span with a chat span per model call and an execute_tool span per tool call, store calls under them", async () => {
    const { runId, cycles } = await seedRun();
    const { agent, childrenOf, spans } = runTrace(exporter, runId);
    expect(agent.kind).toBe(0); // INTERNAL
    expect(agent.parentSpanContext).toBeUndefined();
    // The agent span's ids come from the run id: its trace can be found from the run alone.
    expect(agent.spanContext()).toMatchObject({
      traceId: agentTraceOf(runId)?.traceId,
      spanId: agentTraceOf(runId)?.spanId,
    });
    expect(agent.attributes).toMatchObject({
      "gen_ai.operation.name": "invoke_agent",
      "gen_ai.agent.name": "boundloop",
      "gen_ai.provider.name": "openai",
      "gen_ai.request.model": "gpt-4o-mini",
      "gen_ai.conversation.id": runId,
      "boundloop.tenant.id": "tenant_uk_01",
      "boundloop.run.id": runId,
      "boundloop.run.status": "completed",
      "boundloop.run.cycles": 3,
      "boundloop.run.durable": false,
    });
    expect(agent.status.code).not.toBe(2);

    const direct = childrenOf(agent);
    const chats = named(direct, "chat ");
    expect(chats).toHaveLength(cycles);
    for (const chat of chats) {
      expect(chat.name).toBe("chat gpt-4o-mini");
      expect(chat.kind).toBe(2); // CLIENT
      expect(chat.attributes).toMatchObject({
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "openai",
        "gen_ai.request.model": "gpt-4o-mini",
        "server.address": "127.0.0.1",
      });
      expect(chat.attributes["gen_ai.usage.input_tokens"]).toBeGreaterThan(0);
      expect(chat.attributes["gen_ai.usage.output_tokens"]).toBeGreaterThan(0);
    }
    expect(chats.map((chat) => chat.attributes["gen_ai.response.finish_reasons"])).toEqual([
      ["tool_calls"],
      ["tool_calls"],
      ["stop"],
    ]);
    const inputTokens = chats.reduce(
      (sum, chat) => sum + Number(chat.attributes["gen_ai.usage.input_tokens"]),
      0,
    );
    expect(agent.attributes["gen_ai.usage.input_tokens"]).toBe(inputTokens);

    const tools = named(direct, "execute_tool ");
    expect(tools.map((tool) => tool.name).sort()).toEqual([
      "execute_tool calculateTax",
      "execute_tool calculateTax",
      "execute_tool recordInvoice",
    ]);
    for (const tool of tools) {
      expect(tool.kind).toBe(0);
      expect(tool.attributes["gen_ai.operation.name"]).toBe("execute_tool");
      expect(tool.attributes["gen_ai.tool.name"]).toBe(tool.name.slice("execute_tool ".length));
      expect(tool.attributes["gen_ai.tool.call.id"]).toMatch(/^call_/);
    }
    // The tool failure: the DE quote is a business error, with our stable code as error.type.
    const failed = tools.filter((tool) => tool.status.code === 2);
    expect(failed).toHaveLength(1);
    expect(failed[0]?.attributes).toMatchObject({
      "error.type": "UNSUPPORTED_JURISDICTION",
      "boundloop.error.code": "UNSUPPORTED_JURISDICTION",
      "boundloop.tool.status": "business_error",
    });
    const record = tools.find((tool) => tool.name === "execute_tool recordInvoice") as ReadableSpan;
    expect(record.attributes["boundloop.tool.idempotency_key"]).toMatch(/^tk_[0-9a-f]{64}$/);
    expect(record.attributes["boundloop.tool.status"]).toBe("success");

    // The store calls the tool made are its client spans; the lifecycle's are the agent span's.
    expect(treeOf(record, childrenOf)).toEqual({
      "execute_tool recordInvoice": ["DynamoDB.GetItem", "DynamoDB.PutItem"],
    });
    const put = childrenOf(record)[1] as ReadableSpan;
    expect(put.kind).toBe(2);
    expect(put.attributes).toMatchObject({
      "rpc.system": "aws-api",
      "rpc.service": "DynamoDB",
      "rpc.method": "PutItem",
      "db.system.name": "aws.dynamodb",
      "aws.dynamodb.table_names": [stack.config.table.name],
    });
    // The quota admission (the tenant's limits, read once a minute per container, and the day's usage
    // counter, holding the run's calls: no limit is set), run start, the policy set (docs/policies.md),
    // 3 audit steps (a put and an update each), the budget's settle and the outcome (at once), and the
    // run's event log: one batch (a put) per cycle, written after the cycle (docs/run-events.md).
    expect(named(direct, "DynamoDB.").map((span) => span.name)).toEqual([
      "DynamoDB.GetItem", // the tenant's limits
      "DynamoDB.UpdateItem", // admission: the usage counter, holding the run's calls
      "DynamoDB.PutItem", // run start
      "DynamoDB.GetItem", // the tenant's policy set
      "DynamoDB.PutItem", // cycle 1 audit step
      "DynamoDB.UpdateItem",
      "DynamoDB.PutItem", // cycle 1 events
      "DynamoDB.PutItem", // cycle 2 audit step
      "DynamoDB.UpdateItem",
      "DynamoDB.PutItem", // cycle 2 events
      "DynamoDB.PutItem", // cycle 3 audit step
      "DynamoDB.UpdateItem",
      "DynamoDB.UpdateItem", // usage counter: settle the run's calls, and (at once) the outcome
      "DynamoDB.UpdateItem",
      "DynamoDB.PutItem", // cycle 3 and run.finished events
    ]);
    expect(spans).toHaveLength(1 + direct.length + childrenOf(record).length + 1);
  });

  it("carries no prompt, answer, argument or result unless content capture is on, and never a secret", async () => {
    const { runId } = await seedRun();
    const plain = runTrace(exporter, runId).spans;
    const text = JSON.stringify(plain.map((span) => span.attributes));
    for (const key of CONTENT_KEYS) expect(text).not.toContain(key);
    // The prompt's "1500 GBP" and the arguments' "1500.00" (a bare /1500/ would also match a random
    // aws.request_id or a token count).
    expect(text).not.toMatch(/1500(\.00| GBP)/);
    expect(text).not.toContain("Calculate");

    exporter.reset();
    configureTracing({ enabled: true, captureContent: true });
    const second = await seedRun();
    const spans = runTrace(exporter, second.runId).spans;
    const chat = spans.find((span) => span.name.startsWith("chat ")) as ReadableSpan;
    const input = JSON.parse(String(chat.attributes["gen_ai.input.messages"])) as Array<{ role: string }>;
    expect(input.map((message) => message.role)).toEqual(["system", "user"]);
    expect(String(chat.attributes["gen_ai.output.messages"])).toContain("calculateTax");
    const record = spans.find((span) => span.name === "execute_tool recordInvoice") as ReadableSpan;
    // The arguments as the model sent them (JSON text), not a JSON string of that text.
    const args = JSON.parse(String(record.attributes["gen_ai.tool.call.arguments"])) as unknown;
    expect(args).toMatchObject({ clientName: "UK client", quoteId: expect.stringMatching(/^qt_/) });
    expect(String(record.attributes["gen_ai.tool.call.result"])).toContain("inv_");
    const all = JSON.stringify(spans.map((span) => span.attributes));
    expect(all).not.toMatch(/authorization|bearer|api[_-]?key|no-key-configured/i);
  });

  it("writes captured messages in the conventions' shape: role and parts, a finish_reason on each output message", async () => {
    configureTracing({ enabled: true, captureContent: true });
    const { runId } = await seedRun();
    const chats = named(runTrace(exporter, runId).spans, "chat ").sort(
      (a, b) => a.startTime[0] - b.startTime[0] || a.startTime[1] - b.startTime[1],
    );
    const attribute = (span: ReadableSpan | undefined, key: string) =>
      JSON.parse(String(span?.attributes[key])) as Array<Record<string, unknown>>;

    const firstInput = attribute(chats[0], "gen_ai.input.messages");
    expect(firstInput.map((message) => Object.keys(message).sort())).toEqual([
      ["parts", "role"],
      ["parts", "role"],
    ]);
    expect(firstInput[1]).toEqual({
      role: "user",
      parts: [{ type: "text", content: expect.stringContaining("1500 GBP for a client in the UK") }],
    });
    const firstOutput = attribute(chats[0], "gen_ai.output.messages");
    expect(firstOutput).toEqual([
      {
        role: "assistant",
        parts: [
          { type: "tool_call", id: "call_1_0", name: "calculateTax", arguments: expect.any(String) },
          { type: "tool_call", id: "call_1_1", name: "calculateTax", arguments: expect.any(String) },
        ],
        finish_reason: "tool_call",
      },
    ]);

    // The second call's input holds the first call's tool calls and their results as parts.
    const secondInput = attribute(chats[1], "gen_ai.input.messages");
    expect(secondInput[2]).toMatchObject({ role: "assistant", parts: firstOutput[0]?.parts });
    expect(secondInput[3]).toEqual({
      role: "tool",
      parts: [{ type: "tool_call_response", id: "call_1_0", response: expect.stringContaining('"success"') }],
    });

    const lastOutput = attribute(chats.at(-1), "gen_ai.output.messages");
    expect(lastOutput).toEqual([
      {
        role: "assistant",
        parts: [{ type: "text", content: expect.stringContaining("1800.00") }],
        finish_reason: "stop",
      },
    ]);
  });
});

describe("a call a policy sends to approval in a synchronous run (nobody can wait)", () => {
  let gated: TestStack;
  beforeAll(async () => {
    gated = await startTestStack({
      POWERTOOLS_LOG_LEVEL: "SILENT",
      POLICIES: `@id("base")\npermit (principal, action, resource);\n@id("gb-approval")\n@approval("required")\npermit (principal, action == Action::"recordInvoice", resource) when { context.facts.grossMinor >= 100000 };`,
    });
  });
  afterAll(async () => gated?.stop());

  it("has its execute_tool span, with the approval decision's explanation and APPROVAL_UNAVAILABLE", async () => {
    const response = await gated.invoke(seedEvent());
    const { runId } = JSON.parse(response.body ?? "") as { runId: string };
    const { agent, childrenOf } = runTrace(exporter, runId);
    const record = named(childrenOf(agent), "execute_tool recordInvoice");
    expect(record).toHaveLength(1);
    expect(record[0]?.attributes).toMatchObject({
      "error.type": "APPROVAL_UNAVAILABLE",
      "boundloop.tool.status": "business_error",
      "boundloop.policy.decision": "approval",
      "boundloop.policy.ids": ["gb-approval"],
      "boundloop.policy.source": "default",
    });
  });
});
