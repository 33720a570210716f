/**
 * Each test replays a failure reported against a peer agent loop, through the real openai client and the
 * local model server's scripted mode (which rejects, as OpenAI does, a request whose tool messages do
 * not pair with its tool calls).
 * This file: deadlines that fall while a tool or the model runs, and tools running in parallel.
 */
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { defineTool, type ToolDefinition } from "../shared/agent/tool.js";
import { call, echoTool, runScripted, scriptedModelForFile, sleep } from "./support/agent-harness.js";

const setup = scriptedModelForFile();

describe("the loop does not repeat its peers' reported failures", () => {
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
});
