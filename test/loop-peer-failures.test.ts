/**
 * Each test replays a failure reported against a peer agent loop, through the real openai client and the
 * local model server's scripted mode (which rejects, as OpenAI does, a request whose tool messages do
 * not pair with its tool calls).
 */
import type OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import type { LocalModelServer } from "../local/model-server.js";
import { defineTool, type ToolDefinition } from "../shared/agent/tool.js";
import {
  call,
  echoTool,
  runScripted,
  sleep,
  startScriptedModel,
  toolMessages,
} from "./support/agent-harness.js";

let setup: { model: LocalModelServer; client: OpenAI; stop(): Promise<void> };
beforeAll(async () => {
  setup = await startScriptedModel();
});
afterAll(async () => {
  await setup?.stop();
});

/** A tool that throws `thrown` when called with `{ fail: true }`, else returns `{ ok: label }`. */
function flakyTool(thrown: unknown): ToolDefinition {
  return defineTool({
    name: "flaky",
    description: "Throws on request.",
    inputSchema: z.object({ label: z.string(), fail: z.boolean() }).strict(),
    isMutating: false,
    requiredPermission: undefined,
    handler: async ({ label, fail }) => {
      if (fail) throw thrown;
      return { ok: label };
    },
  }) as unknown as ToolDefinition;
}

describe("the loop does not repeat its peers' reported failures", () => {
  it("invalid JSON arguments → validation_error, loop continues (openai-agents-js #723)", async () => {
    const echo = echoTool();
    const { outcome } = await runScripted(setup, {
      tools: [echo],
      script: [{ toolCalls: [call("c1", "echo", '{"n": 1')] }, { content: "done" }],
    });
    expect(outcome.status).toBe("completed");
    expect(outcome.answer).toBe("done");
    expect(echo.calls).toEqual([]);
    expect(outcome.toolResults).toHaveLength(1);
    expect(outcome.toolResults[0]).toMatchObject({
      status: "validation_error",
      error: { code: "INVALID_JSON", retryable: true },
    });
    // The model saw the error and answered in a second cycle.
    expect(setup.model.requests).toHaveLength(2);
    expect(toolMessages(setup.model, 1).map((m) => [m.id, m.result.status])).toEqual([
      ["c1", "validation_error"],
    ]);
  });

  it("a zod failure names the field path and the constraint (openai-agents-js #799)", async () => {
    const order = defineTool({
      name: "order",
      description: "Orders.",
      inputSchema: z
        .object({
          customer: z.object({ name: z.string().min(2) }).strict(),
          quantity: z.number().int().max(3),
        })
        .strict(),
      isMutating: false,
      requiredPermission: undefined,
      handler: async () => ({ ok: true }),
    });
    const { outcome } = await runScripted(setup, {
      tools: [order as unknown as ToolDefinition],
      script: [
        { toolCalls: [call("c1", "order", { customer: { name: "A" }, quantity: "4" })] },
        { content: "done" },
      ],
    });
    expect(outcome.status).toBe("completed");
    const [message] = toolMessages(setup.model, 1);
    expect(message?.result.status).toBe("validation_error");
    expect(message?.result.error?.details).toEqual({
      issues: [
        expect.objectContaining({
          path: "customer.name",
          code: "too_small",
          expected: "string >= 2 characters",
          received: "string",
          minimum: 2,
        }),
        expect.objectContaining({
          path: "quantity",
          code: "invalid_type",
          expected: "number",
          received: "string",
        }),
      ],
    });
    expect(message?.result.error?.message).toContain("customer.name");
    expect(message?.result.error?.message).toContain("expected string >= 2 characters");
  });

  it("the same invalid call three times ends loop_detected before the cycle limit (openai-agents-js #492)", async () => {
    const echo = echoTool();
    const same = { toolCalls: [call("c", "echo", { n: 1000 })] };
    const { outcome, cycles } = await runScripted(setup, {
      tools: [echo],
      limits: { maxCycles: 5 },
      script: [same, same, same, same, { content: "never requested" }],
    });
    expect(outcome.status).toBe("loop_detected");
    expect(outcome.cycles).toBe(3);
    expect(setup.model.requests).toHaveLength(3);
    expect(echo.calls).toEqual([]);
    expect(outcome.details.loop).toEqual({
      toolName: "echo",
      arguments: '{"n":1000}',
      errorCode: "INVALID_ARGUMENTS",
      failures: 3,
      hinted: true,
    });
    // The second identical failure carried the final hint the model saw before its third try.
    const hinted = toolMessages(setup.model, 2).at(-1);
    expect(hinted?.result.error?.message).toContain("the next identical failure ends the run");
    expect(hinted?.result.error?.details).toMatchObject({ loopWarning: { failures: 2, threshold: 2 } });
    expect(cycles.map((c) => c.outcome ?? null)).toEqual([null, null, "loop_detected"]);
    // Every call still has its tool message.
    expect(outcome.messages.filter((m) => m.role === "tool")).toHaveLength(3);
  });

  it("a fatal tool error mid-batch: every tool_call id gets its tool message, the next request is accepted (openai-agents-js #665)", async () => {
    const flaky = flakyTool(new TypeError("socket hang up"));
    const { outcome } = await runScripted(setup, {
      tools: [flaky],
      script: [
        {
          toolCalls: [
            call("a", "flaky", { label: "a", fail: false }),
            call("b", "flaky", { label: "b", fail: true }),
            call("c", "flaky", { label: "c", fail: false }),
          ],
        },
        { content: "handled" },
      ],
    });
    // The scripted server rejects unpaired tool messages with 400, so "completed" means it accepted them.
    expect(outcome.status).toBe("completed");
    expect(outcome.answer).toBe("handled");
    expect(toolMessages(setup.model, 1).map((m) => [m.id, m.result.status])).toEqual([
      ["a", "success"],
      ["b", "fatal_error"],
      ["c", "success"],
    ]);
  });

  it("an abort while a tool runs ends deadline_exceeded, with no further model call (vercel/ai #12878)", async () => {
    const seen: Array<{ name: string; aborted: boolean }> = [];
    const slow = (name: string, isMutating: boolean) =>
      defineTool({
        name,
        description: "Takes 5 s unless aborted.",
        inputSchema: z.object({}).strict(),
        isMutating,
        requiredPermission: undefined,
        handler: async (_input, _security, context) => {
          try {
            await sleep(5_000, context.signal);
          } finally {
            seen.push({ name, aborted: context.signal.aborted });
          }
          return { done: true };
        },
      }) as unknown as ToolDefinition;
    const { outcome, endedAt, deadlineAt } = await runScripted(setup, {
      tools: [slow("slowWrite", true), slow("slowRead", false)],
      timeoutMs: 400,
      script: [{ toolCalls: [call("w", "slowWrite", {}), call("r", "slowRead", {})] }, { content: "never" }],
    });
    expect(outcome.status).toBe("deadline_exceeded");
    expect(outcome.details.deadline?.phase).toBe("tool_calls");
    expect(setup.model.requests).toHaveLength(1);
    expect(endedAt - deadlineAt).toBeLessThan(250);
    expect(seen.sort((x, y) => x.name.localeCompare(y.name))).toEqual([
      { name: "slowRead", aborted: true },
      { name: "slowWrite", aborted: true },
    ]);
    expect(
      outcome.toolResults.map((r) => [r.metadata.toolCallId, r.status, r.error?.code, r.error?.details]),
    ).toEqual([
      ["w", "fatal_error", "DEADLINE_EXCEEDED", { started: true, mayHaveCommitted: true }],
      ["r", "fatal_error", "DEADLINE_EXCEEDED", { started: true, mayHaveCommitted: false }],
    ]);
    // The partial transcript is valid: both calls answered.
    expect(outcome.messages.filter((m) => m.role === "tool")).toHaveLength(2);
  });

  it("a thrown Error('boom', { cause }): the model gets TOOL_FAILED and a fixed sentence, the error's text only the logs' hook (vercel/ai #13056)", async () => {
    const secret = new Error("connect ECONNREFUSED 10.0.3.7:5432", {
      cause: new Error("table billing_prod.invoices"),
    });
    const { outcome, failures } = await runScripted(setup, {
      tools: [flakyTool(new Error("boom", { cause: secret }))],
      script: [{ toolCalls: [call("c1", "flaky", { label: "x", fail: true })] }, { content: "sorry" }],
    });
    expect(outcome.status).toBe("completed");
    const [message] = toolMessages(setup.model, 1);
    expect(message?.result.error).toEqual({
      code: "TOOL_FAILED",
      message: "flaky failed with an internal error; it has no side effects.",
      details: { mayHaveCommitted: false },
      retryable: false,
    });
    // Nothing of the error reaches the model's request or the client's outcome.
    const sent = JSON.stringify(setup.model.requests);
    for (const leaked of ["boom", "ECONNREFUSED", "10.0.3.7", "billing_prod"]) {
      expect(sent).not.toContain(leaked);
      expect(JSON.stringify(outcome)).not.toContain(leaked);
    }
    expect(failures).toEqual([
      {
        source: "tool",
        name: "flaky",
        code: "TOOL_FAILED",
        detail:
          "Error: boom (cause: Error: connect ECONNREFUSED 10.0.3.7:5432 (cause: Error: table billing_prod.invoices))",
      },
    ]);

    // Not only Errors: a thrown plain object is described for the logs, never "{}" or "[object Object]".
    const objectRun = await runScripted(setup, {
      tools: [flakyTool({ reason: "boom-object", code: 7 })],
      script: [{ toolCalls: [call("c2", "flaky", { label: "x", fail: true })] }, { content: "sorry" }],
    });
    expect(objectRun.outcome.status).toBe("completed");
    expect(toolMessages(setup.model, 1)[0]?.result.error?.message).not.toContain("boom-object");
    expect(objectRun.failures[0]?.detail).toContain("boom-object");
    expect(objectRun.failures[0]?.detail).not.toContain("[object Object]");
  });

  it("an approval policy that throws: APPROVAL_CHECK_FAILED with a fixed sentence, the error's text only the logs' hook", async () => {
    let ran = false;
    const guarded = defineTool({
      name: "guarded",
      description: "Needs approval above a threshold.",
      inputSchema: z.object({ label: z.string() }).strict(),
      isMutating: true,
      requiredPermission: undefined,
      needsApproval: async () => {
        throw new Error("ResourceNotFoundException: table approvals-prod-eu not found");
      },
      handler: async () => {
        ran = true;
        return { ok: true };
      },
    }) as unknown as ToolDefinition;
    const { outcome, failures } = await runScripted(setup, {
      tools: [guarded],
      script: [{ toolCalls: [call("c1", "guarded", { label: "x" })] }, { content: "sorry" }],
    });
    expect(ran).toBe(false);
    expect(outcome.toolResults[0]?.error).toMatchObject({
      code: "APPROVAL_CHECK_FAILED",
      message:
        "guarded did not run: whether it needs approval could not be checked. The same call can be made again.",
      retryable: true,
    });
    expect(JSON.stringify(setup.model.requests)).not.toContain("approvals-prod-eu");
    expect(failures).toEqual([
      {
        source: "approval_check",
        name: "guarded",
        code: "APPROVAL_CHECK_FAILED",
        detail: "Error: ResourceNotFoundException: table approvals-prod-eu not found",
      },
    ]);
  });

  it("finish_reason length with a tool call: nothing is dispatched (vercel/ai PR #19066)", async () => {
    const echo = echoTool();
    const { outcome, cycles } = await runScripted(setup, {
      tools: [echo],
      script: [{ toolCalls: [call("c1", "echo", { n: 1 })], finishReason: "length" }, { content: "never" }],
    });
    expect(outcome.status).toBe("model_output_truncated");
    expect(outcome.details.finishReason).toBe("length");
    expect(echo.calls).toEqual([]);
    expect(outcome.toolResults).toEqual([]);
    expect(setup.model.requests).toHaveLength(1);
    expect(cycles).toHaveLength(1);
    expect(cycles[0]).toMatchObject({
      finishReason: "length",
      toolCalls: [],
      outcome: "model_output_truncated",
    });
  });

  it("optional fields: the strict schema is accepted, and null is stripped (vercel/ai #5360)", async () => {
    const received: unknown[] = [];
    const note = defineTool({
      name: "addNote",
      description: "Adds a note.",
      inputSchema: z
        .object({ text: z.string(), tag: z.string().optional(), pinned: z.boolean().optional() })
        .strict(),
      isMutating: false,
      requiredPermission: undefined,
      handler: async (input) => {
        received.push(input);
        return { saved: true };
      },
    });
    const { outcome } = await runScripted(setup, {
      tools: [note as unknown as ToolDefinition],
      script: [
        { toolCalls: [call("c1", "addNote", { text: "hi", tag: null, pinned: true })] },
        { content: "saved" },
      ],
    });
    expect(outcome.status).toBe("completed");
    expect(outcome.toolResults[0]?.status).toBe("success");
    // zod saw no `tag` at all (null stripped), and the non-null optional value arrived.
    expect(received).toEqual([{ text: "hi", pinned: true }]);
    expect(Object.hasOwn(received[0] as object, "tag")).toBe(false);
    // What the model was offered: a strict schema, every field required, optional ones nullable.
    const offered = setup.model.requests[0]?.tools[0] as {
      function: { strict: boolean; parameters: Record<string, unknown> };
    };
    expect(offered.function.strict).toBe(true);
    expect(offered.function.parameters).toMatchObject({
      required: ["text", "tag", "pinned"],
      additionalProperties: false,
      properties: {
        text: { type: "string" },
        tag: { anyOf: [{ type: "string" }, { type: "null" }] },
        pinned: { anyOf: [{ type: "boolean" }, { type: "null" }] },
      },
    });
  });

  it("a batch of one valid and one invalid call: the valid one runs, both results are present (vercel/ai #4446)", async () => {
    const echo = echoTool();
    const { outcome } = await runScripted(setup, {
      tools: [echo],
      script: [
        { toolCalls: [call("ok", "echo", { n: 7 }), call("bad", "echo", { n: "seven" })] },
        { content: "x" },
      ],
    });
    expect(outcome.status).toBe("completed");
    expect(echo.calls).toEqual([7]);
    expect(outcome.toolResults.map((r) => [r.metadata.toolCallId, r.status, r.data])).toEqual([
      ["ok", "success", { n: 7 }],
      ["bad", "validation_error", null],
    ]);
    expect(toolMessages(setup.model, 1).map((m) => m.id)).toEqual(["ok", "bad"]);
  });

  it("one of three parallel tools throws: the other two results are kept (langchain-ai/deepagentsjs #485)", async () => {
    const { outcome } = await runScripted(setup, {
      tools: [flakyTool(new RangeError("index out of range"))],
      script: [
        {
          toolCalls: [
            call("1", "flaky", { label: "one", fail: false }),
            call("2", "flaky", { label: "two", fail: true }),
            call("3", "flaky", { label: "three", fail: false }),
          ],
        },
        { content: "x" },
      ],
    });
    expect(outcome.status).toBe("completed");
    expect(outcome.toolResults.map((r) => [r.status, r.data, r.error?.message ?? null])).toEqual([
      ["success", { ok: "one" }, null],
      ["fatal_error", null, "flaky failed with an internal error; it has no side effects."],
      ["success", { ok: "three" }, null],
    ]);
  });

  it("two 1 s tools take about 1 s in total, with results in call order (openai-node #1131)", async () => {
    const wait = defineTool({
      name: "wait",
      description: "Waits about 1 s.",
      inputSchema: z.object({ label: z.string(), ms: z.number() }).strict(),
      isMutating: false,
      requiredPermission: undefined,
      handler: async ({ label, ms }, _security, context) => {
        await sleep(ms, context.signal);
        return { label };
      },
    });
    const { outcome, cycles } = await runScripted(setup, {
      tools: [wait as unknown as ToolDefinition],
      script: [
        // The first finishes last, yet its result comes first.
        {
          toolCalls: [
            call("slow", "wait", { label: "a", ms: 1_000 }),
            call("fast", "wait", { label: "b", ms: 950 }),
          ],
        },
        { content: "done" },
      ],
    });
    expect(outcome.status).toBe("completed");
    const toolPhaseMs = Math.max(...(cycles[0]?.toolCalls.map((c) => c.result.metadata.latencyMs) ?? []));
    expect(toolPhaseMs).toBeGreaterThanOrEqual(990);
    expect(outcome.durationMs).toBeGreaterThanOrEqual(1_000);
    expect(outcome.durationMs).toBeLessThan(1_600); // sequential would be ≥ 1950 ms
    expect(outcome.toolResults.map((r) => [r.metadata.toolCallId, r.data])).toEqual([
      ["slow", { label: "a" }],
      ["fast", { label: "b" }],
    ]);
  });

  it("model latency longer than the deadline ends deadline_exceeded within 250 ms of the deadline", async () => {
    const { outcome, endedAt, deadlineAt, cycles } = await runScripted(setup, {
      tools: [echoTool()],
      timeoutMs: 500,
      script: [{ content: "too late", delayMs: 5_000 }],
    });
    expect(outcome.status).toBe("deadline_exceeded");
    expect(outcome.details.deadline?.phase).toBe("model_call");
    const overshootMs = endedAt - deadlineAt;
    expect(overshootMs).toBeGreaterThanOrEqual(0);
    expect(overshootMs).toBeLessThan(250);
    expect(cycles).toEqual([
      expect.objectContaining({ cycle: 1, finishReason: null, outcome: "deadline_exceeded" }),
    ]);
  });

  it("a refusal ends model_refused, with no retry", async () => {
    const echo = echoTool();
    const { outcome } = await runScripted(setup, {
      tools: [echo],
      script: [{ refusal: "I can't help with that." }, { content: "second try" }],
    });
    expect(outcome.status).toBe("model_refused");
    expect(outcome.reason).toContain("I can't help with that.");
    expect(outcome.answer).toBeNull();
    expect(setup.model.requests).toHaveLength(1);
    expect(outcome.cycles).toBe(1);
  });
});
