/**
 * Each test replays a failure reported against a peer agent loop, through the real openai client and the
 * local model server's scripted mode (which rejects, as OpenAI does, a request whose tool messages do
 * not pair with its tool calls).
 * This file: what the model sent (arguments that do not parse or validate, a truncated or refused
 * answer, optional fields as null). A tool that throws: loop-peer-failures.test.ts; deadlines and
 * parallel tools: loop-peer-failures-timing.test.ts.
 */
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { defineTool, type ToolDefinition } from "../shared/agent/tool.js";
import { call, echoTool, runScripted, scriptedModelForFile, toolMessages } from "./support/agent-harness.js";

const setup = scriptedModelForFile();

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
