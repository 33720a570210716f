import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ApprovalPageSchema, ProblemSchema, RunRecordSchema } from "../functions/api/contract.js";
import { decide, GBP_RULES, json, pollUntil, SEED_PROMPT, userEvent } from "./support/approvals.js";
import { type DurableStack, startDurableStack } from "./support/durable.js";
import { runEvent } from "./support/idempotency.js";
import { tenantKeys } from "./support/reliability.js";

let stack: DurableStack;
beforeAll(async () => {
  stack = await startDurableStack({ APPROVAL_RULES: GBP_RULES, APPROVAL_TIMEOUT_SECONDS: "2" });
});
afterAll(async () => {
  await stack?.stop();
});

describe("an approval nobody decides", () => {
  it("expires after APPROVAL_TIMEOUT_SECONDS: the model gets APPROVAL_EXPIRED, nothing is recorded, a late decision is 409", async () => {
    const tenantId = "tenant_apr_expiry";
    const event = runEvent({ tenantId, prompt: SEED_PROMPT });
    event.headers = { ...event.headers, prefer: "respond-async" };
    const started = RunRecordSchema.parse(json(await stack.invoke(event)));
    const paused = await pollUntil(stack, started.runId, tenantId, ["running"]);
    expect(paused.status).toBe("awaiting_approval");
    const approvalId = paused.pendingApprovals?.[0]?.approvalId ?? "";

    const done = await pollUntil(stack, started.runId, tenantId, ["running", "awaiting_approval"], 20_000);
    expect(done.status).toBe("completed");
    const expired = done.steps
      .flatMap((step) => step.toolCalls.map((call) => call.result))
      .find((result) => result.metadata.toolName === "recordInvoice");
    expect(expired).toMatchObject({ status: "business_error", error: { code: "APPROVAL_EXPIRED" } });
    expect(expired?.metadata.approval).toMatchObject({ approvalId, decision: "expired", decidedBy: null });
    expect(JSON.stringify(stack.model.requests.at(-1)?.messages)).toContain("APPROVAL_EXPIRED");
    expect(await tenantKeys(stack.deps.ddb, stack.config.table.name, tenantId, ["INVOICE#"])).toHaveLength(0);

    const late = await decide(stack, { runId: started.runId, approvalId, tenantId }, "approve");
    expect(late.statusCode).toBe(409);
    expect(ProblemSchema.parse(json(late))).toMatchObject({
      code: "APPROVAL_EXPIRED",
      approvalStatus: "expired",
    });
    // It leaves the pending list for the decided one: expired, when, and nobody who decided.
    const list = (status: string) =>
      stack.invoke(
        userEvent(
          { sub: "usr_approver", tenantId, scope: "billing:approve" },
          "GET",
          `/v1/approvals?status=${status}`,
        ),
      );
    expect(ApprovalPageSchema.parse(json(await list("pending"))).items).toEqual([]);
    const decided = ApprovalPageSchema.parse(json(await list("decided"))).items;
    expect(decided.map((item) => [item.approvalId, item.status, item.decidedBy, item.reason])).toEqual([
      [approvalId, "expired", null, null],
    ]);
    expect(decided[0]?.decidedAt).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    // Listed from the approval itself, moved by the expiry's one update: one item, no copy.
    expect(
      await tenantKeys(stack.deps.ddb, stack.config.table.name, tenantId, ["APPROVAL#", "DECIDED#"]),
    ).toEqual([`APPROVAL#${started.runId}#${approvalId}`]);
  });
});
