/**
 * functions/runner/handler.ts end to end: the deployed runner module, imported with its environment as
 * Lambda would give it (config parsed at cold start), driven by the durable SDK's local testing runner
 * (real `withDurableExecution`, checkpoints and replay), over DynamoDB Local and the local model server
 * spoken to over HTTP.
 */
import { randomUUID } from "node:crypto";
import { LocalDurableTestRunner } from "@aws/durable-execution-sdk-js-testing";
import { afterAll, beforeAll, describe, expect, inject, it, vi } from "vitest";
import { type LocalModelServer, startModelServer } from "../local/model-server.js";
import { clampRunLimits } from "../shared/agent/run-limits.js";
import { type Config, loadConfig } from "../shared/config.js";
import { type ApiDeps, createApiDeps } from "../shared/deps.js";
import type { DurableRunPayload } from "../shared/durable/executions.js";
import { ensureTable } from "../shared/store/table.js";

let model: LocalModelServer;
let config: Config;
let deps: ApiDeps;
let handler: ConstructorParameters<typeof LocalDurableTestRunner>[0]["handlerFunction"];
const saved = { ...process.env };

beforeAll(async () => {
  model = await startModelServer();
  const env = {
    DYNAMODB_ENDPOINT: inject("dynamoEndpoint"),
    OPENAI_BASE_URL: model.baseURL,
    TABLE_NAME: `test-${randomUUID()}`,
    POWERTOOLS_LOG_LEVEL: "SILENT",
  };
  Object.assign(process.env, env);
  config = loadConfig(process.env);
  deps = createApiDeps(config);
  await ensureTable(deps.ddb, config.table.name);
  vi.resetModules();
  ({ handler } = (await import("../functions/runner/handler.js")) as never);
  await LocalDurableTestRunner.setupTestEnvironment({ skipTime: false });
});
afterAll(async () => {
  await LocalDurableTestRunner.teardownTestEnvironment();
  process.env = saved;
  deps?.ddb.destroy();
  await model?.stop();
});

/** The payload the API would send for a new run of `tenantId`, after writing its `running` record. */
async function startedRun(tenantId: string, prompt: string): Promise<DurableRunPayload> {
  const runId = `run_${randomUUID().replaceAll("-", "")}`;
  const limits = clampRunLimits({ ...config.limits, runTimeoutMs: config.durable.runTimeoutMs }, {});
  const record = {
    tenantId,
    runId,
    userId: "usr_runner",
    prompt,
    limits: { maxCycles: limits.maxCycles, timeoutMs: limits.runTimeoutMs },
  };
  // On a loaded machine the SDK may retry a put that did land (a timed-out attempt): the store then
  // answers `exists` with the record.
  const started = await deps.runs.start(record);
  const run = started.kind === "written" ? started.record : started.existing;
  if (!run) throw new Error(`The run ${runId} vanished.`);
  const startedAt = Date.parse(run.startedAt);
  return {
    version: 1,
    runId,
    runScope: runId,
    security: { userId: "usr_runner", tenantId, permissions: ["billing:write"] },
    prompt,
    limits,
    startedAt,
    deadlineAt: startedAt + limits.runTimeoutMs,
  };
}

describe("functions/runner/handler.ts on the durable SDK's local runner", () => {
  it("runs a durable run to completion: each model call and tool turn a checkpointed step, the outcome and audit trail stored", async () => {
    const tenantId = `tenant_runner_${randomUUID().slice(0, 8)}`;
    const payload = await startedRun(tenantId, "What is the UK tax on 100.00 GBP?");
    model.script([
      {
        toolCalls: [
          {
            id: "call_1",
            name: "calculateTax",
            arguments: JSON.stringify({
              amount: "100.00",
              currency: "GBP",
              jurisdiction: "GB",
              taxPointDate: null,
            }),
          },
        ],
      },
      { content: "The tax is 20.00 GBP." },
    ]);
    const runner = new LocalDurableTestRunner({ handlerFunction: handler });
    const execution = await runner.run({ payload });
    expect(execution.getStatus()).toBe("SUCCEEDED");
    const result = execution.getResult() as { status: string; cycles: number; answer: string; runId: string };
    expect(result).toMatchObject({
      runId: payload.runId,
      status: "completed",
      cycles: 2,
      answer: "The tax is 20.00 GBP.",
    });
    const names = execution.getOperations().map((operation) => operation.getName());
    expect(names).toEqual(
      expect.arrayContaining(["cycle-1:model", "cycle-1:tools", "cycle-2:model", "run:finish"]),
    );
    const stored = await deps.runs.get(tenantId, payload.runId);
    expect(stored?.run).toMatchObject({ status: "completed", cycles: 2, answer: "The tax is 20.00 GBP." });
    expect(stored?.steps.map((step: { cycle: number }) => step.cycle)).toEqual([1, 2]);
    const quote = stored?.steps[0]?.toolCalls[0];
    expect(quote).toMatchObject({ name: "calculateTax", result: { status: "success" } });
    const quoteId = String((quote?.result.data as { quoteId: string } | undefined)?.quoteId);
    expect(await deps.quotes.lookup(tenantId, quoteId, Date.now())).toMatchObject({
      kind: "live",
      quote: { tenantId, quoteId },
    });
  });

  it("an event that is not a run payload fails the execution before anything is written or the model called", async () => {
    const requests = model.requests.length;
    const runner = new LocalDurableTestRunner({ handlerFunction: handler });
    const execution = await runner.run({ payload: { version: 1, runId: "run_x", prompt: "" } });
    expect(execution.getStatus()).toBe("FAILED");
    expect(model.requests.length).toBe(requests);
    expect(await deps.runs.get("tenant_runner_none", "run_x")).toBeUndefined();
  });
});
