/**
 * The tenant's decided approvals, GET /v1/approvals?status=decided (docs/approvals.md): order, pages and
 * cursors, who may list them, and one write per decision; the real API handler with the durable runner
 * on the testing SDK's local runner, DynamoDB Local and the local model server.
 */
import { describe, expect, it } from "vitest";
import { ApprovalPageSchema, ApprovalSchema, ProblemSchema } from "../functions/api/contract.js";
import { encodeCursor } from "../shared/store/query.js";
import { listKey, tableKey } from "../shared/store/table.js";
import { header } from "./fixtures/events.js";
import { approvalRuns, decide, GBP_RULES, json, pollUntil, userEvent } from "./support/approvals.js";
import { durableStackForFile, runPathEvent } from "./support/durable.js";
import { tenantKeys } from "./support/reliability.js";

const stack = durableStackForFile({ MAX_CYCLES: "5", APPROVAL_RULES: GBP_RULES }, { planner: true });
const { pausedRun } = approvalRuns(stack);

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
