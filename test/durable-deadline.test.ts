import type { APIGatewayProxyStructuredResultV2 } from "aws-lambda";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RunRecordSchema } from "../functions/api/contract.js";
import type { ScriptedReply } from "../local/model-server.js";
import { loadConfig } from "../shared/config.js";
import { type DurableStack, runPathEvent, startDurableStack } from "./support/durable.js";
import { runEvent } from "./support/idempotency.js";
import { ManualClock } from "./support/streaming.js";

// The run's clock is the test's (the API's start, the runner's deadline and duration go by it): every
// model step moves it on by MODEL_STEP_MS, so where the deadline falls is fixed, however busy the machine.
const ASYNC_RUN_TIMEOUT_MS = 600_000;
const MODEL_STEP_MS = 60_000;
const clock = new ManualClock();
let stack: DurableStack;
beforeAll(async () => {
  stack = await startDurableStack(
    { ASYNC_RUN_TIMEOUT_MS: String(ASYNC_RUN_TIMEOUT_MS), MAX_CYCLES: "50", MAX_TOOL_CALLS_PER_RUN: "500" },
    { clock },
  );
});
afterAll(async () => {
  await stack?.stop();
});

const json = (response: APIGatewayProxyStructuredResultV2) =>
  JSON.parse(response.body ?? "") as Record<string, unknown>;

describe("the absolute deadline of a durable run (ASYNC_RUN_TIMEOUT_MS)", () => {
  it("ends a run that keeps asking for tools past ASYNC_RUN_TIMEOUT_MS as deadline_exceeded", async () => {
    const tenantId = "tenant_async_deadline";
    // A model that never stops asking for a tool, each answer a minute of the run's clock: 40 would take 40 min.
    const replies: ScriptedReply[] = Array.from({ length: 40 }, (_, index) => ({
      toolCalls: [
        {
          id: `call_${index}`,
          name: "calculateTax",
          arguments: '{"amount":1500,"currency":"GBP","jurisdiction":"UK"}',
        },
      ],
    }));
    stack.model.script(replies);
    stack.faults.beforeStep = (name) => {
      if (/^cycle-\d+:model$/.test(name)) clock.advance(MODEL_STEP_MS);
    };
    const event = runEvent({ tenantId, prompt: "keep calculating" });
    event.headers = { ...event.headers, prefer: "respond-async" };
    const response = await stack.invoke(event);
    expect(response.statusCode).toBe(202);
    const started = RunRecordSchema.parse(json(response));
    expect(started.limits.timeoutMs).toBe(ASYNC_RUN_TIMEOUT_MS);
    expect(Date.parse(started.startedAt)).toBe(clock.now());

    const execution = stack.executions.get(started.runId);
    await execution?.done;
    delete stack.faults.beforeStep;
    expect(execution?.status).toBe("SUCCEEDED");
    const read = RunRecordSchema.parse(json(await stack.invoke(runPathEvent(started.runId, tenantId))));
    // Nine model steps moved the clock 540 s; the tenth reached the deadline (600 s) before its call.
    expect(read).toMatchObject({ status: "deadline_exceeded", cycles: 9 });
    expect(stack.model.requests).toHaveLength(9);
    // The deadline is absolute from the start: the run took the timeout, not more.
    expect(read.durationMs).toBe(ASYNC_RUN_TIMEOUT_MS);
  });

  it("ASYNC_RUN_TIMEOUT_MS is capped by the execution timeout minus DEADLINE_RESERVE_MS", () => {
    expect(loadConfig({}).durable.runTimeoutMs).toBe(600_000);
    const capped = loadConfig({ ASYNC_RUN_TIMEOUT_MS: "3600000", DURABLE_EXECUTION_TIMEOUT_SECONDS: "900" });
    expect(capped.durable.runTimeoutMs).toBe(900_000 - 1_500);
  });
});

describe("the per-checkpoint size limit (256 KB)", () => {
  it("a step result over the limit is not retried: the run ends failed, the execution FAILED", async () => {
    const tenantId = "tenant_async_large";
    // Its usage is scripted: the local server cuts an estimated completion over max_tokens (as a real one
    // would), and this test needs the whole 300 000-character answer to reach the checkpoint.
    stack.model.script([
      { content: "x".repeat(300_000), usage: { prompt_tokens: 1_500, completion_tokens: 900 } },
    ]);
    const event = runEvent({ tenantId, prompt: "say a lot" });
    event.headers = { ...event.headers, prefer: "respond-async" };
    const requestsBefore = stack.model.requests.length;
    const started = RunRecordSchema.parse(json(await stack.invoke(event)));
    const execution = stack.executions.get(started.runId);
    await execution?.done;
    expect(execution?.status).toBe("FAILED");
    expect(execution?.result?.getError()?.errorMessage).toMatch(/over the 261120-byte checkpoint limit/);
    const read = RunRecordSchema.parse(json(await stack.invoke(runPathEvent(started.runId, tenantId))));
    expect(read).toMatchObject({ status: "failed", reason: "The server failed during the run.", steps: [] });
    expect(stack.model.requests.length - requestsBefore).toBe(1);
  });
});
