import type { APIGatewayProxyStructuredResultV2 } from "aws-lambda";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { ProblemSchema, RunRecordSchema } from "../functions/api/contract.js";
import type { RunRecordStatus } from "../shared/store/runs.js";
import { header } from "./fixtures/events.js";
import { type DurableStack, startDurableStack } from "./support/durable.js";
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
async function onRun(runId: string, tenantId: string, action: "get" | "cancel" = "get") {
  const event = runEvent({ tenantId, prompt: "x" });
  const path = action === "get" ? `/v1/runs/${runId}` : `/v1/runs/${runId}/cancel`;
  Object.assign(event, {
    rawPath: path,
    routeKey: `${action === "get" ? "GET" : "POST"} ${path}`,
    body: null,
  });
  event.requestContext.http.method = action === "get" ? "GET" : "POST";
  event.requestContext.http.path = path;
  return stack.invoke(event);
}

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
