import type { APIGatewayProxyStructuredResultV2 } from "aws-lambda";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RunRecordSchema } from "../functions/api/contract.js";
import type { ToolResult } from "../shared/agent/result.js";
import {
  RESULT_DATA_BYTES_PER_CYCLE,
  type RunEvent,
  RunEventHub,
  RunEventLog,
} from "../shared/runs/events.js";
import { apiEvent } from "./fixtures/events.js";
import { SEED_PROMPT } from "./support/approvals.js";
import { startTestStack, type TestStack } from "./support/stack.js";
import { functionUrlEvent, runEventsOf, type StreamEntry, startStreamEntry } from "./support/streaming.js";

// tool.call.finished carries the backend's result (data, error) exactly as GET /v1/runs/{runId} shows it
// in the run's steps, so a live view has the backend's numbers before the run ends (docs/run-events.md).

const USER = { sub: "usr_results_01", tenant_id: "tenant_results_01", scope: "billing:write" };

let stack: TestStack;
let entry: StreamEntry;
beforeAll(async () => {
  stack = await startTestStack({ POWERTOOLS_LOG_LEVEL: "SILENT" });
  stack.model.usePlanner();
  entry = await startStreamEntry(stack.deps);
});
afterAll(async () => {
  await stack?.stop();
});

describe("tool.call.finished", () => {
  let events: RunEvent[];
  let finished: Array<Extract<RunEvent, { type: "tool.call.finished" }>>;
  beforeAll(async () => {
    const streamed = await entry.request(
      functionUrlEvent("POST", "/v1/runs", {
        token: await entry.token(USER),
        headers: { accept: "text/event-stream" },
        body: { prompt: SEED_PROMPT },
      }),
    );
    await streamed.done;
    events = runEventsOf(streamed.read);
    finished = events.filter(
      (event): event is Extract<RunEvent, { type: "tool.call.finished" }> =>
        event.type === "tool.call.finished",
    );
  });

  it("carries the backend's numbers and the refusal's code and message, live", () => {
    const [gb, de, invoice] = finished;
    const gbData = gb?.data as {
      jurisdiction: string;
      taxAmount: { amount: string };
      grossTotal: { amount: string };
    };
    expect(gbData.jurisdiction).toBe("GB");
    expect(gbData.taxAmount.amount).toBe("300.00");
    expect(gbData.grossTotal.amount).toBe("1800.00");
    expect(gb?.error).toBeNull();
    expect(de?.data).toBeNull();
    expect(de?.error).toMatchObject({
      code: "UNSUPPORTED_JURISDICTION",
      message: 'Jurisdiction "DE" is not supported. Supported jurisdictions: GB, BD.',
      retryable: false,
    });
    const recorded = invoice?.data as { invoice: { invoiceId: string; grossTotal: { amount: string } } };
    expect(recorded.invoice.invoiceId).toMatch(/^inv_/);
    expect(recorded.invoice.grossTotal.amount).toBe("1800.00");
    expect(finished.every((event) => event.dataOmitted === undefined)).toBe(true);
  });

  it("is what GET /v1/runs/{runId} shows the same caller, call by call: nothing more", async () => {
    const runId = events[0]?.runId as string;
    const response = (await stack.invoke(
      apiEvent("http-api-v2", {
        method: "GET",
        path: `/v1/runs/${runId}`,
        claims: USER,
        body: null,
      }) as never,
    )) as APIGatewayProxyStructuredResultV2;
    const run = RunRecordSchema.parse(JSON.parse(response.body ?? ""));
    const results = new Map(
      run.steps.flatMap((step) => step.toolCalls.map((call) => [call.id, call.result])),
    );
    expect(finished).toHaveLength(3);
    for (const event of finished) {
      const result = results.get(event.toolCallId);
      expect(result, event.toolCallId).toBeDefined();
      expect({ data: event.data, error: event.error }).toEqual({ data: result?.data, error: result?.error });
    }
    // The prompt stays out of every event.
    expect(JSON.stringify(events)).not.toContain(SEED_PROMPT);
  });
});

describe("a cycle whose results are larger than one batch may hold", () => {
  it("carries the data of those that fit and marks the rest dataOmitted; the batch is written", async () => {
    const runId = `run_${crypto.randomUUID()}`;
    const log = new RunEventLog(
      { store: stack.deps.runEvents.store, hub: new RunEventHub() },
      USER.tenant_id,
      runId,
      Math.floor(Date.now() / 1000) + 3600,
    );
    const big = "x".repeat(Math.floor(RESULT_DATA_BYTES_PER_CYCLE * 0.45));
    const result = (id: string): ToolResult => ({
      status: "success",
      data: { blob: big },
      error: null,
      metadata: { toolName: "getInvoice", toolCallId: id, latencyMs: 1, idempotencyKey: null },
    });
    await log.cycle({
      cycle: 1,
      request: { messageCount: 2, toolsOffered: ["getInvoice"] },
      finishReason: "tool_calls",
      modelLatencyMs: 1,
      usage: { promptTokens: 1, completionTokens: 1, totalTokens: 2 },
      toolCalls: ["a", "b", "c"].map((id) => ({
        id,
        name: "getInvoice",
        arguments: "{}",
        result: result(id),
      })),
    });
    const page = await stack.deps.runEvents.store.read(USER.tenant_id, runId, 0);
    const stored = page.events.filter((event) => event.type === "tool.call.finished");
    expect(stored.map((event) => [event.toolCallId, event.dataOmitted ?? false])).toEqual([
      ["a", false],
      ["b", false],
      ["c", true],
    ]);
    expect(stored[0]?.data).toEqual({ blob: big });
    expect(stored[2]?.data).toBeNull();
  });
});
