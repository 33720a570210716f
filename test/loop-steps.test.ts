/**
 * The step contract (shared/agent/step.ts): every model call and every turn of tool calls goes through
 * `step(descriptor, fn)` (its `name` stable across replays), and every branch the loop takes is decided from step results, so a runner that
 * returns checkpointed results without calling `fn` replays a run exactly, with no model request.
 */
import type OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import type { LocalModelServer } from "../local/model-server.js";
import { Deadline } from "../shared/agent/deadline.js";
import { type RunOutcome, runAgent } from "../shared/agent/loop.js";
import type { StepDescriptor, StepRunner } from "../shared/agent/step.js";
import { defineTool, type ToolDefinition } from "../shared/agent/tool.js";
import { OpenAIChatModel } from "../shared/model/openai-chat.js";
import { createModelClient } from "../shared/model-client.js";
import { call, runScripted, sleep, startScriptedModel } from "./support/agent-harness.js";
import { seedEvent, startTestStack, type TestStack } from "./support/stack.js";

let stack: TestStack;
let scripted: { model: LocalModelServer; client: OpenAI; stop(): Promise<void> };
beforeAll(async () => {
  stack = await startTestStack();
  scripted = await startScriptedModel();
});
afterAll(async () => {
  await stack?.stop();
  await scripted?.stop();
});

/** A step runner that runs each step and keeps its name and its result as JSON (what a checkpoint holds). */
function recorder() {
  const steps: Array<{ name: string; result: unknown; json: string }> = [];
  const step: StepRunner = async ({ name }, fn) => {
    const result = await fn();
    steps.push({ name, result, json: JSON.stringify(result) });
    return result;
  };
  return { steps, step };
}

/** A step runner that returns the recorded checkpoints by name and never calls `fn`. */
function replayer(checkpoints: Array<{ name: string; json: string }>) {
  const byName = new Map(checkpoints.map((c) => [c.name, c.json]));
  const names: string[] = [];
  const step: StepRunner = async <T>({ name }: StepDescriptor, _fn: () => Promise<T>) => {
    names.push(name);
    const json = byName.get(name);
    if (json === undefined) throw new Error(`no checkpoint named ${name}`);
    return JSON.parse(json) as T;
  };
  return { names, step };
}

/** An outcome without its wall time (the only field a replay may change). */
const timeless = ({ durationMs: _ms, ...outcome }: RunOutcome) => outcome;

describe("the step contract", () => {
  it("the seed scenario: named steps with plain-JSON results; a replay takes the same branches with no model request", async () => {
    const prompt = JSON.parse(seedEvent().body ?? "").prompt as string;
    const security = {
      userId: "usr_9918",
      tenantId: "tenant_steps",
      permissions: ["billing:read", "billing:write"],
    };
    const model = new OpenAIChatModel(
      createModelClient({ apiKey: "test", baseURL: stack.model.baseURL, maxRetries: 0 }),
      "planner",
    );
    const run = async (step: StepRunner) => {
      const deadline = new Deadline(25_000);
      try {
        return await runAgent({
          model,
          tools: stack.deps.tools,
          security,
          prompt,
          runId: "run_steps",
          runScope: "run_steps",
          limits: stack.config.limits,
          deadline,
          step,
        });
      } finally {
        deadline.dispose();
      }
    };

    const recording = recorder();
    const first = await run(recording.step);
    expect(first.status).toBe("completed");
    expect(first.cycles).toBe(3);
    expect(recording.steps.map((s) => s.name)).toEqual([
      "cycle-1:model",
      "cycle-1:tools",
      "cycle-2:model",
      "cycle-2:tools",
      "cycle-3:model",
    ]);
    // Each result is plain JSON: it survives a JSON round trip unchanged (no class, no undefined member).
    for (const { result, json } of recording.steps) expect(JSON.parse(json)).toStrictEqual(result);
    const invoices = await stack.deps.ledger.list(security.tenantId);
    expect(invoices).toHaveLength(1);

    const requestsBefore = stack.model.requests.length;
    const replay = replayer(recording.steps);
    const second = await run(replay.step);
    expect(stack.model.requests.length).toBe(requestsBefore);
    expect(replay.names).toEqual(recording.steps.map((s) => s.name));
    expect(timeless(second)).toEqual(timeless(first));
    expect(await stack.deps.ledger.list(security.tenantId)).toEqual(invoices);
  });

  it("a deadline that passed during tool calls is read from the step result, not the clock, on replay", async () => {
    const slow = defineTool({
      name: "slow",
      description: "Takes 5 s unless aborted.",
      inputSchema: z.object({}).strict(),
      isMutating: false,
      requiredPermission: undefined,
      handler: async (_input, _security, context) => {
        await sleep(5_000, context.signal);
        return {};
      },
    }) as unknown as ToolDefinition;
    const recording = recorder();
    const first = await runScripted(scripted, {
      tools: [slow],
      timeoutMs: 300,
      script: [{ toolCalls: [call("s", "slow", {})] }, { content: "never" }],
      step: recording.step,
    });
    expect(first.outcome.status).toBe("deadline_exceeded");
    expect(first.outcome.details.deadline?.phase).toBe("tool_calls");

    // The replay has a fresh 5 s deadline, yet ends the same way, without calling the model or the tool.
    const replay = replayer(recording.steps);
    const second = await runScripted(scripted, { tools: [slow], script: [], step: replay.step });
    expect(scripted.model.requests).toHaveLength(0);
    expect(second.outcome.status).toBe("deadline_exceeded");
    expect(second.outcome.details.deadline?.phase).toBe("tool_calls");
    expect(second.outcome.toolResults).toEqual(first.outcome.toolResults);
    expect(second.cycles.map((c) => c.outcome ?? null)).toEqual(first.cycles.map((c) => c.outcome ?? null));
  });
});
