/**
 * What OpenAI-compatible servers (vLLM, llama.cpp, Ollama, LiteLLM, OpenRouter) send
 * outside the chat-completions spec, through the real Lambda handler with DynamoDB Local and the local
 * model server in scripted mode. The rules are in docs/providers.md.
 */
import type { APIGatewayProxyStructuredResultV2 } from "aws-lambda";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ProblemSchema, RunRecordSchema, RunResponseSchema } from "../functions/api/contract.js";
import type { ScriptedReply } from "../local/model-server.js";
import { EMPTY_REPLY_NUDGE } from "../shared/agent/turn-resolution.js";
import type { RunOutcomeDetails } from "../shared/agent/types.js";
import { loadConfig } from "../shared/config.js";
import { apiEvent } from "./fixtures/events.js";
import { startTestStack, type TestStack } from "./support/stack.js";

let stack: TestStack;
beforeAll(async () => {
  // A token budget the scripted usage can reach; estimated usage stays far below it.
  stack = await startTestStack({ MAX_CYCLES: "4", MAX_TOTAL_TOKENS: "50000", MODEL_MAX_TOKENS: "1536" });
});
afterAll(async () => {
  await stack?.stop();
});

const GB_TAX = { amount: 1500, currency: "GBP", jurisdiction: "UK" };
const PROMPT = "Calculate tax on 1500 GBP for a client in the UK.";

/** Scripts the model, invokes POST /v1/runs through the handler, returns the response. */
async function postRun(
  script: ScriptedReply[],
  body: Record<string, unknown> = {},
): Promise<APIGatewayProxyStructuredResultV2> {
  stack.model.requests.length = 0;
  stack.model.script(script);
  return stack.invoke(apiEvent("http-api-v2", { body: { prompt: PROMPT, ...body } }) as never);
}
const json = (response: APIGatewayProxyStructuredResultV2) => JSON.parse(response.body ?? "") as unknown;
const runBody = (response: APIGatewayProxyStructuredResultV2) => {
  expect(response.statusCode).toBe(200);
  return RunResponseSchema.parse(json(response));
};
const readRun = async (runId: string) =>
  RunRecordSchema.parse(
    json(await stack.invoke(apiEvent("http-api-v2", { method: "GET", path: `/v1/runs/${runId}` }) as never)),
  );
/** The assistant tool calls of recorded model request `index`, as sent back to the model. */
const sentToolCalls = (index: number) =>
  (stack.model.requests[index]?.messages ?? []).flatMap((message) => message.tool_calls ?? []);

describe("tool arguments that are not a JSON string (issue 15 item 1)", () => {
  it("an object is serialized once, validated and run; the model gets it back as a string", async () => {
    const response = await postRun([
      { toolCalls: [{ id: "c_obj", name: "calculateTax", arguments: GB_TAX }] },
      { content: "GB tax is 300.00 GBP." },
    ]);
    const body = runBody(response);
    expect(body.status).toBe("completed");
    expect(body.toolResults[0]).toMatchObject({
      status: "success",
      data: { jurisdiction: "GB", taxAmount: { amount: "300.00" } },
      metadata: { toolCallId: "c_obj" },
    });
    expect(sentToolCalls(1)).toEqual([
      {
        id: "c_obj",
        type: "function",
        function: { name: "calculateTax", arguments: JSON.stringify(GB_TAX) },
      },
    ]);
    const run = await readRun(body.runId);
    expect(run.steps[0]?.toolCalls[0]?.arguments).toBe(JSON.stringify(GB_TAX));
  });

  it("a number, an array or null is validation_error MALFORMED_ARGUMENTS; the model recovers", async () => {
    const response = await postRun([
      {
        toolCalls: [
          { id: "c_num", name: "calculateTax", arguments: 42 },
          { id: "c_arr", name: "calculateTax", arguments: [1500, "GBP"] },
          { id: "c_null", name: "calculateTax", arguments: null },
        ],
      },
      { toolCalls: [{ id: "c_ok", name: "calculateTax", arguments: JSON.stringify(GB_TAX) }] },
      { content: "GB tax is 300.00 GBP." },
    ]);
    const body = runBody(response);
    expect(body.status).toBe("completed");
    expect(body.cycles).toBe(3);
    expect(body.toolResults.map((r) => [r.metadata.toolCallId, r.status, r.error?.code ?? null])).toEqual([
      ["c_num", "validation_error", "MALFORMED_ARGUMENTS"],
      ["c_arr", "validation_error", "MALFORMED_ARGUMENTS"],
      ["c_null", "validation_error", "MALFORMED_ARGUMENTS"],
      ["c_ok", "success", null],
    ]);
    expect(body.toolResults.map((r) => r.error?.details.received ?? null)).toEqual([
      "number",
      "array",
      "null",
      null,
    ]);
    // The next request carries each call's arguments as a string, and a tool message for each.
    expect(sentToolCalls(1).map((c) => [c.id, c.function.arguments])).toEqual([
      ["c_num", "42"],
      ["c_arr", '[1500,"GBP"]'],
      ["c_null", "null"],
    ]);
    const toolMessages = stack.model.requests[1]?.messages.filter((m) => m.role === "tool") ?? [];
    expect(toolMessages.map((m) => m.tool_call_id)).toEqual(["c_num", "c_arr", "c_null"]);
    expect(String(toolMessages[0]?.content)).toContain("MALFORMED_ARGUMENTS");
  });
});

describe("a reply with neither text nor tool calls (issue 15 item 2)", () => {
  const empty: ScriptedReply = { content: null, toolCalls: [], finishReason: "tool_calls" };

  it("gets one corrective retry, counted as a cycle; a real answer then completes the run", async () => {
    const response = await postRun([empty, { content: "GB tax is 300.00 GBP." }]);
    const body = runBody(response);
    expect(body).toMatchObject({ status: "completed", answer: "GB tax is 300.00 GBP.", cycles: 2 });
    // The retry is the same transcript plus the nudge; nothing was added for the empty reply.
    expect(stack.model.requests).toHaveLength(2);
    const retry = stack.model.requests[1]?.messages ?? [];
    expect(retry).toHaveLength(3);
    expect(retry.at(-1)).toEqual({ role: "user", content: EMPTY_REPLY_NUDGE });
    const run = await readRun(body.runId);
    expect(run.steps.map((s) => [s.cycle, s.finishReason, s.toolCalls.length])).toEqual([
      [1, "tool_calls", 0],
      [2, "stop", 0],
    ]);
  });

  it("twice ends model_error: 502 MODEL_UNAVAILABLE, never 200 completed with an empty answer", async () => {
    const response = await postRun([empty, { content: null, toolCalls: [], finishReason: "tool_calls" }]);
    expect(response.statusCode).toBe(502);
    expect(response.headers?.["content-type"]).toBe("application/problem+json");
    const problem = ProblemSchema.parse(json(response));
    expect(problem).toMatchObject({
      status: 502,
      code: "MODEL_UNAVAILABLE",
      runStatus: "model_error",
      providerStatus: null,
      cycles: 2,
    });
    const run = await readRun(String(problem.runId));
    expect(run.status).toBe("model_error");
    expect(run.answer).toBeNull();
    expect(run.reason).toContain("finish_reason tool_calls");
  });

  it("an undocumented finish_reason or blank text counts as no usable output too", async () => {
    const response = await postRun([
      { content: "   \n", finishReason: "end_turn" },
      { content: null, finishReason: "eos" },
    ]);
    expect(response.statusCode).toBe(502);
    const problem = ProblemSchema.parse(json(response));
    const run = await readRun(String(problem.runId));
    expect(run.reason).toContain("finish_reason eos");
    expect(run.steps.map((s) => s.finishReason)).toEqual(["end_turn", "eos"]);
  });

  it("an undocumented finish_reason with text is an answer", async () => {
    const body = runBody(await postRun([{ content: "GB tax is 300.00 GBP.", finishReason: "eos" }]));
    expect(body).toMatchObject({ status: "completed", answer: "GB tax is 300.00 GBP.", cycles: 1 });
  });

  it("without a cycle left for the retry, the first empty reply ends model_error", async () => {
    const response = await postRun([empty, { content: "never requested" }], { maxCycles: 1 });
    expect(response.statusCode).toBe(502);
    expect(ProblemSchema.parse(json(response))).toMatchObject({ runStatus: "model_error", cycles: 1 });
    expect(stack.model.requests).toHaveLength(1);
  });
});

describe("quirks that keep working (issue 15 item 3)", () => {
  it("tool calls without an id get unique ids, each answered", async () => {
    const body = runBody(
      await postRun([
        {
          toolCalls: [
            { name: "calculateTax", arguments: JSON.stringify(GB_TAX) },
            { name: "calculateTax", arguments: JSON.stringify({ ...GB_TAX, amount: 100 }) },
          ],
        },
        { content: "done" },
      ]),
    );
    // The server rejects unpaired or duplicate tool_call ids with 400: completed means the ids paired.
    expect(body.status).toBe("completed");
    expect(body.toolResults.map((r) => [r.metadata.toolCallId, r.status])).toEqual([
      ["call_1_0", "success"],
      ["call_1_1", "success"],
    ]);
    const toolMessages = stack.model.requests[1]?.messages.filter((m) => m.role === "tool") ?? [];
    expect(toolMessages.map((m) => m.tool_call_id)).toEqual(["call_1_0", "call_1_1"]);
  });

  it('tool calls with finish_reason "stop" run', async () => {
    const body = runBody(
      await postRun([
        {
          toolCalls: [{ id: "c_stop", name: "calculateTax", arguments: JSON.stringify(GB_TAX) }],
          finishReason: "stop",
        },
        { content: "done" },
      ]),
    );
    expect(body).toMatchObject({ status: "completed", cycles: 2 });
    expect(body.toolResults[0]).toMatchObject({ status: "success", metadata: { toolCallId: "c_stop" } });
  });

  it("a reply without usage counts zero tokens, and the token budget still counts the rest", async () => {
    const tax = (id: string) => ({ id, name: "calculateTax", arguments: JSON.stringify(GB_TAX) });
    const completed = runBody(
      await postRun([
        { toolCalls: [tax("c_u1")], omitUsage: true },
        { content: "done", usage: { prompt_tokens: 70, completion_tokens: 5 } },
      ]),
    );
    expect(completed.status).toBe("completed");
    expect(completed.usage).toEqual({ promptTokens: 70, completionTokens: 5, totalTokens: 75 });
    const run = await readRun(completed.runId);
    expect(run.steps.map((s) => s.usage.totalTokens)).toEqual([0, 75]);

    const over = runBody(
      await postRun([
        { toolCalls: [tax("c_b1")], omitUsage: true },
        { toolCalls: [tax("c_b2")], usage: { prompt_tokens: 40_000, completion_tokens: 15_000 } },
        { content: "never requested" },
      ]),
    );
    expect(over.status).toBe("budget_exceeded");
    expect(over.usage).toEqual({ promptTokens: 40_000, completionTokens: 15_000, totalTokens: 55_000 });
    expect(over.toolResults.map((r) => [r.metadata.toolCallId, r.error?.code ?? "ok"])).toEqual([
      ["c_b1", "ok"],
      ["c_b2", "BUDGET_EXCEEDED"],
    ]);
    expect(stack.model.requests).toHaveLength(2);
  });

  it("empty-string arguments are read as {}: the schema names the required fields, and the model recovers", async () => {
    const body = runBody(
      await postRun([
        { toolCalls: [{ id: "c_empty", name: "calculateTax", arguments: "" }] },
        { toolCalls: [{ id: "c_fixed", name: "calculateTax", arguments: JSON.stringify(GB_TAX) }] },
        { content: "GB tax is 300.00 GBP." },
      ]),
    );
    expect(body.status).toBe("completed");
    expect(body.toolResults.map((r) => [r.metadata.toolCallId, r.status, r.error?.code ?? null])).toEqual([
      ["c_empty", "validation_error", "INVALID_ARGUMENTS"],
      ["c_fixed", "success", null],
    ]);
    const details = body.toolResults[0]?.error?.details as {
      issues?: Array<{ path: string; received: string }>;
    };
    const issues = details?.issues ?? [];
    expect(issues.map((issue) => [issue.path, issue.received])).toEqual(
      expect.arrayContaining([
        ["amount", "missing"],
        ["currency", "missing"],
        ["jurisdiction", "missing"],
      ]),
    );
    // The transcript sent back carries "{}", which servers that parse arguments (llama.cpp) accept.
    expect(sentToolCalls(1)[0]?.function.arguments).toBe("{}");
  });

  it("blank arguments of a tool that needs none run it (listInvoices), three servers' forms alike", async () => {
    const body = runBody(
      await postRun([
        {
          toolCalls: [
            { id: "c_blank", name: "listInvoices", arguments: "" },
            { id: "c_space", name: "listInvoices", arguments: "  " },
            { id: "c_obj", name: "listInvoices", arguments: "{}" },
          ],
        },
        { content: "You have no invoices yet." },
      ]),
    );
    expect(body.status).toBe("completed");
    expect(body.toolResults.map((r) => [r.metadata.toolCallId, r.status, r.data])).toEqual([
      ["c_blank", "success", expect.objectContaining({ hasMore: false })],
      ["c_space", "success", expect.objectContaining({ hasMore: false })],
      ["c_obj", "success", expect.objectContaining({ hasMore: false })],
    ]);
    expect(stack.model.requests).toHaveLength(2);
  });

  it("a response body that stalls after the headers: the deadline still ends the run in time", async () => {
    const started = Date.now();
    const response = await postRun([{ content: "never finished", stallBody: true }], { timeoutMs: 700 });
    const endedAt = Date.now();
    expect(runBody(response).status).toBe("deadline_exceeded");
    const { deadline } = (json(response) as { details: RunOutcomeDetails }).details;
    expect(deadline?.phase).toBe("model_call");
    const deadlineAt = deadline?.deadlineAt ?? 0;
    expect(deadlineAt).toBeGreaterThan(started);
    // The response (run record and outcome written to DynamoDB included) comes soon after the deadline.
    expect(endedAt - deadlineAt).toBeLessThan(500);
    expect(stack.model.requests).toHaveLength(1);
  });
});

describe("the completion limit", () => {
  it("every chat completion request carries max_tokens from MODEL_MAX_TOKENS", async () => {
    const response = await postRun([
      { toolCalls: [{ id: "c_lim", name: "calculateTax", arguments: GB_TAX }] },
      { content: "GB tax is 300.00 GBP." },
    ]);
    expect(runBody(response).status).toBe("completed");
    expect(stack.model.requests).toHaveLength(2);
    expect(stack.model.requests.map((request) => request.body.max_tokens)).toEqual([1536, 1536]);
  });

  it("defaults to 4096 tokens and refuses a limit that is not a positive integer", () => {
    expect(loadConfig({}).model.maxTokens).toBe(4096);
    expect(loadConfig({ MODEL_MAX_TOKENS: "800" }).model.maxTokens).toBe(800);
    expect(() => loadConfig({ MODEL_MAX_TOKENS: "0" })).toThrow(/MODEL_MAX_TOKENS/);
    expect(() => loadConfig({ MODEL_MAX_TOKENS: "12.5" })).toThrow(/MODEL_MAX_TOKENS/);
  });
});
