/**
 * Deciding an approval (docs/approvals.md): billing:approve and the four-eyes rule, a repeated or
 * opposite decision, concurrent decisions, and tenant isolation of decisions and the pending listing;
 * the real API handler with the durable runner on the testing SDK's local runner, DynamoDB Local and
 * the local model server.
 */
import { describe, expect, it } from "vitest";
import { ApprovalPageSchema, ApprovalSchema, ProblemSchema } from "../functions/api/contract.js";
import { approvalRuns, decide, GBP_RULES, json, pollUntil, userEvent } from "./support/approvals.js";
import { durableStackForFile } from "./support/durable.js";

const stack = durableStackForFile({ MAX_CYCLES: "5", APPROVAL_RULES: GBP_RULES }, { planner: true });
const { invoices, pausedRun } = approvalRuns(stack);

describe("the decision", () => {
  it("needs billing:approve, and the four-eyes rule keeps the run's own user out", async () => {
    const tenantId = "tenant_apr_eyes";
    const { target } = await pausedRun(tenantId);
    const noPermission = await decide(stack, target, "approve", { scope: "billing:write" });
    expect(noPermission.statusCode).toBe(403);
    expect(ProblemSchema.parse(json(noPermission))).toMatchObject({
      code: "FORBIDDEN",
      requiredPermission: "billing:approve",
    });
    const ownRun = await decide(stack, target, "approve", {
      sub: "usr_idem",
      scope: "billing:approve billing:write",
    });
    expect(ownRun.statusCode).toBe(403);
    const problem = ProblemSchema.parse(json(ownRun));
    expect(problem).toMatchObject({ code: "FORBIDDEN", rule: "four_eyes" });
    expect(problem.detail).toMatch(/four-eyes/i);
    // Nothing was decided: the approval is still pending.
    const stored = await stack.deps.approvals.get(tenantId, target.runId, target.approvalId);
    expect(stored?.approval.status).toBe("pending");
    await decide(stack, target, "reject", { reason: "cleanup" });
    await pollUntil(stack, target.runId, tenantId);
  });

  it("the same decision again returns the stored one; the opposite is 409", async () => {
    const tenantId = "tenant_apr_again";
    const { target } = await pausedRun(tenantId);
    const first = ApprovalSchema.parse(json(await decide(stack, target, "approve")));
    const again = await decide(stack, target, "approve", { sub: "usr_other_approver" });
    expect(again.statusCode).toBe(200);
    expect(ApprovalSchema.parse(json(again))).toEqual(first);
    const opposite = await decide(stack, target, "reject");
    expect(opposite.statusCode).toBe(409);
    expect(ProblemSchema.parse(json(opposite))).toMatchObject({
      code: "APPROVAL_DECIDED",
      approvalStatus: "approved",
      approvalId: target.approvalId,
    });
    const done = await pollUntil(stack, target.runId, tenantId);
    expect(done.status).toBe("completed");
    expect(await invoices(tenantId)).toHaveLength(1);
  });

  it("concurrent approve and reject: one 200, one 409, and the run follows the winner", async () => {
    const tenantId = "tenant_apr_race";
    const { target } = await pausedRun(tenantId);
    const [a, b] = await Promise.all([
      decide(stack, target, "approve", { sub: "usr_approver_a" }),
      decide(stack, target, "reject", { sub: "usr_approver_b", reason: "no" }),
    ]);
    expect([a.statusCode, b.statusCode].sort()).toEqual([200, 409]);
    const winner = ApprovalSchema.parse(json(a.statusCode === 200 ? a : b));
    const done = await pollUntil(stack, target.runId, tenantId);
    expect(done.status).toBe("completed");
    expect(await invoices(tenantId)).toHaveLength(winner.status === "approved" ? 1 : 0);
  });

  it("another tenant's approver gets 404, and only sees its own tenant's pending approvals", async () => {
    const tenantId = "tenant_apr_iso";
    const { target } = await pausedRun(tenantId);
    const other = await decide(stack, { ...target, tenantId: "tenant_apr_other" }, "approve");
    expect(other.statusCode).toBe(404);
    expect(ProblemSchema.parse(json(other)).code).toBe("NOT_FOUND");

    const list = (forTenant: string, query = "?status=pending") =>
      stack.invoke(
        userEvent(
          { sub: "usr_approver", tenantId: forTenant, scope: "billing:approve" },
          "GET",
          `/v1/approvals${query}`,
        ),
      );
    const own = await list(tenantId);
    expect(own.statusCode).toBe(200);
    const page = ApprovalPageSchema.parse(json(own));
    expect(page.items.map((item) => item.approvalId)).toEqual([target.approvalId]);
    expect(page.items[0]).toMatchObject({ status: "pending", runId: target.runId, tenantId });
    expect(ApprovalPageSchema.parse(json(await list("tenant_apr_other"))).items).toEqual([]);
    // Approvers only: a billing writer is refused.
    const writer = await stack.invoke(
      userEvent({ sub: "usr_w", tenantId, scope: "billing:write" }, "GET", "/v1/approvals?status=pending"),
    );
    expect(writer.statusCode).toBe(403);
    // A cursor of another listing is refused.
    expect((await list(tenantId, "?status=pending&cursor=eyJ4IjoxfQ")).statusCode).toBe(400);

    await decide(stack, target, "approve");
    await pollUntil(stack, target.runId, tenantId);
    expect(ApprovalPageSchema.parse(json(await list(tenantId))).items).toEqual([]);
  });
});
