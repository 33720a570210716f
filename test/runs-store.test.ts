import { randomUUID } from "node:crypto";
import { type DynamoDBDocumentClient, GetCommand } from "@aws-sdk/lib-dynamodb";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import type { CycleRecord } from "../shared/agent/loop.js";
import type { ToolResult } from "../shared/agent/result.js";
import { ConfigError, loadConfig } from "../shared/config.js";
import type { AgentRunShapes } from "../shared/runs/run-shapes.js";
import { createDocumentClient } from "../shared/store/dynamo.js";
import { keys } from "../shared/store/keys.js";
import { MAX_ARGUMENT_CHARS, RunStore } from "../shared/store/runs.js";
import { ensureTable } from "../shared/store/table.js";

const TTL = 30 * 86_400;
let ddb: DynamoDBDocumentClient;
let tableName: string;
let store: RunStore<AgentRunShapes>;

beforeAll(async () => {
  const config = loadConfig({
    DYNAMODB_ENDPOINT: inject("dynamoEndpoint"),
    TABLE_NAME: `test-${randomUUID()}`,
  });
  tableName = config.table.name;
  ddb = createDocumentClient(config.table);
  await ensureTable(ddb, tableName);
  store = new RunStore<AgentRunShapes>(ddb, tableName, config.runs.ttlSeconds);
});
afterAll(() => {
  ddb?.destroy();
});

const usage = (total: number) => ({ promptTokens: total - 1, completionTokens: 1, totalTokens: total });
const result = (data: unknown): ToolResult => ({
  status: "success",
  data,
  error: null,
  metadata: { toolName: "calculateTax", toolCallId: "call_1", latencyMs: 3, idempotencyKey: null },
});
const cycle = (n: number, args = "{}", data: unknown = { ok: true }): CycleRecord => ({
  cycle: n,
  request: { messageCount: 2 * n, toolsOffered: ["calculateTax"] },
  finishReason: "tool_calls",
  modelLatencyMs: 12,
  usage: usage(10),
  toolCalls: [{ id: "call_1", name: "calculateTax", arguments: args, result: result(data) }],
});
const raw = async (tenantId: string, sk: string) =>
  (await ddb.send(new GetCommand({ TableName: tableName, Key: { pk: keys.tenant(tenantId), sk } }))).Item;
/** Starts a run of usr_1 and returns its record (the id must be new). */
async function start(tenantId: string, runId: string, now?: Date) {
  const started = await store.start(
    {
      tenantId,
      runId,
      userId: "usr_1",
      prompt: "secret prompt text",
      limits: { maxCycles: 3, timeoutMs: 1000 },
    },
    now,
  );
  if (started.kind !== "written") throw new Error(`The run ${runId} already exists.`);
  return started.record;
}

describe("RunStore", () => {
  it("writes the run at start with a ttl RUN_TTL_SECONDS ahead, without the prompt text", async () => {
    const now = new Date("2026-11-30T06:00:00.500Z");
    const run = await start("t1", "run_start", now);
    expect(run).toMatchObject({
      status: "running",
      cyclesRecorded: 0,
      finishedAt: null,
      expiresAt: "2026-12-30T06:00:00.000Z",
    });
    const item = await raw("t1", "RUN#run_start");
    expect(item).toMatchObject({
      pk: "TENANT#t1",
      sk: "RUN#run_start",
      type: "run",
      ttl: Math.floor(now.getTime() / 1000) + TTL,
    });
    expect(item?.prompt).toEqual({ chars: 18, sha256: expect.stringMatching(/^[0-9a-f]{64}$/) });
    expect(JSON.stringify(item)).not.toContain("secret prompt text");
    // The id is taken: nothing is written, and the record that holds it is returned.
    expect(
      await store.start({
        tenantId: "t1",
        runId: "run_start",
        userId: "usr_2",
        prompt: "other",
        limits: { maxCycles: 1, timeoutMs: 1 },
      }),
    ).toEqual({
      kind: "exists",
      existing: run,
    });
    expect((await raw("t1", "RUN#run_start"))?.userId).toBe(item?.userId);
  });

  it("appends one item per cycle, moves the run forward, and never rewrites a cycle", async () => {
    await start("t1", "run_steps");
    await store.appendStep("t1", "run_steps", cycle(1), { usage: usage(10) });
    await store.appendStep("t1", "run_steps", cycle(2), { usage: usage(20) });
    const stepItem = await raw("t1", "RUN#run_steps#STEP#0002");
    expect(stepItem).toMatchObject({
      type: "run_step",
      runId: "run_steps",
      cycle: 2,
      ttl: expect.any(Number),
    });
    expect(await store.appendStep("t1", "run_steps", cycle(2), { usage: usage(20) })).toEqual({
      kind: "exists",
    });
    const found = await store.get("t1", "run_steps");
    expect(found?.run).toMatchObject({ status: "running", cyclesRecorded: 2, usage: usage(20) });
    expect(found?.steps.map((s) => s.cycle)).toEqual([1, 2]);
    expect(found?.steps[0]).toEqual({
      cycle: 1,
      recordedAt: expect.any(String),
      request: { messageCount: 2, toolsOffered: ["calculateTax"] },
      finishReason: "tool_calls",
      modelLatencyMs: 12,
      usage: usage(10),
      toolCalls: [
        {
          id: "call_1",
          name: "calculateTax",
          arguments: "{}",
          argumentsTruncated: false,
          result: result({ ok: true }),
        },
      ],
    });
  });

  it("writes the outcome once; a finished run is never reopened or overwritten", async () => {
    await start("t1", "run_finish");
    const outcome = {
      status: "completed" as const,
      cycles: 1,
      answer: "done",
      reason: null,
      usage: usage(5),
      durationMs: 40,
    };
    expect(await store.finish("t1", "run_finish", outcome)).toBe(true);
    expect(await store.finish("t1", "run_finish", { ...outcome, status: "model_error", answer: null })).toBe(
      false,
    );
    expect(await store.fail("t1", "run_finish", "x")).toBe(false);
    await store.appendStep("t1", "run_finish", cycle(2), { usage: usage(9) }); // a late step is kept, the record is not touched
    const found = await store.get("t1", "run_finish");
    expect(found?.run).toMatchObject({
      status: "completed",
      answer: "done",
      cycles: 1,
      cyclesRecorded: 0,
      durationMs: 40,
    });
    expect(found?.run.finishedAt).toEqual(expect.any(String));
    expect(await store.finish("t1", "run_never_started", outcome)).toBe(false);
  });

  it("marks a run failed after a server error", async () => {
    await start("t1", "run_fail");
    expect(await store.fail("t1", "run_fail", "The server failed during the run.")).toBe(true);
    expect((await store.get("t1", "run_fail"))?.run).toMatchObject({
      status: "failed",
      reason: "The server failed during the run.",
    });
  });

  it("is tenant-scoped, exact on runId, and treats expired items as absent", async () => {
    await start("t1", "run_a");
    await start("t1", "run_ab");
    await store.appendStep("t1", "run_ab", cycle(1), { usage: usage(10) });
    const a = await store.get("t1", "run_a");
    expect(a?.run.runId).toBe("run_a");
    expect(a?.steps).toEqual([]);
    expect(await store.get("t2", "run_a")).toBeUndefined();
    expect(await store.get("t1", "run_unknown")).toBeUndefined();

    await start("t1", "run_old", new Date(Date.now() - 31 * 86_400_000));
    expect(await raw("t1", "RUN#run_old")).toBeDefined();
    expect(await store.get("t1", "run_old")).toBeUndefined();
  });

  it("bounds a step's size: long arguments are cut, oversized result data is omitted", async () => {
    await start("t1", "run_big");
    const args = `{"note":"${"a".repeat(MAX_ARGUMENT_CHARS + 100)}"}`;
    const appended = await store.appendStep("t1", "run_big", cycle(1, args, { blob: "b".repeat(320_000) }), {
      usage: usage(10),
    });
    if (appended.kind !== "written") throw new Error("the step was not written");
    const { step } = appended;
    expect(step.toolCalls[0]?.arguments).toHaveLength(MAX_ARGUMENT_CHARS);
    expect(step.toolCalls[0]?.argumentsTruncated).toBe(true);
    expect(step.toolCalls[0]?.result.data).toEqual({
      omitted: "tool result data too large for the audit step",
    });
    expect(step.toolCalls[0]?.result.status).toBe("success");
    const stored = await store.get("t1", "run_big");
    expect(stored?.steps[0]?.toolCalls[0]?.arguments).toBe(args.slice(0, MAX_ARGUMENT_CHARS));
  });
});

describe("RUN_TTL_SECONDS", () => {
  it("is bounded, and must outlive an approval wait and a durable execution (checked at cold start)", () => {
    const day = { RUN_TTL_SECONDS: "86400", APPROVAL_TIMEOUT_SECONDS: "3600", QUOTA_WAIT_SECONDS: "3600" };
    expect(loadConfig(day).runs.ttlSeconds).toBe(86_400);
    // A durable run waiting for budget (QUOTA_WAIT_SECONDS, default a day) must not outlive its record.
    expect(() => loadConfig({ ...day, QUOTA_WAIT_SECONDS: "86400" })).toThrow(
      /QUOTA_WAIT_SECONDS \(86400 s\) must be less than RUN_TTL_SECONDS \(86400 s\)/,
    );
    expect(() => loadConfig({ RUN_TTL_SECONDS: "60" })).toThrow(/RUN_TTL_SECONDS/);
    // Each passes on its own; together a paused run's record would expire before its outcome is written.
    expect(() =>
      loadConfig({ RUN_TTL_SECONDS: "7200", APPROVAL_TIMEOUT_SECONDS: "7200", QUOTA_WAIT_SECONDS: "60" }),
    ).toThrow(
      new ConfigError(
        "Invalid configuration: RUN_TTL_SECONDS (7200 s) must exceed APPROVAL_TIMEOUT_SECONDS (7200 s): a run paused for approval would outlive its run record, and its outcome would be lost.",
      ),
    );
    const both = () => loadConfig({ RUN_TTL_SECONDS: "3600", DURABLE_EXECUTION_TIMEOUT_SECONDS: "87300" });
    expect(both).toThrow(
      /APPROVAL_TIMEOUT_SECONDS \(86400 s\).*\. RUN_TTL_SECONDS \(3600 s\) must exceed DURABLE_EXECUTION_TIMEOUT_SECONDS \(87300 s\)/,
    );
    expect(loadConfig({ ...day, DURABLE_EXECUTION_TIMEOUT_SECONDS: "86399" }).runs.ttlSeconds).toBe(86_400);
  });
});
