/**
 * A synchronous run that continues a conversation and pauses for approval is handed over to a durable
 * execution (shared/runs/handover.ts, docs/approvals.md): the real API handler with the runner
 * on the testing SDK's LocalDurableTestRunner, DynamoDB Local, and the local model server over HTTP
 * through the real openai client.
 */
import { describe, expect, it } from "vitest";
import { ProblemSchema, RunRecordSchema, RunResponseSchema } from "../functions/api/contract.js";
import { type RecordedRequest, transcriptProblem } from "../local/model-server.js";
import { DEFAULT_SYSTEM_PROMPT } from "../shared/agent/loop.js";
import { MAX_EXECUTION_INPUT_BYTES } from "../shared/durable/executions.js";
import { header } from "./fixtures/events.js";
import { decide, GBP_RULES, json, pollUntil } from "./support/approvals.js";
import { durableStackForFile, runPathEvent } from "./support/durable.js";
import { runEvent } from "./support/idempotency.js";
import { tenantKeys } from "./support/reliability.js";

const TAX_PROMPT = "Calculate tax on 1500 GBP for a client in the UK.";
const RECORD_PROMPT = "Now record it.";

const stack = durableStackForFile({ MAX_CYCLES: "5", APPROVAL_RULES: GBP_RULES }, { planner: true });

/** A synchronous POST /v1/runs as `tenantId`'s usr_idem. */
const post = (tenantId: string, body: Record<string, unknown>, key?: string) =>
  stack.invoke(runEvent({ tenantId, body: JSON.stringify(body), key }));

/** A completed synchronous run of TAX_PROMPT (no approval: calculateTax needs none) and its quote id. */
async function taxRun(tenantId: string) {
  const response = await post(tenantId, { prompt: TAX_PROMPT });
  expect(response.statusCode, response.body).toBe(200);
  const run = RunResponseSchema.parse(json(response));
  expect(run.status).toBe("completed");
  const quoteId = (run.toolResults[0]?.data as { quoteId?: string } | undefined)?.quoteId ?? "";
  expect(quoteId).toMatch(/^qt_[0-9a-f]{32}$/);
  return { run, quoteId };
}

const roles = (request: RecordedRequest | undefined) =>
  (request?.messages ?? []).map((message) => message.role);

describe("a synchronous continuation that pauses for approval", () => {
  it("is handed over with its history; after approval the durable run completes from the same transcript, repeats no model call and records one invoice", async () => {
    const tenantId = "tenant_apr_conv";
    const { run: first, quoteId } = await taxRun(tenantId);
    const from = stack.model.requests.length;

    const response = await post(tenantId, { prompt: RECORD_PROMPT, previousRunId: first.runId });
    expect(response.statusCode, response.body).toBe(202);
    const paused = RunRecordSchema.parse(json(response));
    expect(header(response, "location")).toBe(`/v1/runs/${paused.runId}`);
    expect(paused).toMatchObject({ status: "awaiting_approval", previousRunId: first.runId });
    expect(paused.pendingApprovals?.[0]?.preview).toMatchObject({ quoteId, grossTotal: "1800.00" });
    // The synchronous part made the run's first model call; the hand-over made none.
    expect(stack.model.requests.length - from).toBe(1);
    const execution = stack.executions.get(paused.runId);
    expect(execution?.payload.carried?.[0]?.name).toBe("history:load");
    expect(execution?.payload.conversation?.previousRunId).toBe(first.runId);

    const approvalId = paused.pendingApprovals?.[0]?.approvalId ?? "";
    const decided = await decide(stack, { runId: paused.runId, approvalId, tenantId }, "approve");
    expect(decided.statusCode).toBe(200);
    const done = await pollUntil(stack, paused.runId, tenantId);
    expect(done).toMatchObject({ status: "completed", cycles: 2, previousRunId: first.runId });
    // Two cycles, two model requests in all: the durable run took cycle 1's model call from the carried step.
    expect(stack.model.requests.length - from).toBe(2);
    expect(await stack.deps.ledger.list(tenantId)).toHaveLength(1);

    // The request after the hand-over still carries the earlier conversation, in order, then this run.
    const before = stack.model.requests[from];
    const after = stack.model.requests[from + 1];
    expect(roles(before)).toEqual(["system", "user", "assistant", "tool", "assistant", "user"]);
    expect(roles(after)).toEqual([...roles(before), "assistant", "tool"]);
    expect(after?.messages.slice(0, 6)).toEqual(before?.messages);
    expect(after?.messages[0]).toEqual({ role: "system", content: DEFAULT_SYSTEM_PROMPT });
    expect(after?.messages[1]).toEqual({ role: "user", content: TAX_PROMPT });
    expect(after?.messages[4]).toEqual({ role: "assistant", content: first.answer });
    expect(after?.messages[5]).toEqual({ role: "user", content: RECORD_PROMPT });
    expect(after?.messages[6]?.tool_calls?.[0]?.function.name).toBe("recordInvoice");
    expect(JSON.parse(String(after?.messages[7]?.content))).toMatchObject({
      status: "success",
      data: { invoice: { quoteId } },
    });
    expect(transcriptProblem(after?.messages ?? [])).toBeUndefined();

    await execution?.done;
    expect(execution?.status).toBe("SUCCEEDED");
    const names = execution?.result?.getOperations().map((op) => op.getName());
    expect(names?.slice(0, 2)).toEqual(["history:load", "cycle-1:model"]);
    // The day's tokens are both runs' own: the call the synchronous part made under its hold is counted
    // once by the durable run's settle (rebuilt from the carried step), and nothing stays reserved.
    const usage = await stack.deps.quotas?.usage({ tenantId, userId: "usr_idem" }, true);
    expect(usage?.tenant?.day.tokens).toEqual({
      used: first.usage.totalTokens + done.usage.totalTokens,
      reserved: 0,
      limit: null,
    });
    expect(usage?.tenant?.inFlight.runs).toBe(0);
  });
});

describe("a continuation that records an already-recorded quote again", () => {
  it("asks nobody: the run completes with QUOTE_ALREADY_RECORDED naming the invoice, and the ledger still holds one", async () => {
    const tenantId = "tenant_apr_dup";
    const { run: first, quoteId } = await taxRun(tenantId);
    // The first recording pauses for approval as before, and records once approved.
    const response = await post(tenantId, { prompt: RECORD_PROMPT, previousRunId: first.runId });
    expect(response.statusCode, response.body).toBe(202);
    const paused = RunRecordSchema.parse(json(response));
    const approvalId = paused.pendingApprovals?.[0]?.approvalId ?? "";
    expect((await decide(stack, { runId: paused.runId, approvalId, tenantId }, "approve")).statusCode).toBe(
      200,
    );
    const done = await pollUntil(stack, paused.runId, tenantId);
    expect(done.status).toBe("completed");
    const [invoice] = await stack.deps.ledger.list(tenantId);
    expect(invoice?.quoteId).toBe(quoteId);

    // The model records the same quote again: the backend's duplicate answer, not another approval.
    const again = await post(tenantId, { prompt: RECORD_PROMPT, previousRunId: done.runId });
    expect(again.statusCode, again.body).toBe(200);
    const rerun = RunResponseSchema.parse(json(again));
    expect(rerun.status).toBe("completed");
    expect(rerun.toolResults.map((r) => [r.metadata.toolName, r.error?.code])).toEqual([
      ["recordInvoice", "QUOTE_ALREADY_RECORDED"],
    ]);
    expect(rerun.toolResults[0]?.error?.details).toMatchObject({ quoteId, invoiceId: invoice?.invoiceId });
    expect(await stack.deps.ledger.list(tenantId)).toHaveLength(1);
    const stored = RunRecordSchema.parse(json(await stack.invoke(runPathEvent(rerun.runId, tenantId))));
    expect(stored.pendingApprovals ?? []).toEqual([]);
  }, 90_000); // a durable pause, a decision and the resumed run, then a synchronous run
});

describe("a hand-over whose input is over the durable execution's 256 KB", () => {
  it("starts nothing, ends the run failed with the reason, and answers 422 HANDOVER_TOO_LARGE (replayed under its Idempotency-Key)", async () => {
    const tenantId = "tenant_apr_big";
    const { run: first, quoteId } = await taxRun(tenantId);
    // The model's first reply carries 300 000 characters of text with its call: a carried step over the limit.
    // Its usage is scripted: the local server cuts an estimated completion over max_tokens (as a real one
    // does), and this reply stands for one a provider sent whole (the hand-over's size is what is tested).
    const big = {
      content: "x".repeat(300_000),
      usage: { prompt_tokens: 1_500, completion_tokens: 900 },
      toolCalls: [
        {
          id: "call_big",
          name: "recordInvoice",
          arguments: JSON.stringify({
            clientName: "UK client",
            quoteId,
            clientReference: null,
            description: null,
          }),
        },
      ],
    };
    stack.model.script([big]);
    const executionsBefore = stack.executions.names().length;
    const body = { prompt: RECORD_PROMPT, previousRunId: first.runId };

    const response = await post(tenantId, body, "big-handover-1");
    expect(response.statusCode, response.body).toBe(422);
    expect(header(response, "content-type")).toBe("application/problem+json");
    const problem = ProblemSchema.parse(json(response));
    expect(problem).toMatchObject({
      code: "HANDOVER_TOO_LARGE",
      runStatus: "failed",
      limitBytes: MAX_EXECUTION_INPUT_BYTES,
    });
    expect(problem.inputBytes).toBeGreaterThan(MAX_EXECUTION_INPUT_BYTES);
    expect(problem.detail).toContain(`${MAX_EXECUTION_INPUT_BYTES}-byte input limit`);
    // No execution was started, no approval stored, no invoice written.
    expect(stack.executions.names().length).toBe(executionsBefore);
    expect(await tenantKeys(stack.deps.ddb, stack.config.table.name, tenantId, ["APPROVAL#"])).toEqual([]);
    expect(await stack.deps.ledger.list(tenantId)).toHaveLength(0);

    const stored = await stack.invoke(runPathEvent(problem.runId ?? "", tenantId));
    expect(stored.statusCode).toBe(200);
    const run = RunRecordSchema.parse(json(stored));
    expect(run.status).toBe("failed");
    expect(run.reason).toContain("input limit of a durable execution");

    // The 422 is stored under the key: a retry gets it again and runs nothing.
    const requests = stack.model.requests.length;
    const replay = await post(tenantId, body, "big-handover-1");
    expect(replay.statusCode).toBe(422);
    expect(header(replay, "idempotent-replayed")).toBe("true");
    expect(ProblemSchema.parse(json(replay))).toEqual(problem);
    expect(stack.model.requests.length).toBe(requests);
  });
});
