import type { APIGatewayProxyStructuredResultV2 } from "aws-lambda";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { ProblemSchema, RunRecordSchema } from "../functions/api/contract.js";
import type { RunRecordStatus } from "../shared/store/runs.js";
import { header } from "./fixtures/events.js";
import { type DurableStack, runPathEvent, startDurableStack } from "./support/durable.js";
import { heldReply } from "./support/held.js";
import { runEvent } from "./support/idempotency.js";
import { tenantKeys } from "./support/reliability.js";
import { seedEvent } from "./support/stack.js";

const SEED_PROMPT = JSON.parse(seedEvent().body ?? "{}").prompt as string;

let stack: DurableStack;
beforeAll(async () => {
  stack = await startDurableStack({ MAX_CYCLES: "5" });
});
afterAll(async () => {
  await stack?.stop();
});
beforeEach(() => {
  stack.model.usePlanner();
  stack.faults.beforeStep = undefined;
  stack.faults.afterStep = undefined;
});

type Result = APIGatewayProxyStructuredResultV2;
const json = (response: Result) => JSON.parse(response.body ?? "") as Record<string, unknown>;

/** POST /v1/runs with Prefer: respond-async for `tenantId` (the seed prompt unless `prompt` is given). */
async function startAsync(options: { tenantId: string; prompt?: string; key?: string }) {
  const event = runEvent({
    tenantId: options.tenantId,
    prompt: options.prompt ?? SEED_PROMPT,
    key: options.key,
  });
  event.headers = { ...event.headers, prefer: "respond-async" };
  return stack.invoke(event);
}

/** GET (or POST …/cancel) on a run as `tenantId`'s usr_idem. */
const onRun = (runId: string, tenantId: string, action: "get" | "cancel" = "get") =>
  stack.invoke(runPathEvent(runId, tenantId, action));

/** Polls GET until the run leaves `running`; returns every status seen and the final record. */
async function poll(runId: string, tenantId: string, timeoutMs = 25_000) {
  const seen: Array<{ status: RunRecordStatus; cycles: number; retryAfter: string | undefined }> = [];
  const until = Date.now() + timeoutMs;
  for (;;) {
    const response = await onRun(runId, tenantId);
    expect(response.statusCode).toBe(200);
    const run = RunRecordSchema.parse(json(response));
    seen.push({
      status: run.status,
      cycles: run.cyclesRecorded,
      retryAfter: header(response, "retry-after"),
    });
    if (run.status !== "running") return { run, seen };
    if (Date.now() > until) throw new Error(`run ${runId} still running after ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

const invoices = (tenantId: string) =>
  tenantKeys(stack.deps.ddb, stack.config.table.name, tenantId, ["INVOICE#"]);

describe("POST /v1/runs with Prefer: respond-async (through functions/api/handler.ts)", () => {
  it("answers 202 with Location and Retry-After, then GET shows progress and the seed scenario's outcome", async () => {
    const tenantId = "tenant_async_seed";
    const response = await startAsync({ tenantId });
    expect(response.statusCode).toBe(202);
    const started = RunRecordSchema.parse(json(response));
    expect(started).toMatchObject({ status: "running", tenantId, cyclesRecorded: 0, steps: [] });
    expect(header(response, "location")).toBe(`/v1/runs/${started.runId}`);
    expect(header(response, "retry-after")).toBe("1");
    expect(header(response, "preference-applied")).toBe("respond-async");

    const { run, seen } = await poll(started.runId, tenantId);
    expect(seen.filter((s) => s.status === "running").every((s) => s.retryAfter === "1")).toBe(true);
    expect(seen.at(-1)?.retryAfter).toBeUndefined();
    expect(run).toMatchObject({ status: "completed", cycles: 3, cyclesRecorded: 3 });
    const results = run.steps.flatMap((step) => step.toolCalls.map((call) => call.result));
    const gb = results.find((r) => r.status === "success" && r.metadata.toolName === "calculateTax");
    expect(gb?.data).toMatchObject({ taxAmount: { amount: "300.00" }, grossTotal: { amount: "1800.00" } });
    expect(results.find((r) => r.status === "business_error")?.error?.code).toBe("UNSUPPORTED_JURISDICTION");
    expect(await invoices(tenantId)).toHaveLength(1);
    // One model request per cycle; the execution's checkpoints hold every step.
    expect(stack.model.requests).toHaveLength(3);
    const execution = stack.executions.get(started.runId);
    await execution?.done;
    expect(execution?.status).toBe("SUCCEEDED");
    const names = execution?.result?.getOperations().map((op) => op.getName());
    expect(names).toEqual([
      "cycle-1:model",
      "cycle-1:tools",
      "cycle-2:model",
      "cycle-2:tools",
      "cycle-3:model",
      "run:finish",
    ]);
  });
});

describe("replay: checkpoints stand in for work already done", () => {
  it("a run interrupted between steps resumes without a second model request for completed cycles", async () => {
    const tenantId = "tenant_async_between";
    const requestsBefore = stack.model.requests.length;
    let interrupted = 0;
    stack.faults.beforeStep = (name) => {
      // The invocation dies after cycle 1 was checkpointed, before cycle 2's model call.
      if (name === "cycle-2:model" && interrupted++ === 0) throw new Error("invocation lost between steps");
    };
    const started = RunRecordSchema.parse(json(await startAsync({ tenantId })));
    const { run } = await poll(started.runId, tenantId);
    expect(run).toMatchObject({ status: "completed", cycles: 3, cyclesRecorded: 3 });
    expect(interrupted).toBe(2);
    // 3 cycles, 3 model requests: the replay took cycle 1's model reply and tool results from checkpoints.
    expect(stack.model.requests.length - requestsBefore).toBe(3);
    expect(await invoices(tenantId)).toHaveLength(1);
    const execution = stack.executions.get(started.runId);
    await execution?.done;
    expect(execution?.result?.getInvocations().length).toBeGreaterThanOrEqual(2);
    const retried = execution?.result?.getOperations().find((op) => op.getName() === "cycle-2:model");
    expect(retried?.getStepDetails()?.attempt).toBe(2);
    const first = execution?.result?.getOperations().find((op) => op.getName() === "cycle-1:model");
    expect(first?.getStepDetails()?.attempt).toBe(1);
  });

  it("a step cut off mid-way (killed during the recordInvoice turn) is retried, still one invoice", async () => {
    const tenantId = "tenant_async_midstep";
    const requestsBefore = stack.model.requests.length;
    let cut = 0;
    stack.faults.afterStep = async (name) => {
      // The invoice is written; the runner dies before the turn's result is checkpointed.
      if (name === "cycle-2:tools" && cut++ === 0) {
        expect(await invoices(tenantId)).toHaveLength(1);
        throw new Error("runner killed during the tool turn");
      }
    };
    const started = RunRecordSchema.parse(json(await startAsync({ tenantId })));
    const { run } = await poll(started.runId, tenantId);
    expect(cut).toBe(2);
    expect(run).toMatchObject({ status: "completed", cycles: 3 });
    expect(await invoices(tenantId)).toHaveLength(1);
    const record = run.steps[1]?.toolCalls[0]?.result;
    expect(record).toMatchObject({ status: "success", metadata: { toolName: "recordInvoice" } });
    // The retried turn met the invoice its first attempt wrote (same tool idempotency key).
    expect(record?.data).toMatchObject({ replayed: true });
    expect(stack.model.requests.length - requestsBefore).toBe(3);
    const execution = stack.executions.get(started.runId);
    await execution?.done;
    const turn = execution?.result?.getOperations().find((op) => op.getName() === "cycle-2:tools");
    expect(turn?.getStepDetails()?.attempt).toBe(2);
  });
});

describe("POST /v1/runs/{runId}/cancel", () => {
  it("cancel during a slow model call: cancelled, nothing recorded after it; a second cancel is 409", async () => {
    const tenantId = "tenant_async_cancel";
    const requestsBefore = stack.model.requests.length;
    stack.model.script([
      {
        delayMs: 3_000,
        toolCalls: [
          {
            id: "c1",
            name: "calculateTax",
            arguments: '{"amount":1500,"currency":"GBP","jurisdiction":"UK"}',
          },
        ],
      },
    ]);
    const started = RunRecordSchema.parse(json(await startAsync({ tenantId, prompt: "tax on 1500 GBP" })));
    while (stack.model.requests.length === requestsBefore) await new Promise((r) => setTimeout(r, 20));

    const cancelled = await onRun(started.runId, tenantId, "cancel");
    expect(cancelled.statusCode).toBe(200);
    expect(RunRecordSchema.parse(json(cancelled))).toMatchObject({ status: "cancelled", steps: [] });
    const execution = stack.executions.get(started.runId);
    await execution?.done;
    expect(execution?.status).toBe("STOPPED");
    await new Promise((r) => setTimeout(r, 3_200)); // past the slow reply
    const { run } = await poll(started.runId, tenantId);
    expect(run).toMatchObject({ status: "cancelled", cyclesRecorded: 0, steps: [] });
    expect(run.reason).toBe("Cancelled by usr_idem.");
    // The model's late reply reached nothing: no tool ran, no quote or invoice was written.
    expect(stack.model.requests.length - requestsBefore).toBe(1);
    expect(
      await tenantKeys(stack.deps.ddb, stack.config.table.name, tenantId, ["QUOTE#", "INVOICE#"]),
    ).toEqual([]);

    const again = await onRun(started.runId, tenantId, "cancel");
    expect(again.statusCode).toBe(409);
    expect(ProblemSchema.parse(json(again))).toMatchObject({
      code: "RUN_NOT_RUNNING",
      runStatus: "cancelled",
    });
  });

  it("cancelling a finished run is 409 with its final status", async () => {
    const tenantId = "tenant_async_finished";
    const started = RunRecordSchema.parse(json(await startAsync({ tenantId })));
    await poll(started.runId, tenantId);
    const response = await onRun(started.runId, tenantId, "cancel");
    expect(response.statusCode).toBe(409);
    expect(ProblemSchema.parse(json(response))).toMatchObject({
      code: "RUN_NOT_RUNNING",
      runId: started.runId,
      runStatus: "completed",
    });
  });
});

describe("Idempotency-Key on an asynchronous start", () => {
  it("two starts with one key start one execution (the 202 is replayed); another body is 422", async () => {
    const tenantId = "tenant_async_idem";
    const executionsBefore = stack.executions.names().length;
    const first = await startAsync({ tenantId, key: "order-42" });
    expect(first.statusCode).toBe(202);
    const second = await startAsync({ tenantId, key: "order-42" });
    expect(second.statusCode).toBe(202);
    expect(header(second, "idempotent-replayed")).toBe("true");
    const a = RunRecordSchema.parse(json(first));
    expect(RunRecordSchema.parse(json(second)).runId).toBe(a.runId);
    expect(header(second, "location")).toBe(`/v1/runs/${a.runId}`);
    expect(header(second, "retry-after")).toBe("1");

    const other = await startAsync({
      tenantId,
      key: "order-42",
      prompt: "Calculate tax on 10 GBP in the UK",
    });
    expect(other.statusCode).toBe(422);
    expect(ProblemSchema.parse(json(other)).code).toBe("IDEMPOTENCY_KEY_REUSED");

    expect(stack.executions.names().length - executionsBefore).toBe(1);
    const { run } = await poll(a.runId, tenantId);
    expect(run.status).toBe("completed");
    expect(await invoices(tenantId)).toHaveLength(1);
  });

  it("the execution name is the run id derived from tenant + key + body: a repeated start is the same execution", async () => {
    const execution = stack.executions.get(stack.executions.names()[0] as string);
    if (!execution) throw new Error("no execution");
    const executionsBefore = stack.executions.names().length;
    await stack.executions.start(execution.name, execution.payload);
    expect(stack.executions.names().length).toBe(executionsBefore);
    await expect(
      stack.executions.start(execution.name, { ...execution.payload, prompt: "something else" }),
    ).rejects.toThrow(/already started with another input/);
  });
});

describe("tenant isolation", () => {
  it("another tenant's run is 404 on GET and on cancel, and keeps running", async () => {
    const tenantId = "tenant_async_owner";
    // The model call stays in flight (the run `running`) until the intruder's requests are answered.
    const { heldUntil, release } = heldReply();
    stack.model.script([{ heldUntil, content: "Nothing to calculate." }]);
    const started = RunRecordSchema.parse(json(await startAsync({ tenantId, prompt: "hello" })));
    try {
      for (const action of ["get", "cancel"] as const) {
        const response = await onRun(started.runId, "tenant_async_intruder", action);
        expect(response.statusCode).toBe(404);
        expect(ProblemSchema.parse(json(response)).code).toBe("NOT_FOUND");
      }
    } finally {
      release();
    }
    const { run } = await poll(started.runId, tenantId);
    expect(run).toMatchObject({ status: "completed", answer: "Nothing to calculate." });
  });
});

describe("without Prefer: respond-async", () => {
  it("the synchronous path is unchanged: 200 with the outcome, no execution", async () => {
    const executionsBefore = stack.executions.names().length;
    const response = await stack.invoke(runEvent({ tenantId: "tenant_sync_still", prompt: SEED_PROMPT }));
    expect(response.statusCode).toBe(200);
    expect(json(response)).toMatchObject({ status: "completed", cycles: 3 });
    expect(stack.executions.names().length).toBe(executionsBefore);
  });
});
