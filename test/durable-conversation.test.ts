/**
 * Conversations across durable runs (docs/durable-runs.md, Conversations): the real API handler with the
 * runner on the testing SDK's LocalDurableTestRunner, DynamoDB Local, and the local model server over
 * HTTP through the real openai client. An async run continues a sync one, a sync run continues an async
 * one, and a running async run cannot be continued yet.
 */
import type { APIGatewayProxyStructuredResultV2 } from "aws-lambda";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { ProblemSchema, RunRecordSchema, RunResponseSchema } from "../functions/api/contract.js";
import { type RecordedRequest, transcriptProblem } from "../local/model-server.js";
import type { ToolResult } from "../shared/agent/result.js";
import { estimateTokens, type HistoryMessage } from "../shared/agent/transcript.js";
import { fitHistoryToCheckpoint, MAX_HISTORY_CHECKPOINT_BYTES } from "../shared/durable/conversation-load.js";
import { header } from "./fixtures/events.js";
import { expectContinues } from "./support/conversation.js";
import { type DurableStack, runPathEvent, startDurableStack } from "./support/durable.js";
import { runEvent } from "./support/idempotency.js";
import { tenantKeys } from "./support/reliability.js";

const TAX_PROMPT = "Calculate tax on 1500 GBP for a client in the UK.";
const RECORD_PROMPT = "Now record it.";

let stack: DurableStack;
beforeAll(async () => {
  stack = await startDurableStack({ MAX_CYCLES: "5" });
});
afterAll(async () => {
  await stack?.stop();
});
beforeEach(() => {
  stack.model.usePlanner();
});

type Result = APIGatewayProxyStructuredResultV2;
const json = (response: Result) => JSON.parse(response.body ?? "") as Record<string, unknown>;

/** POST /v1/runs as `tenantId`'s usr_idem, async with Prefer: respond-async when `async` is set. */
function post(
  tenantId: string,
  body: Record<string, unknown>,
  options: { async?: boolean; key?: string } = {},
): Promise<Result> {
  const event = runEvent({ tenantId, body: JSON.stringify(body), key: options.key });
  if (options.async) event.headers = { ...event.headers, prefer: "respond-async" };
  return stack.invoke(event);
}

/** Polls GET /v1/runs/{runId} until the run leaves `running`; returns the final record. */
async function poll(runId: string, tenantId: string, timeoutMs = 25_000) {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const response = await stack.invoke(runPathEvent(runId, tenantId));
    expect(response.statusCode).toBe(200);
    const run = RunRecordSchema.parse(json(response));
    if (run.status !== "running") return run;
    if (Date.now() > until) throw new Error(`run ${runId} still running after ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

const resultsOf = (run: { steps: Array<{ toolCalls: Array<{ result: ToolResult }> }> }) =>
  run.steps.flatMap((step) => step.toolCalls.map((call) => call.result));
const quoteIdOf = (result: ToolResult | undefined) =>
  (result?.data as { quoteId: string } | undefined)?.quoteId;

describe("an async run continuing a synchronous run", () => {
  it("starts from the earlier transcript (loaded in the history:load step), records the quote once, and shows previousRunId and history", async () => {
    const tenantId = "tenant_durconv_a";
    const firstResponse = await post(tenantId, { prompt: TAX_PROMPT });
    expect(firstResponse.statusCode, firstResponse.body).toBe(200);
    const first = RunResponseSchema.parse(json(firstResponse));
    expect(first.status).toBe("completed");
    const quoteId = quoteIdOf(first.toolResults[0]) as string;
    expect(quoteId).toMatch(/^qt_[0-9a-f]{32}$/);

    const from = stack.model.requests.length;
    const accepted = await post(
      tenantId,
      { prompt: RECORD_PROMPT, previousRunId: first.runId },
      { async: true },
    );
    expect(accepted.statusCode, accepted.body).toBe(202);
    const started = RunRecordSchema.parse(json(accepted));
    expect(started.status).toBe("running");
    expect(started.previousRunId).toBe(first.runId);

    const run = await poll(started.runId, tenantId);
    expect(run.status).toBe("completed");
    const history = expectContinues(
      stack.model.requests[from] as RecordedRequest,
      { prompt: TAX_PROMPT, answer: first.answer, quoteId },
      RECORD_PROMPT,
    );
    const summary = { messages: 4, estimatedTokens: estimateTokens(history), droppedMessages: 0 };
    expect(started.history).toEqual(summary);
    expect(run).toMatchObject({ previousRunId: first.runId, history: summary });
    const results = resultsOf(run);
    expect(results.map((r) => `${r.metadata.toolName}:${r.status}`)).toEqual(["recordInvoice:success"]);
    expect(results[0]?.data).toMatchObject({ invoice: { quoteId } });
    expect(await stack.deps.ledger.list(tenantId)).toHaveLength(1);

    const execution = stack.executions.get(started.runId);
    await execution?.done;
    expect(execution?.status).toBe("SUCCEEDED");
    const names = execution?.result?.getOperations().map((op) => op.getName());
    expect(names?.[0]).toBe("history:load");
    expect(names?.at(-1)).toBe("run:finish");
    // The execution's input names the previous run, never carries its transcript.
    expect(execution?.payload.conversation).toEqual({
      previousRunId: first.runId,
      historyMaxTokens: stack.config.history.maxTokens,
    });
    expect(JSON.stringify(execution?.payload)).not.toContain(TAX_PROMPT);
  });

  it("a replay after an interruption takes the history from the checkpoint: one model request per cycle", async () => {
    const tenantId = "tenant_durconv_replay";
    const first = RunResponseSchema.parse(json(await post(tenantId, { prompt: TAX_PROMPT })));
    const from = stack.model.requests.length;
    let interrupted = 0;
    stack.faults.beforeStep = (name) => {
      if (name === "cycle-1:model" && interrupted++ === 0)
        throw new Error("invocation lost after history:load");
    };
    try {
      const accepted = await post(
        tenantId,
        { prompt: RECORD_PROMPT, previousRunId: first.runId },
        { async: true },
      );
      const started = RunRecordSchema.parse(json(accepted));
      const run = await poll(started.runId, tenantId);
      expect(run.status).toBe("completed");
      expect(interrupted).toBe(2);
      expect(stack.model.requests.length - from).toBe(run.cycles);
      const execution = stack.executions.get(started.runId);
      await execution?.done;
      const load = execution?.result?.getOperations().find((op) => op.getName() === "history:load");
      expect(load?.getStepDetails()?.attempt).toBe(1);
      expect(await stack.deps.ledger.list(tenantId)).toHaveLength(1);
    } finally {
      stack.faults.beforeStep = undefined;
    }
  });
});

describe("a synchronous run continuing a finished async run", () => {
  it("gets the async run's stored transcript in order and records its quote", async () => {
    const tenantId = "tenant_durconv_b";
    const accepted = await post(tenantId, { prompt: TAX_PROMPT }, { async: true });
    expect(accepted.statusCode).toBe(202);
    const asyncRun = await poll(RunRecordSchema.parse(json(accepted)).runId, tenantId);
    expect(asyncRun.status).toBe("completed");
    const quoteId = quoteIdOf(resultsOf(asyncRun)[0]) as string;
    expect(quoteId).toMatch(/^qt_[0-9a-f]{32}$/);

    const from = stack.model.requests.length;
    const response = await post(tenantId, { prompt: RECORD_PROMPT, previousRunId: asyncRun.runId });
    expect(response.statusCode, response.body).toBe(200);
    const second = RunResponseSchema.parse(json(response));
    expect(second.status).toBe("completed");
    expect(second.previousRunId).toBe(asyncRun.runId);
    const history = expectContinues(
      stack.model.requests[from] as RecordedRequest,
      { prompt: TAX_PROMPT, answer: asyncRun.answer, quoteId },
      RECORD_PROMPT,
    );
    expect(second.history).toEqual({
      messages: 4,
      estimatedTokens: estimateTokens(history),
      droppedMessages: 0,
    });
    expect(second.toolResults.map((r) => `${r.metadata.toolName}:${r.status}`)).toEqual([
      "recordInvoice:success",
    ]);
    expect(await stack.deps.ledger.list(tenantId)).toHaveLength(1);
  });
});

describe("continuing an async run that has not finished", () => {
  it("is 409 PREVIOUS_RUN_IN_PROGRESS, sync or async, before any key is claimed or anything written; once cancelled it is 409 PREVIOUS_RUN_NOT_CONTINUABLE", async () => {
    const tenantId = "tenant_durconv_running";
    stack.model.script([{ delayMs: 2_000, content: "Thinking done." }]);
    const started = RunRecordSchema.parse(
      json(await post(tenantId, { prompt: TAX_PROMPT }, { async: true })),
    );
    expect(started.status).toBe("running");
    const keysBefore = await tenantKeys(stack.deps.ddb, stack.config.table.name, tenantId);
    const executionsBefore = stack.executions.names().length;

    for (const async of [false, true]) {
      const response = await post(
        tenantId,
        { prompt: RECORD_PROMPT, previousRunId: started.runId },
        { async, key: `"durconv-${String(async)}"` },
      );
      expect(response.statusCode).toBe(409);
      expect(header(response, "content-type")).toBe("application/problem+json");
      expect(ProblemSchema.parse(json(response))).toMatchObject({
        code: "PREVIOUS_RUN_IN_PROGRESS",
        previousRunStatus: "running",
      });
      expect(Number(header(response, "retry-after"))).toBeGreaterThanOrEqual(1);
    }
    // Another user's or an unknown run: 404 on the async path too.
    const unknown = await post(
      tenantId,
      { prompt: RECORD_PROMPT, previousRunId: "run_unknown" },
      { async: true },
    );
    expect(unknown.statusCode).toBe(404);
    expect(ProblemSchema.parse(json(unknown)).code).toBe("NOT_FOUND");
    // Nothing was claimed or written: no Idempotency-Key record, no run, no execution.
    expect(await tenantKeys(stack.deps.ddb, stack.config.table.name, tenantId)).toEqual(keysBefore);
    expect(stack.executions.names().length).toBe(executionsBefore);

    const cancelled = await stack.invoke(runPathEvent(started.runId, tenantId, "cancel"));
    expect(cancelled.statusCode).toBe(200);
    const after = await post(
      tenantId,
      { prompt: RECORD_PROMPT, previousRunId: started.runId },
      { async: true },
    );
    expect(after.statusCode).toBe(409);
    expect(ProblemSchema.parse(json(after))).toMatchObject({
      code: "PREVIOUS_RUN_NOT_CONTINUABLE",
      previousRunStatus: "cancelled",
    });
    await stack.executions.get(started.runId)?.done;
  });
});

describe("fitHistoryToCheckpoint (the history:load step's result under the 256 KB checkpoint limit)", () => {
  it("drops the oldest whole turns until the JSON fits, leaves no orphaned tool message, and counts what it dropped", () => {
    const text = "x".repeat(10_000);
    const messages: HistoryMessage[] = [];
    for (let turn = 0; turn < 30; turn += 1) {
      const id = `call_${turn}`;
      messages.push(
        { role: "user", content: `turn ${turn} ${text}` },
        {
          role: "assistant",
          content: null,
          tool_calls: [{ id, type: "function", function: { name: "calculateTax", arguments: "{}" } }],
        },
        { role: "tool", tool_call_id: id, content: text },
        { role: "assistant", content: `answer ${turn}` },
      );
    }
    const conversation = {
      previousRunId: "run_prev",
      conversationId: "run_first",
      messages,
      summary: { messages: messages.length, estimatedTokens: estimateTokens(messages), droppedMessages: 2 },
    };
    expect(Buffer.byteLength(JSON.stringify(conversation))).toBeGreaterThan(MAX_HISTORY_CHECKPOINT_BYTES);
    const fitted = fitHistoryToCheckpoint(conversation);
    expect(Buffer.byteLength(JSON.stringify(fitted))).toBeLessThanOrEqual(MAX_HISTORY_CHECKPOINT_BYTES);
    expect(fitted.messages.length).toBeGreaterThan(0);
    expect(fitted.messages.length % 4).toBe(0);
    expect(fitted.messages[0]).toMatchObject({ role: "user" });
    expect(fitted.messages).toEqual(messages.slice(messages.length - fitted.messages.length));
    expect(
      transcriptProblem([{ role: "system", content: "s" }, ...fitted.messages] as never),
    ).toBeUndefined();
    expect(fitted.summary).toEqual({
      messages: fitted.messages.length,
      estimatedTokens: estimateTokens(fitted.messages),
      droppedMessages: 2 + messages.length - fitted.messages.length,
    });
    // A history that fits is returned as it is.
    const small = { ...conversation, messages: messages.slice(-4) };
    expect(fitHistoryToCheckpoint(small)).toBe(small);
  });
});
