/**
 * MCP tools/call runs on the run's injected clock, set years away from the wall clock, as the loop's runs
 * are (test/durable-clock.test.ts): a one-cycle run's record, its deadline and duration, the quote and
 * invoice it makes, the shadow policy decision it records and an approval it asks for are dated, timed
 * and expired by that clock, and the quotas count it in that clock's day; the caller's key is leased on
 * the wall clock the idempotency store reads (`Deadline.wallClockAt`). The real handler behind the dev
 * server, the SDK's own MCP client, DynamoDB Local.
 */
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import * as z from "zod";
import { createRegistry } from "../shared/agent/dispatcher.js";
import { defineTool } from "../shared/agent/tool.js";
import { GBP_RULES } from "./support/approvals.js";
import { heldReply } from "./support/held.js";
import { type McpStack, startMcpStack, WRITER } from "./support/mcp.js";
import { GB, keyed, text } from "./support/mcp-calls.js";
import { ManualClock } from "./support/streaming.js";

/** 2030-01-15 12:00:00 UTC, in epoch ms: far from any day this test runs on. */
const AT = Date.UTC(2030, 0, 15, 12);
const APPROVAL_TIMEOUT_S = 3_600;
/** How far the test tool `tick` moves the run's clock while it runs (ms). */
const TICK_MS = 1_500;
const clock = new ManualClock();
clock.advance(AT - clock.now());
const iso = (ms: number) => new Date(ms).toISOString();

/** What `tick` saw of its own run while it ran, and the reply it holds back (when a test sets one). */
const ticks: Array<{ runId: string; status: string | undefined }> = [];
let holdTick: Promise<void> | undefined;

let mcp: McpStack;
let client: Client;
beforeAll(async () => {
  mcp = await startMcpStack(
    { APPROVAL_RULES: GBP_RULES, APPROVAL_TIMEOUT_SECONDS: String(APPROVAL_TIMEOUT_S) },
    (deps) =>
      createRegistry([
        ...deps.tools.values(),
        defineTool({
          name: "tick",
          description: "Moves the run's clock on (test tool: mutating, no business key).",
          inputSchema: z.object({}).strict(),
          isMutating: true,
          requiredPermission: "billing:write",
          handler: async (_input, security, context) => {
            clock.advance(TICK_MS);
            const read = await deps.runs.get(security.tenantId, context.runId);
            ticks.push({ runId: context.runId, status: read?.run.status });
            await holdTick;
            return { ticked: true };
          },
        }),
      ]),
    // The run's clock only: the quotas' clock is the run's unless a test sets it apart.
    { clock },
  );
  client = await mcp.connect(await mcp.token(WRITER));
});
afterAll(async () => {
  await mcp?.stop();
});

/** The id of the run an MCP result came from (its `_meta`). */
const runIdOf = (result: { _meta?: Record<string, unknown> }) =>
  String(result._meta?.["io.boundloop/toolCallId"]);

/** A 100.00 GBP quote recorded as an invoice by `by` with `key` (under GBP_RULES: no approval); the result. */
async function smallInvoice(by: Client, key: string) {
  const calc = await by.callTool({ name: "calculateTax", arguments: { ...GB, amount: "100.00" } });
  const { quoteId } = calc.structuredContent as { quoteId: string };
  const recorded = await by.callTool({
    name: "recordInvoice",
    arguments: { clientName: "Small Client", quoteId },
    _meta: keyed(key),
  });
  expect(recorded.isError, JSON.stringify(recorded)).toBe(false);
  return recorded;
}

describe("an MCP tools/call run on an injected clock", () => {
  it("is timed by the run's clock: its deadline, start, finish and duration", async () => {
    const startMs = clock.now();
    const result = await client.callTool({ name: "tick", arguments: {}, _meta: keyed("tick-1") });
    expect(result.isError, JSON.stringify(result)).toBe(false);
    const runId = runIdOf(result);
    const stored = await mcp.stack.deps.runs.get(WRITER.tenant_id, runId);
    expect(stored?.run).toMatchObject({
      status: "completed",
      startedAt: iso(startMs),
      finishedAt: iso(startMs + TICK_MS),
      durationMs: TICK_MS,
    });
    // Mid-run, its record read as running: its deadline is on the clock the read rule judges it by.
    expect(ticks.find((tick) => tick.runId === runId)?.status).toBe("running");
  });

  it("leases the caller's key on the wall clock: a concurrent repeat comes back within the run's budget", async () => {
    const held = heldReply();
    holdTick = held.heldUntil;
    const seen = ticks.length;
    const first = client.callTool({ name: "tick", arguments: {}, _meta: keyed("tick-lease") });
    try {
      while (ticks.length === seen) await new Promise((resolve) => setTimeout(resolve, 10));
      const again = await client.callTool({ name: "tick", arguments: {}, _meta: keyed("tick-lease") });
      expect(text(again)).toMatchObject({ error: { code: "IDEMPOTENCY_KEY_IN_USE" } });
      const { retryAfterSeconds } = (text(again) as { error: { details: { retryAfterSeconds: number } } })
        .error.details;
      expect(retryAfterSeconds).toBeGreaterThanOrEqual(1);
      expect(retryAfterSeconds).toBeLessThanOrEqual(mcp.stack.deps.config.limits.runTimeoutMs / 1000);
    } finally {
      holdTick = undefined;
      held.release();
    }
    expect((await first).isError).toBe(false);
  });

  it("dates the invoice it records by the run's clock", async () => {
    const recorded = await smallInvoice(client, "invoice-1");
    const { invoiceId } = (recorded.structuredContent as { invoice: { invoiceId: string } }).invoice;
    const stored = await mcp.stack.deps.ledger.get(WRITER.tenant_id, invoiceId);
    expect(stored?.createdAt).toBe(iso(clock.now()));
  });

  it("dates a quote by the run's clock, and judges its expiry on it", async () => {
    const { ttlSeconds } = mcp.stack.deps.config.quotes;
    const made = clock.now();
    const calc = await client.callTool({ name: "calculateTax", arguments: { ...GB, amount: "100.00" } });
    const { quoteId, expiresAt } = calc.structuredContent as { quoteId: string; expiresAt: string };
    expect(expiresAt).toBe(iso(made + ttlSeconds * 1000));
    clock.advance(ttlSeconds * 1000);
    const late = await client.callTool({
      name: "recordInvoice",
      arguments: { clientName: "Late Client", quoteId },
      _meta: keyed("quote-late"),
    });
    expect(text(late)).toMatchObject({ status: "business_error", error: { code: "QUOTE_EXPIRED" } });
  });
});

describe("the quotas of MCP tools/call runs on an injected clock", () => {
  it("count the calls in the UTC day of the run's clock", async () => {
    await client.callTool({ name: "calculateTax", arguments: GB });
    const response = await mcp.api("/v1/usage", WRITER);
    expect(response.status).toBe(200);
    const usage = (await response.json()) as { user: { day: { start: string; runs: number } } };
    expect(usage.user.day.start).toBe(iso(Math.floor(clock.now() / 86_400_000) * 86_400_000));
    expect(usage.user.day.runs).toBeGreaterThanOrEqual(1);
  });
});

describe("an approval asked for through MCP on an injected clock", () => {
  /** recordInvoice of a fresh 1800.00 GBP quote with `key`: over GBP_RULES, it waits for approval. */
  async function pending(key: string) {
    const calc = await client.callTool({ name: "calculateTax", arguments: GB });
    const { quoteId } = calc.structuredContent as { quoteId: string };
    const args = { clientName: "Big Client", quoteId };
    const result = await client.callTool({ name: "recordInvoice", arguments: args, _meta: keyed(key) });
    const body = text(result) as { error: { code: string; details: { approvalId: string; runId: string } } };
    expect(body.error.code).toBe("APPROVAL_PENDING");
    return { args, target: body.error.details };
  }
  const decideAs = (target: { runId: string; approvalId: string }, decision: "approve" | "reject") =>
    mcp.api(
      `/v1/runs/${target.runId}/approvals/${target.approvalId}`,
      { sub: "usr_approver", tenant_id: WRITER.tenant_id, scope: "billing:approve" },
      { method: "POST", body: JSON.stringify({ decision }) },
    );

  it("is dated, and its decision too, by the run's clock", async () => {
    const asked = clock.now();
    const { target } = await pending("apr-dated");
    const stored = await mcp.stack.deps.approvals.get(WRITER.tenant_id, target.runId, target.approvalId);
    expect([stored?.approval.requestedAt, stored?.approval.expiresAt]).toEqual([
      iso(asked),
      iso(asked + APPROVAL_TIMEOUT_S * 1000),
    ]);
    clock.advance(5_000);
    const decided = await decideAs(target, "approve");
    expect(decided.status).toBe(200);
    expect(await decided.json()).toMatchObject({ status: "approved", decidedAt: iso(asked + 5_000) });
  });

  it("expires once its timeout has passed on the run's clock: the decision is refused, the repeat does not run", async () => {
    const asked = clock.now();
    const { args, target } = await pending("apr-expiry");
    clock.advance(APPROVAL_TIMEOUT_S * 1000);
    const late = await decideAs(target, "approve");
    expect(late.status).toBe(409);
    expect(await late.json()).toMatchObject({ code: "APPROVAL_EXPIRED" });
    const repeat = await client.callTool({
      name: "recordInvoice",
      arguments: args,
      _meta: keyed("apr-expiry"),
    });
    expect(text(repeat)).toMatchObject({ status: "business_error", error: { code: "APPROVAL_EXPIRED" } });
    const stored = await mcp.stack.deps.approvals.get(WRITER.tenant_id, target.runId, target.approvalId);
    expect(stored?.approval).toMatchObject({
      status: "expired",
      decidedAt: iso(asked + APPROVAL_TIMEOUT_S * 1000),
    });
  });
});

describe("a shadow policy decision in an MCP run on an injected clock", () => {
  it("is dated by the run's clock", async () => {
    const tenantId = "tenant_mcp_clock_shadow";
    const admin = { sub: "usr_admin", tenant_id: tenantId, scope: "policy:admin billing:read" };
    const base = '@id("base")\npermit (principal, action, resource);\n';
    const putSet = (policies: string, mode: string, precondition: Record<string, string>) =>
      mcp.api("/v1/policies", admin, {
        method: "PUT",
        headers: precondition,
        body: JSON.stringify({ policies, mode }),
      });
    const enforced = await putSet(base, "enforce", { "if-none-match": "*" });
    expect(enforced.status).toBe(200);
    const noInvoices = `${base}@id("no-invoices")\nforbid (principal, action == Action::"recordInvoice", resource);`;
    const shadow = await putSet(noInvoices, "shadow", { "if-match": String(enforced.headers.get("etag")) });
    expect(shadow.status).toBe(200);
    const writer = await mcp.connect(await mcp.token({ ...WRITER, tenant_id: tenantId }));
    await smallInvoice(writer, "shadowed-1");
    const listed = await mcp.api("/v1/policies/shadow-decisions", admin);
    const { items } = (await listed.json()) as { items: Array<{ toolName: string; decidedAt: string }> };
    expect(items.map(({ toolName, decidedAt }) => ({ toolName, decidedAt }))).toEqual([
      { toolName: "recordInvoice", decidedAt: iso(clock.now()) },
    ]);
  });
});
