/**
 * The loop's other bounds: budgets, concurrency, permission, duplicate ids, tool timeouts, result size,
 * model errors with the SDK's retries, and the summary at the cycle limit. Real openai client, local
 * model server in scripted mode with injected faults.
 */
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { defineTool, type ToolDefinition } from "../shared/agent/tool.js";
import {
  bigTool,
  call,
  DEFAULT_CAPS,
  echoTool,
  runScripted,
  scriptedModelForFile,
  sleep,
  toolMessages,
} from "./support/agent-harness.js";

const setup = scriptedModelForFile();
const retrying = scriptedModelForFile(2); // the SDK's default retries, as in shared/deps.ts

describe("budgets", () => {
  it("a model call that spends the token budget ends budget_exceeded; its tool calls do not run but are answered", async () => {
    const echo = echoTool();
    const { outcome } = await runScripted(setup, {
      tools: [echo],
      // Room for the second call (its prompt's estimate plus MIN_COMPLETION_TOKENS fits in what the first
      // left), whose reported usage then spends the budget.
      limits: { maxTotalTokens: 2_000 },
      script: [
        { toolCalls: [call("c1", "echo", { n: 1 })], usage: { prompt_tokens: 400, completion_tokens: 50 } },
        { toolCalls: [call("c2", "echo", { n: 2 })], usage: { prompt_tokens: 1_500, completion_tokens: 60 } },
        { content: "never" },
      ],
    });
    expect(outcome.status).toBe("budget_exceeded");
    expect(outcome.details.budget).toEqual({ name: "maxTotalTokens", limit: 2_000, used: 2_010 });
    expect(outcome.usage).toEqual({ promptTokens: 1_900, completionTokens: 110, totalTokens: 2_010 });
    expect(echo.calls).toEqual([1]);
    expect(outcome.toolResults.map((r) => [r.metadata.toolCallId, r.error?.code ?? "ok"])).toEqual([
      ["c1", "ok"],
      ["c2", "BUDGET_EXCEEDED"],
    ]);
    expect(outcome.toolResults[1]?.error?.details).toEqual({ started: false, mayHaveCommitted: false });
    expect(setup.model.requests).toHaveLength(2);
  });

  it("tool calls per turn: the excess gets TOO_MANY_TOOL_CALLS and does not run; the loop continues", async () => {
    const echo = echoTool();
    const { outcome } = await runScripted(setup, {
      tools: [echo],
      limits: { maxToolCallsPerTurn: 2 },
      script: [
        {
          toolCalls: [call("a", "echo", { n: 1 }), call("b", "echo", { n: 2 }), call("c", "echo", { n: 3 })],
        },
        { content: "done" },
      ],
    });
    expect(outcome.status).toBe("completed");
    expect(echo.calls.sort()).toEqual([1, 2]);
    expect(outcome.toolResults.map((r) => [r.status, r.error?.code ?? null])).toEqual([
      ["success", null],
      ["success", null],
      ["validation_error", "TOO_MANY_TOOL_CALLS"],
    ]);
  });

  it("tool calls per run: past the limit the calls are refused and the run ends budget_exceeded", async () => {
    const echo = echoTool();
    const { outcome } = await runScripted(setup, {
      tools: [echo],
      limits: { maxToolCallsPerRun: 3 },
      script: [
        { toolCalls: [call("a", "echo", { n: 1 }), call("b", "echo", { n: 2 })] },
        { toolCalls: [call("c", "echo", { n: 3 }), call("d", "echo", { n: 4 })] },
        { content: "never" },
      ],
    });
    expect(outcome.status).toBe("budget_exceeded");
    expect(outcome.details.budget).toEqual({ name: "maxToolCallsPerRun", limit: 3, used: 3 });
    expect(echo.calls.sort()).toEqual([1, 2, 3]);
    expect(outcome.toolResults.at(-1)?.error?.code).toBe("BUDGET_EXCEEDED");
    expect(setup.model.requests).toHaveLength(2);
  });

  it("concurrent tool calls are capped", async () => {
    let inFlight = 0;
    let peak = 0;
    const wait = defineTool({
      name: "wait",
      description: "Waits 100 ms.",
      inputSchema: z.object({ i: z.number() }).strict(),
      isMutating: false,
      requiredPermission: undefined,
      handler: async ({ i }, _security, context) => {
        inFlight += 1;
        peak = Math.max(peak, inFlight);
        await sleep(100, context.signal);
        inFlight -= 1;
        return { i };
      },
    });
    const { outcome } = await runScripted(setup, {
      tools: [wait as unknown as ToolDefinition],
      limits: { maxConcurrentToolCalls: 2 },
      script: [{ toolCalls: [0, 1, 2, 3, 4].map((i) => call(`c${i}`, "wait", { i })) }, { content: "done" }],
    });
    expect(outcome.status).toBe("completed");
    expect(peak).toBe(2);
    expect(outcome.toolResults.map((r) => r.data)).toEqual([0, 1, 2, 3, 4].map((i) => ({ i })));
  });
});

describe("turn handling", () => {
  it("permission denied ends the run after the turn settles, naming the tool and the permission", async () => {
    const echo = echoTool();
    const write = defineTool({
      name: "write",
      description: "Needs billing:write.",
      inputSchema: z.object({}).strict(),
      isMutating: true,
      requiredPermission: "billing:write",
      handler: async () => ({ written: true }),
    });
    const { outcome } = await runScripted(setup, {
      tools: [echo, write as unknown as ToolDefinition],
      script: [{ toolCalls: [call("w", "write", {}), call("e", "echo", { n: 5 })] }, { content: "never" }],
    });
    expect(outcome.status).toBe("permission_denied");
    expect(outcome.details.permission).toEqual({ toolName: "write", requiredPermission: "billing:write" });
    expect(outcome.reason).toContain("billing:write");
    expect(echo.calls).toEqual([5]); // the rest of the turn settled
    expect(outcome.messages.filter((m) => m.role === "tool")).toHaveLength(2);
    expect(setup.model.requests).toHaveLength(1); // no model call gets to retry it
  });

  it("duplicate tool_call ids in one turn are re-keyed deterministically before dispatch", async () => {
    const echo = echoTool();
    const { outcome, cycles } = await runScripted(setup, {
      tools: [echo],
      script: [
        {
          toolCalls: [
            call("dup", "echo", { n: 1 }),
            call("dup", "echo", { n: 2 }),
            call("", "echo", { n: 3 }),
          ],
        },
        { content: "done" },
      ],
    });
    // The server rejects duplicate or unpaired ids with 400: "completed" means the transcript was valid.
    expect(outcome.status).toBe("completed");
    expect(echo.calls.sort()).toEqual([1, 2, 3]);
    expect(cycles[0]?.toolCalls.map((c) => [c.id, c.originalId ?? null])).toEqual([
      ["dup", null],
      ["dup~1", "dup"],
      ["call_1_2", ""],
    ]);
    expect(toolMessages(setup.model, 1).map((m) => [m.id, m.result.data])).toEqual([
      ["dup", { n: 1 }],
      ["dup~1", { n: 2 }],
      ["call_1_2", { n: 3 }],
    ]);
  });

  it("an unknown tool is a validation_error naming the available tools; the loop continues", async () => {
    const { outcome } = await runScripted(setup, {
      tools: [echoTool()],
      script: [{ toolCalls: [call("x", "deleteLedger", {})] }, { content: "ok" }],
    });
    expect(outcome.status).toBe("completed");
    expect(outcome.toolResults[0]?.error).toMatchObject({
      code: "UNKNOWN_TOOL",
      retryable: true,
      details: { available: ["echo"] },
    });
  });

  it("a tool whose declared timeout is longer than the time left is not started", async () => {
    let ran = false;
    const report = defineTool({
      name: "report",
      description: "May take up to 5 s.",
      inputSchema: z.object({}).strict(),
      isMutating: true,
      requiredPermission: undefined,
      timeoutMs: 5_000,
      handler: async () => {
        ran = true;
        return {};
      },
    });
    const { outcome } = await runScripted(setup, {
      tools: [report as unknown as ToolDefinition],
      timeoutMs: 800,
      script: [{ toolCalls: [call("r", "report", {})] }, { content: "no time for the report" }],
    });
    expect(ran).toBe(false);
    expect(outcome.status).toBe("completed");
    expect(outcome.toolResults[0]?.error).toMatchObject({
      code: "DEADLINE_EXCEEDED",
      details: { started: false, mayHaveCommitted: false, timeoutMs: 5_000 },
    });
    expect(outcome.toolResults[0]?.error?.details.remainingMs).toBeLessThan(800);
  });

  it("a tool is stopped at its own timeout (TOOL_TIMEOUT) and the run goes on", async () => {
    const stuck = defineTool({
      name: "stuck",
      description: "Hangs.",
      inputSchema: z.object({}).strict(),
      isMutating: false,
      requiredPermission: undefined,
      timeoutMs: 100,
      handler: async (_input, _security, context) => {
        await sleep(5_000, context.signal);
        return {};
      },
    });
    const { outcome } = await runScripted(setup, {
      tools: [stuck as unknown as ToolDefinition],
      script: [{ toolCalls: [call("s", "stuck", {})] }, { content: "it hung" }],
    });
    expect(outcome.status).toBe("completed");
    expect(outcome.toolResults[0]).toMatchObject({
      status: "fatal_error",
      error: { code: "TOOL_TIMEOUT", retryable: true, details: { timeoutMs: 100, mayHaveCommitted: false } },
    });
    expect(outcome.toolResults[0]?.metadata.latencyMs).toBeLessThan(1_000);
  });

  it("a tool result over the size cap is truncated with a marker", async () => {
    const { outcome } = await runScripted(setup, {
      tools: [bigTool()],
      script: [{ toolCalls: [call("b", "big", {})] }, { content: "ok" }],
    });
    expect(outcome.status).toBe("completed");
    const [message] = toolMessages(setup.model, 1);
    expect(Buffer.byteLength(message?.content ?? "", "utf8")).toBeLessThanOrEqual(16_384);
    expect(Buffer.byteLength(message?.content ?? "", "utf8")).toBeGreaterThan(15_000);
    expect(String(message?.result.data)).toMatch(/^\{"text":"éé/);
    // The data alone is 40011 bytes ({"text":"é"×20000}); the envelope adds about a hundred more.
    const truncated = outcome.toolResults[0]?.metadata.truncated;
    expect(truncated?.maxBytes).toBe(16_384);
    expect(truncated?.originalBytes).toBeGreaterThan(40_011);
    expect(truncated?.originalBytes).toBeLessThan(40_300);
    expect(String(message?.result.data)).toContain(
      `[truncated by boundloop: this tool result was ${truncated?.originalBytes} bytes, over the 16384-byte cap]`,
    );
  });

  it("every cycle is reported to onCycle, including the last", async () => {
    const { cycles } = await runScripted(setup, {
      tools: [echoTool()],
      script: [{ toolCalls: [call("a", "echo", { n: 1 })] }, { content: "done" }],
    });
    expect(cycles.map((c) => [c.cycle, c.finishReason, c.toolCalls.length, c.outcome ?? null])).toEqual([
      [1, "tool_calls", 1, null],
      [2, "stop", 0, "completed"],
    ]);
  });
});

describe("cycle limit", () => {
  it("max_cycles_exceeded may make one last call with tool_choice none so the model can summarize", async () => {
    const echo = echoTool();
    const { outcome, cycles } = await runScripted(setup, {
      tools: [echo],
      caps: { ...DEFAULT_CAPS, summarizeOnMaxCycles: true },
      limits: { maxCycles: 1 },
      script: [{ toolCalls: [call("a", "echo", { n: 1 })] }, { content: "summary: n was 1" }],
    });
    expect(outcome.status).toBe("max_cycles_exceeded");
    expect(outcome.answer).toBe("summary: n was 1");
    expect(outcome.details.summarized).toBe(true);
    expect(outcome.cycles).toBe(1);
    expect(setup.model.requests.map((r) => r.body.tool_choice)).toEqual(["auto", "none"]);
    expect(cycles.map((c) => [c.cycle, c.summary ?? false, c.outcome ?? null])).toEqual([
      [1, false, null],
      [2, true, "max_cycles_exceeded"],
    ]);
  });

  it("a request can switch the summary off, and without it the run makes exactly maxCycles model calls", async () => {
    const { outcome } = await runScripted(setup, {
      tools: [echoTool()],
      caps: { ...DEFAULT_CAPS, summarizeOnMaxCycles: true },
      limits: { maxCycles: 1, summarizeOnMaxCycles: false },
      script: [{ toolCalls: [call("a", "echo", { n: 1 })] }, { content: "never" }],
    });
    expect(outcome.status).toBe("max_cycles_exceeded");
    expect(outcome.answer).toBeNull();
    expect(outcome.details.summarized).toBe(false);
    expect(setup.model.requests).toHaveLength(1);
  });
});

describe("model errors", () => {
  it("the SDK retries 5xx; a provider still failing ends model_error with its HTTP status", async () => {
    const failing = { status: 503, headers: { "retry-after-ms": "10" } };
    const { outcome, cycles } = await runScripted(retrying, {
      tools: [echoTool()],
      script: [failing, failing, failing, { content: "never" }],
    });
    expect(outcome.status).toBe("model_error");
    expect(outcome.modelErrorStatus).toBe(503);
    expect(outcome.details.modelError?.status).toBe(503);
    expect(retrying.model.requests).toHaveLength(3); // first try + 2 SDK retries
    expect(cycles).toEqual([expect.objectContaining({ cycle: 1, outcome: "model_error" })]);
  });

  it("a retry that succeeds within the deadline is invisible to the run", async () => {
    const { outcome } = await runScripted(retrying, {
      tools: [echoTool()],
      script: [{ status: 429, headers: { "retry-after-ms": "10" } }, { content: "fine" }],
    });
    expect(outcome.status).toBe("completed");
    expect(outcome.modelErrorStatus).toBeNull();
    expect(retrying.model.requests).toHaveLength(2);
  });

  it("the SDK's retry backoff stays inside the deadline, and the provider's status is kept", async () => {
    const { outcome, endedAt, deadlineAt } = await runScripted(retrying, {
      tools: [echoTool()],
      timeoutMs: 500,
      script: [{ status: 503, headers: { "retry-after-ms": "5000" } }, { content: "too late" }],
    });
    expect(outcome.status).toBe("model_error");
    expect(outcome.modelErrorStatus).toBe(503);
    expect(outcome.reason).toContain("at the deadline");
    expect(endedAt - deadlineAt).toBeLessThan(250);
    expect(retrying.model.requests).toHaveLength(1);
  });

  it("a second reply with neither text nor tool calls is model_error with its finish_reason in details", async () => {
    const { outcome, cycles } = await runScripted(setup, {
      tools: [echoTool()],
      script: [
        { content: null, toolCalls: [], finishReason: "tool_calls" },
        { content: "", finishReason: "eos" },
      ],
    });
    expect(outcome.status).toBe("model_error");
    expect(outcome.answer).toBeNull();
    expect(outcome.modelErrorStatus).toBeNull();
    expect(outcome.details.modelError).toEqual({
      status: null,
      message: "no text and no tool calls in the reply",
      finishReason: "eos",
    });
    expect(cycles.map((c) => [c.cycle, c.finishReason, c.outcome ?? null])).toEqual([
      [1, "tool_calls", null],
      [2, "eos", "model_error"],
    ]);
  });

  it("a dropped connection or a broken body is model_error without an HTTP status", async () => {
    const dropped = await runScripted(setup, { tools: [echoTool()], script: [{ dropConnection: true }] });
    expect(dropped.outcome.status).toBe("model_error");
    expect(dropped.outcome.modelErrorStatus).toBeNull();
    const broken = await runScripted(setup, {
      tools: [echoTool()],
      script: [{ rawBody: '{"id":"x","choices":[' }],
    });
    expect(broken.outcome.status).toBe("model_error");
    // The client gets a fixed sentence; the SDK's parse error goes to the logs' hook only.
    expect(broken.outcome.reason).toBe("The model provider failed.");
    expect(broken.outcome.details.modelError).toEqual({
      status: null,
      message: "the provider could not be reached",
    });
    expect(broken.failures).toEqual([
      expect.objectContaining({ source: "model", code: "provider", detail: expect.stringMatching(/JSON/) }),
    ]);
  });
});
