/**
 * Approvals end to end (docs/approvals.md): the real API handler with the durable runner on the testing
 * SDK's local runner, DynamoDB Local and the local model server. This file: a run that pauses for an
 * approval, then is approved, rejected or cancelled; a pause inside a synchronous request; two approvals
 * in one turn. Who may decide and how: approvals-decisions.test.ts; the decided listing:
 * approvals-decided.test.ts.
 */
import { describe, expect, it } from "vitest";
import {
  ApprovalPageSchema,
  ApprovalSchema,
  ProblemSchema,
  RunRecordSchema,
} from "../functions/api/contract.js";
import { header } from "./fixtures/events.js";
import {
  approvalRuns,
  decide,
  GBP_RULES,
  json,
  pollUntil,
  resultsOf,
  SEED_PROMPT,
  userEvent,
} from "./support/approvals.js";
import { durableStackForFile, runPathEvent } from "./support/durable.js";
import { runEvent } from "./support/idempotency.js";

const stack = durableStackForFile({ MAX_CYCLES: "5", APPROVAL_RULES: GBP_RULES }, { planner: true });
const { invoices, pausedRun } = approvalRuns(stack);

describe("a call over the threshold pauses the run durably", () => {
  it("pauses with the backend's preview, announces it, and after an approval records the invoice once without repeating a model call", async () => {
    const tenantId = "tenant_apr_ok";
    const requestsBefore = stack.model.requests.length;
    const { run, approval, target } = await pausedRun(tenantId);
    // The cycle it waits in: cycle 1 calculated, cycle 2's model call asked for recordInvoice.
    expect(run.cyclesRecorded).toBe(2);
    expect(approval).toMatchObject({
      toolName: "recordInvoice",
      requestedBy: "usr_idem",
      preview: {
        subtotal: "1500.00",
        taxAmount: "300.00",
        grossTotal: "1800.00",
        currency: "GBP",
        threshold: "1000.00",
      },
    });
    expect(Date.parse(approval.expiresAt) - Date.parse(approval.requestedAt)).toBe(86_400_000);
    expect(await invoices(tenantId)).toHaveLength(0);
    // The calculateTax calls of cycle 1 ran; cycle 2's model call asked for recordInvoice, which waits.
    expect(stack.model.requests.length - requestsBefore).toBe(2);

    const event = stack.approvalEvents.find((e) => e.approvalId === approval.approvalId);
    expect(event).toMatchObject({ tenantId, runId: run.runId, toolName: "recordInvoice" });
    expect(event?.preview).toMatchObject({ grossTotal: "1800.00", currency: "GBP" });
    expect(JSON.stringify(event)).not.toContain("Calculate");
    expect(JSON.stringify(event)).not.toMatch(/callback/i);

    const decided = await decide(stack, target, "approve", { reason: "checked the PO" });
    expect(decided.statusCode).toBe(200);
    const body = ApprovalSchema.parse(json(decided));
    expect(body).toMatchObject({ status: "approved", decidedBy: "usr_approver", reason: "checked the PO" });
    expect(JSON.stringify(body)).not.toMatch(/callback/i);

    const done = await pollUntil(stack, run.runId, tenantId);
    expect(done).toMatchObject({ status: "completed", cycles: 3, cyclesRecorded: 3 });
    expect(await invoices(tenantId)).toHaveLength(1);
    // 3 cycles, 3 model requests: the pause repeated none.
    expect(stack.model.requests.length - requestsBefore).toBe(3);
    const recorded = resultsOf(done).find((r) => r.metadata.toolName === "recordInvoice");
    expect(recorded?.status).toBe("success");
    expect(recorded?.metadata.approval).toMatchObject({
      approvalId: approval.approvalId,
      decision: "approved",
      decidedBy: "usr_approver",
      reason: "checked the PO",
    });
    const execution = stack.executions.get(run.runId);
    await execution?.done;
    const names = execution?.result?.getOperations().map((op) => op.getName());
    expect(names).toContain(`cycle-2:approval:${recorded?.metadata.toolCallId}`);
    expect(names).toContain(`cycle-2:approved:${recorded?.metadata.toolCallId}`);
  });

  it("a rejection records nothing and tells the model why; the run goes on", async () => {
    const tenantId = "tenant_apr_no";
    const { target } = await pausedRun(tenantId);
    const decided = await decide(stack, target, "reject", { reason: "client is on credit hold" });
    expect(decided.statusCode).toBe(200);
    expect(ApprovalSchema.parse(json(decided))).toMatchObject({ status: "rejected" });
    const done = await pollUntil(stack, target.runId, tenantId);
    expect(done.status).toBe("completed");
    expect(await invoices(tenantId)).toHaveLength(0);
    const rejected = resultsOf(done).find((r) => r.metadata.toolName === "recordInvoice");
    expect(rejected).toMatchObject({ status: "business_error", error: { code: "APPROVAL_REJECTED" } });
    expect(rejected?.metadata.approval).toMatchObject({ decision: "rejected", decidedBy: "usr_approver" });
    // The model's next request carries the rejection and its reason.
    const lastRequest = JSON.stringify(stack.model.requests.at(-1)?.messages);
    expect(lastRequest).toContain("APPROVAL_REJECTED");
    expect(lastRequest).toContain("client is on credit hold");
  });
});

describe("a pause inside a synchronous request", () => {
  it("is answered 202 with Location and the awaiting_approval run, which continues durably without repeating a model call", async () => {
    const tenantId = "tenant_apr_sync";
    const requestsBefore = stack.model.requests.length;
    const response = await stack.invoke(runEvent({ tenantId, prompt: SEED_PROMPT, key: "sync-approval-1" }));
    expect(response.statusCode).toBe(202);
    const run = RunRecordSchema.parse(json(response));
    expect(header(response, "location")).toBe(`/v1/runs/${run.runId}`);
    expect(run.status).toBe("awaiting_approval");
    expect(run.pendingApprovals?.[0]?.preview).toMatchObject({ grossTotal: "1800.00", currency: "GBP" });
    expect(stack.model.requests.length - requestsBefore).toBe(2);

    // A replay of the request under its Idempotency-Key answers the same 202 and starts nothing.
    const replay = await stack.invoke(runEvent({ tenantId, prompt: SEED_PROMPT, key: "sync-approval-1" }));
    expect(replay.statusCode).toBe(202);
    expect(header(replay, "idempotent-replayed")).toBe("true");

    const approvalId = run.pendingApprovals?.[0]?.approvalId ?? "";
    expect((await decide(stack, { runId: run.runId, approvalId, tenantId }, "approve")).statusCode).toBe(200);
    const done = await pollUntil(stack, run.runId, tenantId);
    expect(done).toMatchObject({ status: "completed", cycles: 3, cyclesRecorded: 3 });
    expect(await invoices(tenantId)).toHaveLength(1);
    expect(stack.model.requests.length - requestsBefore).toBe(3);
  });
});

describe("cancelling a run that waits for approval", () => {
  it("stops the waiting execution, ends the run cancelled, withdraws its approvals (a later decision is 409) and records no invoice", async () => {
    const tenantId = "tenant_apr_cancel";
    const { run, target } = await pausedRun(tenantId);
    const requestsAtPause = stack.model.requests.length;

    const cancelled = await stack.invoke(runPathEvent(run.runId, tenantId, "cancel"));
    expect(cancelled.statusCode, cancelled.body).toBe(200);
    const body = RunRecordSchema.parse(json(cancelled));
    expect(body).toMatchObject({ status: "cancelled", reason: "Cancelled by usr_idem." });
    expect(body.pendingApprovals).toBeUndefined();

    // The execution waiting in waitForCallback really ends (it does not wait out the 24 h timeout).
    const execution = stack.executions.get(run.runId);
    const ended = await Promise.race([
      execution?.done.then(() => "ended"),
      new Promise((resolve) => setTimeout(() => resolve("still waiting"), 10_000)),
    ]);
    expect(ended).toBe("ended");
    expect(execution?.status).toBe("STOPPED");

    const after = await stack.invoke(runPathEvent(run.runId, tenantId));
    expect(RunRecordSchema.parse(json(after))).toMatchObject({ status: "cancelled", cyclesRecorded: 2 });
    const listed = await stack.invoke(
      userEvent(
        { sub: "usr_approver", tenantId, scope: "billing:approve" },
        "GET",
        "/v1/approvals?status=pending",
      ),
    );
    expect(ApprovalPageSchema.parse(json(listed)).items).toEqual([]);
    const stored = await stack.deps.approvals.get(tenantId, target.runId, target.approvalId);
    expect(stored?.approval).toMatchObject({ status: "cancelled", decidedBy: null, reason: null });
    expect(Date.parse(stored?.approval.decidedAt ?? "")).toBeGreaterThanOrEqual(
      Date.parse(body.finishedAt ?? ""),
    );

    for (const decision of ["approve", "reject"] as const) {
      const late = await decide(stack, target, decision);
      expect(late.statusCode).toBe(409);
      expect(header(late, "content-type")).toBe("application/problem+json");
      const problem = ProblemSchema.parse(json(late));
      expect(problem).toMatchObject({
        code: "APPROVAL_CANCELLED",
        approvalId: target.approvalId,
        approvalStatus: "cancelled",
      });
      expect(problem.detail).toMatch(/cancelled/);
    }
    // Nothing was recorded by the late decisions, and nothing ran after the cancel.
    expect((await stack.deps.approvals.get(tenantId, target.runId, target.approvalId))?.approval).toEqual(
      stored?.approval,
    );
    expect(await invoices(tenantId)).toHaveLength(0);
    expect(stack.model.requests.length).toBe(requestsAtPause);
    const again = await stack.invoke(runPathEvent(run.runId, tenantId, "cancel"));
    expect(again.statusCode).toBe(409);
    expect(ProblemSchema.parse(json(again))).toMatchObject({
      code: "RUN_NOT_RUNNING",
      runStatus: "cancelled",
    });
  });
});

describe("cancelling a waiting run whose execution has already ended", () => {
  it("a cancel interrupted after its stop (or an execution gone while waiting) is finished by the next cancel: 200 cancelled, approvals withdrawn", async () => {
    const tenantId = "tenant_apr_stranded";
    const { run, target } = await pausedRun(tenantId);
    // The stop went through, then the cancel's process died before it wrote the record: the record still
    // waits, and no execution will ever write it again.
    expect(await stack.executions.stop(run.runId)).toBe("stopped");
    await stack.executions.get(run.runId)?.done;
    expect((await stack.deps.runs.getRecord(tenantId, run.runId))?.status).toBe("awaiting_approval");

    const cancelled = await stack.invoke(runPathEvent(run.runId, tenantId, "cancel"));
    expect(cancelled.statusCode, cancelled.body).toBe(200);
    expect(RunRecordSchema.parse(json(cancelled))).toMatchObject({
      status: "cancelled",
      reason: "Cancelled by usr_idem.",
    });
    const stored = await stack.deps.approvals.get(tenantId, target.runId, target.approvalId);
    expect(stored?.approval).toMatchObject({ status: "cancelled", decidedBy: null });
    const late = await decide(stack, target, "approve");
    expect(late.statusCode).toBe(409);
    expect(ProblemSchema.parse(json(late))).toMatchObject({ code: "APPROVAL_CANCELLED" });
    expect(await invoices(tenantId)).toHaveLength(0);
  });
});

describe("two calls needing approval in one turn", () => {
  it("both wait; approving one and rejecting the other records one invoice, tells the model of the rejection, and completes", async () => {
    const tenantId = "tenant_apr_two";
    const prompt =
      "Calculate tax for two invoices: 1500 GBP for a client in the UK, and 2500 GBP for a client in the UK. Record both invoices.";
    const event = runEvent({ tenantId, prompt });
    event.headers = { ...event.headers, prefer: "respond-async" };
    const started = RunRecordSchema.parse(json(await stack.invoke(event)));
    let run = await pollUntil(stack, started.runId, tenantId, ["running"]);
    // Both approvals are stored by their own waits' submitters: poll until both are listed.
    for (let i = 0; (run.pendingApprovals?.length ?? 0) < 2 && i < 100; i += 1) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      run = await pollUntil(stack, started.runId, tenantId, ["running"]);
    }
    expect(run.status).toBe("awaiting_approval");
    const pending = run.pendingApprovals ?? [];
    expect(pending.map((a) => a.preview.grossTotal).sort()).toEqual(["1800.00", "3000.00"]);
    const small = pending.find((a) => a.preview.grossTotal === "1800.00");
    const large = pending.find((a) => a.preview.grossTotal === "3000.00");
    if (!small || !large) throw new Error("missing approval");

    const approved = await decide(
      stack,
      { runId: run.runId, approvalId: small.approvalId, tenantId },
      "approve",
    );
    expect(approved.statusCode).toBe(200);
    // One decided, one still pending: the run keeps waiting and lists the other.
    const between = await pollUntil(stack, run.runId, tenantId, ["running"]);
    expect(between.status).toBe("awaiting_approval");
    expect(between.pendingApprovals?.map((a) => a.approvalId)).toEqual([large.approvalId]);
    expect(await invoices(tenantId)).toHaveLength(0);

    const rejected = await decide(
      stack,
      { runId: run.runId, approvalId: large.approvalId, tenantId },
      "reject",
      { reason: "over the client's credit limit" },
    );
    expect(rejected.statusCode).toBe(200);
    const done = await pollUntil(stack, run.runId, tenantId);
    expect(done).toMatchObject({ status: "completed", cycles: 3 });
    expect(await invoices(tenantId)).toHaveLength(1);
    const records = resultsOf(done).filter((r) => r.metadata.toolName === "recordInvoice");
    expect(records.map((r) => [r.status, r.metadata.approval?.approvalId])).toEqual(
      expect.arrayContaining([
        ["success", small.approvalId],
        ["business_error", large.approvalId],
      ]),
    );
    expect(records).toHaveLength(2);
    const lastRequest = JSON.stringify(stack.model.requests.at(-1)?.messages);
    expect(lastRequest).toContain("APPROVAL_REJECTED");
    expect(lastRequest).toContain("over the client's credit limit");
  });
});
