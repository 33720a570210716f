import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import {
  ApprovalPageSchema,
  ApprovalSchema,
  ProblemSchema,
  RunRecordSchema,
} from "../functions/api/contract.js";
import { encodeCursor } from "../shared/store/query.js";
import { listKey, tableKey } from "../shared/store/table.js";
import { header } from "./fixtures/events.js";
import { decide, GBP_RULES, json, pollUntil, SEED_PROMPT, userEvent } from "./support/approvals.js";
import { type DurableStack, runPathEvent, startDurableStack } from "./support/durable.js";
import { runEvent } from "./support/idempotency.js";
import { tenantKeys } from "./support/reliability.js";

let stack: DurableStack;
beforeAll(async () => {
  stack = await startDurableStack({ MAX_CYCLES: "5", APPROVAL_RULES: GBP_RULES });
});
afterAll(async () => {
  await stack?.stop();
});
beforeEach(() => {
  stack.model.usePlanner();
});

const invoices = (tenantId: string) =>
  tenantKeys(stack.deps.ddb, stack.config.table.name, tenantId, ["INVOICE#"]);

/** Starts the seed scenario as a durable run for `tenantId` and waits until it pauses for approval. */
async function pausedRun(tenantId: string) {
  const event = runEvent({ tenantId, prompt: SEED_PROMPT });
  event.headers = { ...event.headers, prefer: "respond-async" };
  const started = RunRecordSchema.parse(json(await stack.invoke(event)));
  const run = await pollUntil(stack, started.runId, tenantId, ["running"]);
  expect(run.status).toBe("awaiting_approval");
  const approval = run.pendingApprovals?.[0];
  if (!approval) throw new Error("no pending approval");
  return { run, approval, target: { runId: run.runId, approvalId: approval.approvalId, tenantId } };
}

/** The tool results of a run's audit steps. */
const resultsOf = (run: { steps: Array<{ toolCalls: Array<{ result: unknown }> }> }) =>
  run.steps.flatMap((step) => step.toolCalls.map((call) => call.result)) as Array<
    ReturnType<typeof RunRecordSchema.parse>["steps"][number]["toolCalls"][number]["result"]
  >;

describe("a call over the threshold pauses the run durably", () => {
  it("pauses with the backend's preview, announces it, and after an approval records the invoice once without repeating a model call", async () => {
    const tenantId = "tenant_apr_ok";
    const requestsBefore = stack.model.requests.length;
    const { run, approval, target } = await pausedRun(tenantId);
    expect(run.cyclesRecorded).toBe(1);
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

describe("the tenant's decided approvals (GET /v1/approvals?status=decided)", () => {
  /** `GET /v1/approvals` with `query` as `user` (billing:approve unless `scope` says otherwise). */
  const list = (tenantId: string, query: string, sub = "usr_approver", scope = "billing:approve") =>
    stack.invoke(userEvent({ sub, tenantId, scope }, "GET", `/v1/approvals${query}`));
  const page = async (tenantId: string, query: string, sub?: string) => {
    const response = await list(tenantId, query, sub);
    expect(response.statusCode, response.body).toBe(200);
    return ApprovalPageSchema.parse(json(response));
  };

  it("lists approved, rejected and cancelled approvals newest first, with who, when, why and the backend's numbers, to every approver of the tenant and to no other tenant", async () => {
    const tenantId = "tenant_apr_decided";
    const otherTenant = "tenant_apr_decided_other";
    const approved = await pausedRun(tenantId);
    const rejected = await pausedRun(tenantId);
    const cancelled = await pausedRun(tenantId);
    const foreign = await pausedRun(otherTenant);
    expect((await page(tenantId, "?status=decided")).items).toEqual([]);

    const ok = await decide(stack, approved.target, "approve", {
      sub: "usr_apr_a",
      reason: "PO 4711 checked",
    });
    expect(ok.statusCode).toBe(200);
    const no = await decide(stack, rejected.target, "reject", { sub: "usr_apr_b", reason: "Over budget" });
    expect(no.statusCode).toBe(200);
    expect((await stack.invoke(runPathEvent(cancelled.run.runId, tenantId, "cancel"))).statusCode).toBe(200);
    expect((await decide(stack, foreign.target, "approve", { sub: "usr_apr_x" })).statusCode).toBe(200);
    for (const { run } of [approved, rejected]) await pollUntil(stack, run.runId, tenantId);
    await pollUntil(stack, foreign.run.runId, otherTenant);

    // A third approver, who decided nothing, sees every decision of the tenant; so does the runs' own user.
    const decided = await page(tenantId, "?status=decided", "usr_apr_c");
    expect(decided.nextCursor).toBeNull();
    expect(decided.items.map((item) => [item.approvalId, item.status, item.decidedBy, item.reason])).toEqual([
      [cancelled.target.approvalId, "cancelled", null, null],
      [rejected.target.approvalId, "rejected", "usr_apr_b", "Over budget"],
      [approved.target.approvalId, "approved", "usr_apr_a", "PO 4711 checked"],
    ]);
    const times = decided.items.map((item) => Date.parse(item.decidedAt ?? ""));
    expect(times).toEqual([...times].sort((a, b) => b - a));
    expect(decided.items[2]).toEqual(ApprovalSchema.parse(json(ok)));
    for (const item of decided.items) {
      expect(item).toMatchObject({
        tenantId,
        toolName: "recordInvoice",
        requestedBy: "usr_idem",
        preview: { subtotal: "1500.00", taxAmount: "300.00", grossTotal: "1800.00", currency: "GBP" },
      });
    }
    expect(await page(tenantId, "?status=decided", "usr_idem")).toEqual(decided);
    expect((await page(tenantId, "?status=pending")).items).toEqual([]);
    // Tenants never meet: each sees only its own decision.
    const other = await page(otherTenant, "?status=decided");
    expect(other.items.map((item) => [item.approvalId, item.tenantId, item.decidedBy])).toEqual([
      [foreign.target.approvalId, otherTenant, "usr_apr_x"],
    ]);

    // A page at a time: the same approvals in the same order, then a null cursor.
    const walked: string[] = [];
    let cursor: string | null = null;
    do {
      const query: string = `?status=decided&limit=1${cursor ? `&cursor=${cursor}` : ""}`;
      const next = await page(tenantId, query);
      expect(next.items).toHaveLength(1);
      walked.push(...next.items.map((item) => item.approvalId));
      cursor = next.nextCursor;
    } while (cursor !== null && walked.length < 5);
    expect(walked).toEqual(decided.items.map((item) => item.approvalId));
  });

  it("refuses a bad status, a cursor of another listing or tenant, and callers without billing:approve, writing nothing", async () => {
    const tenantId = "tenant_apr_decided_bad";
    const { target, run } = await pausedRun(tenantId);
    expect((await decide(stack, target, "reject", { reason: "no" })).statusCode).toBe(200);
    await pollUntil(stack, run.runId, tenantId);
    const first = await page(tenantId, "?status=decided&limit=1");
    expect(first.items).toHaveLength(1);
    const [decided] = first.items;
    const before = await tenantKeys(stack.deps.ddb, stack.config.table.name, tenantId);
    expect(before.filter((key) => key.startsWith("APPROVAL#"))).toEqual([
      `APPROVAL#${target.runId}#${target.approvalId}`,
    ]);

    for (const status of ["approved", "DECIDED", "pending,decided", ""]) {
      const response = await list(tenantId, `?status=${encodeURIComponent(status)}`);
      expect(response.statusCode, status).toBe(400);
      expect(header(response, "content-type")).toBe("application/problem+json");
      const problem = ProblemSchema.parse(json(response));
      expect(problem.code).toBe("INVALID_REQUEST");
      expect(problem.errors?.map((error) => [error.in, error.path])).toEqual([["query", "status"]]);
    }
    // A cursor names a position in one listing of one tenant: the decided list's cursor at this
    // approval (as the store issues it: its table and list keys) reads on after it, nowhere else.
    const at = (list: "pending" | "decided", time: string) =>
      encodeCursor({
        ...tableKey(tenantId, `APPROVAL#${target.runId}#${target.approvalId}`),
        ...listKey(tenantId, `APPROVALS#${list}`, `${time}#${target.runId}#${target.approvalId}`),
      });
    const decidedCursor = at("decided", String(decided?.decidedAt));
    const pendingCursor = at("pending", String(decided?.requestedAt));
    expect(await page(tenantId, `?status=decided&cursor=${decidedCursor}`)).toEqual({
      items: [],
      nextCursor: null,
    });
    const tableCursor = encodeCursor(tableKey(tenantId, `APPROVAL#${target.runId}#${target.approvalId}`));
    for (const [forTenant, query] of [
      [tenantId, `?status=decided&cursor=${pendingCursor}`],
      [tenantId, `?status=pending&cursor=${decidedCursor}`],
      [tenantId, `?status=pending&cursor=${tableCursor}`],
      ["tenant_apr_decided_spy", `?status=decided&cursor=${decidedCursor}`],
    ] as const) {
      const response = await list(forTenant, query);
      expect(response.statusCode, query).toBe(400);
      expect(ProblemSchema.parse(json(response))).toMatchObject({
        code: "INVALID_REQUEST",
        errors: [{ in: "query", path: "cursor" }],
      });
    }
    const writer = await list(tenantId, "?status=decided", "usr_w", "billing:read billing:write");
    expect(writer.statusCode).toBe(403);
    expect(ProblemSchema.parse(json(writer))).toMatchObject({
      code: "FORBIDDEN",
      requiredPermission: "billing:approve",
    });
    expect(await tenantKeys(stack.deps.ddb, stack.config.table.name, tenantId)).toEqual(before);
  });

  it("120 decided approvals and 5 pending ones: every page is full unless last, pending oldest request first, decided newest decision first", async () => {
    const tenantId = "tenant_apr_decided_many";
    const store = stack.deps.approvals;
    const from = Date.now() - 600_000;
    const expiresAt = new Date(Date.now() + 3_600_000).toISOString();
    const approvalId = (index: number) => `apr_${String(index).padStart(32, "0")}`;
    const ask = (runId: string, index: number, requestedAt: number) =>
      store.request({
        approvalId: approvalId(index),
        runId,
        tenantId,
        toolName: "recordInvoice",
        toolCallId: `call_${index}`,
        arguments: {},
        preview: { grossTotal: `${index}.00`, currency: "GBP" },
        requestedBy: "usr_idem",
        requestedAt: new Date(requestedAt).toISOString(),
        expiresAt,
        callbackId: "",
        waitName: `wait-${index}`,
      });
    // 120 approvals decided a second apart (the store takes the decision time), the last one newest;
    // 5 pending ones among them, asked in the reverse order of their run ids.
    const pending: string[] = [];
    for (let index = 0; index < 125; index++) {
      const runId = `run_a${String(999 - index).padStart(4, "0")}`;
      await ask(runId, index, from + index * 1000);
      if (index % 25 === 12) {
        pending.push(approvalId(index));
        continue;
      }
      const decided = await store.decide(
        tenantId,
        runId,
        approvalId(index),
        {
          status: index % 2 === 0 ? "approved" : "rejected",
          decidedBy: "usr_approver",
          reason: `reason ${index}`,
        },
        from + 200_000 + index * 1000,
      );
      expect(decided.kind).toBe("decided");
    }

    const first = await page(tenantId, "?status=pending&limit=2");
    const second = await page(tenantId, `?status=pending&limit=2&cursor=${first.nextCursor}`);
    const last = await page(tenantId, `?status=pending&limit=2&cursor=${second.nextCursor}`);
    expect([first.items.length, second.items.length, last.items.length, last.nextCursor]).toEqual([
      2,
      2,
      1,
      null,
    ]);
    expect([...first.items, ...second.items, ...last.items].map((item) => item.approvalId)).toEqual(pending);

    const decided: string[] = [];
    let cursor: string | null = null;
    const sizes: number[] = [];
    do {
      const next = await page(tenantId, `?status=decided&limit=50${cursor ? `&cursor=${cursor}` : ""}`);
      sizes.push(next.items.length);
      decided.push(...next.items.map((item) => item.toolCallId));
      cursor = next.nextCursor;
    } while (cursor !== null && sizes.length < 5);
    expect(sizes).toEqual([50, 50, 20]);
    const decidedIndexes = Array.from({ length: 125 }, (_, i) => 124 - i).filter((i) => i % 25 !== 12);
    expect(decided).toEqual(decidedIndexes.map((i) => `call_${i}`));
  });

  it("a decision is listed from its one write: one item per approval, the listing reads the approval itself", async () => {
    const tenantId = "tenant_apr_decided_one";
    const { target, run } = await pausedRun(tenantId);
    const approvalKey = `APPROVAL#${target.runId}#${target.approvalId}`;
    const approvalKeys = () =>
      tenantKeys(stack.deps.ddb, stack.config.table.name, tenantId, ["APPROVAL#", "DECIDED#"]);
    expect(await approvalKeys()).toEqual([approvalKey]);
    const decided = ApprovalSchema.parse(json(await decide(stack, target, "approve", { reason: "fine" })));
    await pollUntil(stack, run.runId, tenantId);
    expect(await approvalKeys()).toEqual([approvalKey]);
    expect((await page(tenantId, "?status=decided")).items).toEqual([decided]);
    // What the listing shows is the approval as stored: the same fields as its run's record holds.
    const stored = await stack.deps.approvals.get(tenantId, target.runId, target.approvalId);
    expect(stored?.approval).toEqual(decided);

    // The same decision again answers the stored one and writes nothing: still one item, listed once.
    const again = await decide(stack, target, "approve", { reason: "fine" });
    expect(again.statusCode).toBe(200);
    expect(ApprovalSchema.parse(json(again))).toEqual(decided);
    expect(await approvalKeys()).toEqual([approvalKey]);
    expect((await page(tenantId, "?status=decided")).items).toEqual([decided]);
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
    expect(RunRecordSchema.parse(json(after))).toMatchObject({ status: "cancelled", cyclesRecorded: 1 });
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
