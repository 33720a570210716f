import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { RunRecordSchema } from "../functions/api/contract.js";
import { eventForRoute } from "../local/durable-runner.js";
import type { RunEvent } from "../shared/runs/events.js";
import { decide, GBP_RULES, json, pollUntil } from "./support/approvals.js";
import { type DurableStack, startDurableStack } from "./support/durable.js";
import { runEvent } from "./support/idempotency.js";
import { parseSse, runEventsOf } from "./support/streaming.js";

// docs/run-events.md: the same events for a durable run and for a run handed over for approval.
let stack: DurableStack;
beforeAll(async () => {
  stack = await startDurableStack({ MAX_CYCLES: "5", APPROVAL_RULES: GBP_RULES, EVENTS_POLL_MS: "50" });
});
afterAll(async () => {
  await stack?.stop();
});
beforeEach(() => {
  stack.model.usePlanner();
});

const SEED_PROMPT =
  "Calculate tax for two invoices: 1500 GBP for a client in the UK, and 500 EUR for a client in Germany (DE). If tax calculation succeeds, record the invoice for the UK client.";

/** GET /v1/runs/{runId}/events on the buffered API entry (it answers once the stream ends). */
async function events(tenantId: string, runId: string): Promise<RunEvent[]> {
  const result = await stack.invoke(
    eventForRoute(runEvent({ tenantId, prompt: "x" }), "GET", `/v1/runs/${runId}/events`),
  );
  expect(result.statusCode, result.body).toBe(200);
  const body = result.isBase64Encoded
    ? Buffer.from(result.body ?? "", "base64").toString("utf8")
    : result.body;
  return runEventsOf(parseSse(body ?? ""));
}

const expectConsecutive = (list: RunEvent[]) =>
  expect(list.map((e) => e.seq)).toEqual(list.map((_, i) => i + 1));

describe("run events of durable runs", () => {
  it("an async seed run (Prefer: respond-async) has the synchronous run's events, in order", async () => {
    const tenantId = "tenant_ev_async";
    // A small invoice needs no approval: 150 GBP is under the 1000.00 threshold.
    const prompt = SEED_PROMPT.replace("1500 GBP", "150 GBP");
    const post = runEvent({ tenantId, prompt });
    post.headers = { ...post.headers, prefer: "respond-async" };
    const started = await stack.invoke(post);
    expect(started.statusCode, started.body).toBe(202);
    const { runId } = RunRecordSchema.parse(json(started));
    const list = await events(tenantId, runId);
    expectConsecutive(list);
    expect(list.map((e) => e.type)).toEqual([
      "run.started",
      "model.call.finished",
      "tool.call.started",
      "tool.call.started",
      "tool.call.finished",
      "tool.call.finished",
      "model.call.finished",
      "tool.call.started",
      "tool.call.finished",
      "model.call.finished",
      "run.finished",
    ]);
    expect(list.at(-1)).toMatchObject({ status: "completed", cycles: 3 });
  });

  it("a synchronous run handed over for approval: one log, the request, the decision, the rest, no event twice", async () => {
    const tenantId = "tenant_ev_handover";
    const paused = await stack.invoke(runEvent({ tenantId, prompt: SEED_PROMPT }));
    expect(paused.statusCode, paused.body).toBe(202);
    const run = RunRecordSchema.parse(json(paused));
    // While it waits, the log already says so.
    const waiting = await stack.deps.runEvents.store.read(tenantId, run.runId, 0);
    expect(waiting.events.map((e) => e.type).at(-1)).toBe("approval.requested");
    const approvalId = run.pendingApprovals?.[0]?.approvalId ?? "";
    expect(waiting.events.at(-1)).toMatchObject({ approvalId, toolName: "recordInvoice" });
    expect((await decide(stack, { runId: run.runId, approvalId, tenantId }, "approve")).statusCode).toBe(200);
    await pollUntil(stack, run.runId, tenantId);
    const list = await events(tenantId, run.runId);
    expectConsecutive(list);
    expect(list.map((e) => e.type)).toEqual([
      "run.started",
      "model.call.finished",
      "tool.call.started",
      "tool.call.started",
      "tool.call.finished",
      "tool.call.finished",
      "model.call.finished",
      "tool.call.started",
      "approval.requested",
      "approval.decided",
      "tool.call.finished",
      "model.call.finished",
      "run.finished",
    ]);
    expect(list.find((e) => e.type === "approval.decided")).toMatchObject({
      approvalId,
      decision: "approved",
      decidedBy: "usr_approver",
    });
    expect(list.at(-1)).toMatchObject({ status: "completed" });
    expect(await stack.deps.ledger.list(tenantId)).toHaveLength(1);
  });
});
