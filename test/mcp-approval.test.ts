import { DeleteTableCommand } from "@aws-sdk/client-dynamodb";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import * as z from "zod";
import { createRegistry, toolsAllowedFor } from "../shared/agent/dispatcher.js";
import { defineTool } from "../shared/agent/tool.js";
import { IDEMPOTENCY_META_KEY, REPLAYED_META_KEY } from "../shared/mcp/mapping.js";
import { GBP_RULES } from "./support/approvals.js";
import { type McpStack, startMcpStack, WRITER } from "./support/mcp.js";
import { type CallResult, GB, keyed, mcpSession, text } from "./support/mcp-calls.js";

// docs/mcp.md (approval, keys, store failures, tools allowed): the tools over MCP with the SDK's own client, against the real handler on DynamoDB Local.

const session = mcpSession();
const { quote, invoices } = session;

describe("MCP approval", () => {
  let gated: McpStack;
  beforeAll(async () => {
    gated = await startMcpStack({ APPROVAL_RULES: GBP_RULES });
  });
  afterAll(async () => {
    await gated?.stop();
  });

  async function pending(client: Client, key: string) {
    const calc = await client.callTool({ name: "calculateTax", arguments: GB });
    const quoteId = (calc.structuredContent as { quoteId: string }).quoteId;
    const args = { clientName: "Big Client", quoteId };
    const result = await client.callTool({ name: "recordInvoice", arguments: args, _meta: keyed(key) });
    const body = text(result) as {
      status: string;
      error: {
        code: string;
        details: { approvalId: string; runId: string; expiresAt: string; preview: Record<string, string> };
      };
    };
    return { args, body, result };
  }

  const decideAs = (
    target: { runId: string; approvalId: string },
    decision: "approve" | "reject",
    reason?: string,
  ) =>
    gated.api(
      `/v1/runs/${target.runId}/approvals/${target.approvalId}`,
      { sub: "usr_approver", tenant_id: WRITER.tenant_id, scope: "billing:approve" },
      { method: "POST", body: JSON.stringify({ decision, ...(reason ? { reason } : {}) }) },
    );

  it("pending → approved → the repeat with the key records the invoice once, and replays it after", async () => {
    const client = await gated.connect(await gated.token(WRITER));
    const { args, body, result } = await pending(client, "apr-ok");
    expect(result.isError).toBe(true);
    expect(body.status).toBe("business_error");
    expect(body.error.code).toBe("APPROVAL_PENDING");
    expect(body.error.details.preview).toMatchObject({
      grossTotal: "1800.00",
      currency: "GBP",
      threshold: "1000.00",
    });
    expect(Date.parse(body.error.details.expiresAt)).toBeGreaterThan(Date.now());
    expect(
      await invoices(WRITER.tenant_id, gated).then((items) =>
        items.filter((i) => i.quoteId === args.quoteId),
      ),
    ).toEqual([]);

    // Listed in the approvals inbox; still pending when asked again.
    const inbox = await gated.api("/v1/approvals", {
      sub: "usr_approver",
      tenant_id: WRITER.tenant_id,
      scope: "billing:approve",
    });
    const items = ((await inbox.json()) as { items: Array<{ approvalId: string }> }).items;
    expect(items.map((item) => item.approvalId)).toContain(body.error.details.approvalId);
    const still = await client.callTool({ name: "recordInvoice", arguments: args, _meta: keyed("apr-ok") });
    expect(text(still)).toMatchObject({ error: { code: "APPROVAL_PENDING" } });

    // Four eyes: the caller cannot approve their own call.
    const self = await gated.api(
      `/v1/runs/${body.error.details.runId}/approvals/${body.error.details.approvalId}`,
      { ...WRITER, scope: "billing:approve" },
      { method: "POST", body: JSON.stringify({ decision: "approve" }) },
    );
    expect(self.status).toBe(403);
    expect((await decideAs(body.error.details, "approve")).status).toBe(200);

    const [done, replay] = await Promise.all([
      client.callTool({ name: "recordInvoice", arguments: args, _meta: keyed("apr-ok") }),
      client.callTool({ name: "recordInvoice", arguments: args, _meta: keyed("apr-ok") }),
    ]);
    for (const outcome of [done, replay]) {
      expect(outcome.isError).toBe(false);
      expect(outcome._meta?.["io.boundloop/approval"]).toMatchObject({
        decision: "approved",
        decidedBy: "usr_approver",
      });
    }
    const ids = [done, replay].map(
      (r) => (r.structuredContent as { invoice: { invoiceId: string } }).invoice.invoiceId,
    );
    expect(ids[0]).toBe(ids[1]);
    expect(
      (await invoices(WRITER.tenant_id, gated))
        .filter((item) => item.quoteId === args.quoteId)
        .map((i) => i.invoiceId),
    ).toEqual([ids[0]]);
  });

  it("pending → rejected → the repeat returns the rejection with its reason, nothing is recorded", async () => {
    const client = await gated.connect(await gated.token(WRITER));
    const { args, body } = await pending(client, "apr-no");
    expect((await decideAs(body.error.details, "reject", "client on credit hold")).status).toBe(200);
    const outcome = await client.callTool({ name: "recordInvoice", arguments: args, _meta: keyed("apr-no") });
    expect(text(outcome)).toMatchObject({
      status: "business_error",
      error: { code: "APPROVAL_REJECTED", details: { reason: "client on credit hold" } },
    });
    expect((await invoices(WRITER.tenant_id, gated)).filter((item) => item.quoteId === args.quoteId)).toEqual(
      [],
    );
  });

  it("recording an already-recorded quote again under another key asks nobody: QUOTE_ALREADY_RECORDED, not APPROVAL_PENDING", async () => {
    const client = await gated.connect(await gated.token(WRITER));
    const { args, body } = await pending(client, "apr-dup-1");
    expect(body.error.code).toBe("APPROVAL_PENDING");
    expect((await decideAs(body.error.details, "approve")).status).toBe(200);
    const done = await client.callTool({ name: "recordInvoice", arguments: args, _meta: keyed("apr-dup-1") });
    const { invoiceId } = (done.structuredContent as { invoice: { invoiceId: string } }).invoice;

    const again = await client.callTool({
      name: "recordInvoice",
      arguments: args,
      _meta: keyed("apr-dup-2"),
    });
    expect(text(again)).toMatchObject({
      status: "business_error",
      error: { code: "QUOTE_ALREADY_RECORDED", details: { quoteId: args.quoteId, invoiceId } },
    });
    const recorded = (await invoices(WRITER.tenant_id, gated)).filter(
      (item) => item.quoteId === args.quoteId,
    );
    expect(recorded.map((item) => item.invoiceId)).toEqual([invoiceId]);
  });

  it("its run's events announce the call before it asks for approval, in the order a loop's run has them", async () => {
    const client = await gated.connect(await gated.token(WRITER));
    const { body } = await pending(client, "apr-events");
    const { runId } = body.error.details;
    const page = await gated.stack.deps.runEvents.store.read(WRITER.tenant_id, runId, 0);
    expect(page.events.map((event) => event.type)).toEqual([
      "run.started",
      "tool.call.started",
      "approval.requested",
      "tool.call.finished",
      "run.finished",
    ]);
  });

  it("the approved repeat's run announces the call before the effect, as the first call's run does", async () => {
    const client = await gated.connect(await gated.token(WRITER));
    const { args, body } = await pending(client, "apr-events-2");
    expect((await decideAs(body.error.details, "approve")).status).toBe(200);
    // One log, in order, of the events this container emits and of the ledger's write (the effect).
    const seen: string[] = [];
    const { hub } = gated.stack.deps.runEvents;
    const { ledger } = gated.stack.deps;
    const publish = hub.publish.bind(hub);
    const recordOnce = ledger.recordOnce.bind(ledger);
    hub.publish = (runId, event) => {
      if (event) seen.push(`${runId} ${event.type}`);
      publish(runId, event);
    };
    ledger.recordOnce = (...input) => {
      seen.push("ledger write");
      return recordOnce(...input);
    };
    let done: Awaited<ReturnType<Client["callTool"]>>;
    try {
      done = await client.callTool({ name: "recordInvoice", arguments: args, _meta: keyed("apr-events-2") });
    } finally {
      delete (hub as Partial<typeof hub>).publish;
      delete (ledger as Partial<typeof ledger>).recordOnce;
    }
    expect(done.isError).toBe(false);
    const runId = String(done._meta?.["io.boundloop/toolCallId"]);
    expect(seen.filter((line) => line === "ledger write" || line.startsWith(runId))).toEqual([
      `${runId} run.started`,
      `${runId} tool.call.started`,
      "ledger write",
      `${runId} tool.call.finished`,
      `${runId} run.finished`,
    ]);
  });

  it("a call that needs approval without a key is refused IDEMPOTENCY_KEY_REQUIRED and nothing is asked or written", async () => {
    const client = await gated.connect(await gated.token(WRITER));
    const calc = await client.callTool({ name: "calculateTax", arguments: GB });
    const quoteId = (calc.structuredContent as { quoteId: string }).quoteId;
    const result = await client.callTool({
      name: "recordInvoice",
      arguments: { clientName: "Big", quoteId },
    });
    expect(text(result)).toMatchObject({
      status: "validation_error",
      error: { code: "IDEMPOTENCY_KEY_REQUIRED" },
    });
    expect((await invoices(WRITER.tenant_id, gated)).filter((item) => item.quoteId === quoteId)).toEqual([]);
  });
});

describe("MCP: a mutating tool without a business key", () => {
  let custom: McpStack;
  const effects: string[] = [];
  beforeAll(async () => {
    custom = await startMcpStack({}, (deps) =>
      createRegistry([
        ...deps.tools.values(),
        defineTool({
          name: "archiveNote",
          description: "Archives a note (test tool: mutating, no business key).",
          inputSchema: z.object({ note: z.string().min(1) }).strict(),
          isMutating: true,
          requiredPermission: "billing:write",
          handler: async (input, _security, context) => {
            effects.push(`${input.note}:${String(context.idempotencyKey)}`);
            return { archived: input.note };
          },
        }),
      ]),
    );
  });
  afterAll(async () => {
    await custom?.stop();
  });

  it("is refused IDEMPOTENCY_KEY_REQUIRED without a key (never run unguarded), and runs once with one", async () => {
    const client = await custom.connect(await custom.token(WRITER));
    const refused = await client.callTool({ name: "archiveNote", arguments: { note: "n1" } });
    expect(refused.isError).toBe(true);
    expect(text(refused)).toMatchObject({
      status: "validation_error",
      error: { code: "IDEMPOTENCY_KEY_REQUIRED", details: { path: `_meta.${IDEMPOTENCY_META_KEY}` } },
    });
    expect(effects).toEqual([]);
    const first = await client.callTool({
      name: "archiveNote",
      arguments: { note: "n1" },
      _meta: keyed("arch-1"),
    });
    const again = await client.callTool({
      name: "archiveNote",
      arguments: { note: "n1" },
      _meta: keyed("arch-1"),
    });
    expect(text(first)).toEqual({ archived: "n1" });
    expect(text(again)).toEqual({ archived: "n1" });
    expect(again._meta?.[REPLAYED_META_KEY]).toBe(true);
    expect(effects).toHaveLength(1);
    expect(effects[0]).toMatch(/^n1:tk_[0-9a-f]{64}$/);
  });
});

describe("MCP: the data store fails around a call", () => {
  it("is a retryable fatal_error STORE_UNAVAILABLE with a fixed sentence: no internal error text", async () => {
    // Quotas off: with them, admission is the call's first write and refuses it as QUOTA_UNAVAILABLE
    // (test/quotas-admission.test.ts); this is the idempotency record's write failing.
    const broken = await startMcpStack({}, undefined, { quotas: false });
    try {
      const client = await broken.connect(await broken.token(WRITER));
      const quoteId = await quote(client);
      // A real failure: the table is gone, so DynamoDB Local refuses the idempotency record's write.
      await broken.stack.deps.ddb.send(new DeleteTableCommand({ TableName: broken.stack.config.table.name }));
      const result = (await client.callTool({
        name: "recordInvoice",
        arguments: { clientName: "Acme Ltd", quoteId },
        _meta: keyed("store-down-1"),
      })) as CallResult;
      expect(result.isError).toBe(true);
      const body = text(result);
      expect(body).toMatchObject({
        status: "fatal_error",
        error: { code: "STORE_UNAVAILABLE", retryable: true },
      });
      expect(body.error.message).toBe(
        "recordInvoice could not be guarded: the data store failed. The same call, with the same key, can be made again.",
      );
      expect(JSON.stringify(result)).not.toMatch(/non-existent|ResourceNotFound|table/i);
    } finally {
      await broken.stop();
    }
  });
});

describe("toolsAllowedFor", () => {
  it("keeps exactly the tools whose permission the caller holds, in registry order", () => {
    const tool = (name: string, requiredPermission: string | undefined) =>
      defineTool({
        name,
        description: name,
        inputSchema: z.object({}).strict(),
        isMutating: false,
        requiredPermission,
        handler: async () => ({}),
      });
    const registry = createRegistry([tool("a", undefined), tool("b", "p:read"), tool("c", "p:write")]);
    const names = (permissions: string[]) =>
      toolsAllowedFor(registry, { userId: "u", tenantId: "t", permissions }).map((t) => t.name);
    expect(names([])).toEqual(["a"]);
    expect(names(["p:write"])).toEqual(["a", "c"]);
    expect(names(["p:read", "p:write", "other"])).toEqual(["a", "b", "c"]);
  });
});
