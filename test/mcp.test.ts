import { describe, expect, it } from "vitest";
import { IDEMPOTENCY_META_KEY, REPLAYED_META_KEY } from "../shared/mcp/mapping.js";
import { runEvent } from "./support/idempotency.js";
import { WRITER } from "./support/mcp.js";
import { GB, keyed, mcpSession, text } from "./support/mcp-calls.js";

// docs/mcp.md (tools/list, tools/call, exactly once): the tools over MCP with the SDK's own client, against the real handler on DynamoDB Local.

const session = mcpSession();
const { quote, invoices } = session;

describe("MCP tools/list", () => {
  it("lists only the tools the token's permissions allow, with schemas and annotations from the registry", async () => {
    const all = await session.writer.listTools();
    expect(all.tools.map((tool) => tool.name)).toEqual([
      "calculateTax",
      "recordInvoice",
      "getInvoice",
      "listInvoices",
    ]);
    const record = all.tools.find((tool) => tool.name === "recordInvoice");
    expect(record?.inputSchema.required).toEqual(["clientName", "quoteId"]);
    expect(Object.keys(record?.inputSchema.properties ?? {})).toEqual([
      "clientName",
      "quoteId",
      "clientReference",
      "description",
    ]);
    expect(record?.inputSchema.additionalProperties).toBe(false);
    expect(record?.outputSchema?.required).toEqual(["invoice", "replayed"]);
    expect(record?.annotations).toEqual({
      readOnlyHint: false,
      destructiveHint: false,
      idempotentHint: true,
      openWorldHint: false,
    });
    expect(all.tools.find((tool) => tool.name === "getInvoice")?.annotations?.readOnlyHint).toBe(true);

    const reader = await session.mcp.connect(
      await session.mcp.token({ sub: "usr_r", tenant_id: "tenant_mcp_01", scope: "billing:read" }),
    );
    expect((await reader.listTools()).tools.map((tool) => tool.name)).toEqual([
      "calculateTax",
      "getInvoice",
      "listInvoices",
    ]);
    const none = await session.mcp.connect(
      await session.mcp.token({ sub: "usr_n", tenant_id: "tenant_mcp_01" }),
    );
    expect((await none.listTools()).tools.map((tool) => tool.name)).toEqual(["calculateTax"]);
  });
});

describe("MCP tools/call through the dispatcher", () => {
  it("calculateTax GB 1500.00 gives 300.00 tax and 1800.00 gross as structuredContent", async () => {
    const result = await session.writer.callTool({ name: "calculateTax", arguments: GB });
    expect(result.isError).toBe(false);
    expect(result.structuredContent).toMatchObject({
      jurisdiction: "GB",
      currency: "GBP",
      subtotal: { amount: "1500.00", minorUnits: 150000, currency: "GBP" },
      taxAmount: { amount: "300.00", minorUnits: 30000, currency: "GBP" },
      grossTotal: { amount: "1800.00", minorUnits: 180000, currency: "GBP" },
    });
    expect(text(result)).toEqual(result.structuredContent);
  });

  it("DE is business_error UNSUPPORTED_JURISDICTION as a tool error; bad arguments are INVALID_ARGUMENTS with field paths", async () => {
    const de = await session.writer.callTool({
      name: "calculateTax",
      arguments: { amount: "100.00", currency: "EUR", jurisdiction: "DE" },
    });
    expect(de.isError).toBe(true);
    expect(text(de)).toMatchObject({
      status: "business_error",
      error: { code: "UNSUPPORTED_JURISDICTION", retryable: false },
    });

    const bad = await session.writer.callTool({
      name: "calculateTax",
      arguments: { amount: "-5", currency: "GBP", jurisdiction: "GB", extra: 1 },
    });
    const failure = text(bad) as {
      status: string;
      error: { code: string; details: { issues: Array<{ path: string }> } };
    };
    expect(bad.isError).toBe(true);
    expect(failure.status).toBe("validation_error");
    expect(failure.error.code).toBe("INVALID_ARGUMENTS");
    expect(failure.error.details.issues.map((issue) => issue.path).sort()).toEqual(["(root)", "amount"]);

    const unknown = await session.writer.callTool({ name: "deleteLedger", arguments: {} });
    expect(text(unknown)).toMatchObject({ status: "validation_error", error: { code: "UNKNOWN_TOOL" } });
  });

  it("an INVALID_ARGUMENTS issue's expected is the format the field wants, as a run's tool result shows it", async () => {
    const args = { amount: "abc", currency: "GBP", jurisdiction: "GB", taxPointDate: "2025-02-30" };
    const bad = await session.writer.callTool({ name: "calculateTax", arguments: args });
    expect(bad.isError).toBe(true);
    const failure = text(bad) as { error: { code: string; message: string; details: { issues: unknown[] } } };
    expect(failure.error.code).toBe("INVALID_ARGUMENTS");
    const notANumber =
      'Amount "abc" is not a decimal number (NaN, Infinity, spaces, separators and signs other than a leading "-" are not accepted).';
    expect(failure.error.details.issues).toEqual([
      {
        path: "taxPointDate",
        code: "custom",
        message: "a calendar date that exists",
        received: "string",
      },
      {
        path: "amount",
        code: "custom",
        message: notANumber,
        expected: 'a decimal number, e.g. "1500.00"',
        received: "string",
      },
    ]);
    expect(failure.error.message).toBe(
      `Invalid arguments for calculateTax: taxPointDate: a calendar date that exists (received string); amount: ${notANumber} (received string)`,
    );

    // The same call made by the model in a run (POST /v1/runs): the same issues in its tool result.
    const { stack } = session.mcp;
    stack.model.script([
      { toolCalls: [{ id: "c1", name: "calculateTax", arguments: JSON.stringify(args) }] },
      { content: "The amount is not a number." },
    ]);
    try {
      const run = await stack.invoke(
        runEvent({ tenantId: WRITER.tenant_id, userId: WRITER.sub, prompt: "Tax on abc GBP in the UK" }),
      );
      expect(run.statusCode, run.body).toBe(200);
      const body = JSON.parse(run.body ?? "{}") as {
        toolResults: Array<{ error?: { message: string; details: { issues: unknown[] } } }>;
      };
      expect(body.toolResults[0]?.error?.details.issues).toEqual(failure.error.details.issues);
      expect(body.toolResults[0]?.error?.message).toBe(failure.error.message);
    } finally {
      stack.model.usePlanner();
    }
  });

  it("a tool the caller may not use is permission_denied, and nothing is written", async () => {
    const reader = await session.mcp.connect(
      await session.mcp.token({ sub: "usr_r2", tenant_id: "tenant_mcp_perm", scope: "billing:read" }),
    );
    const result = await reader.callTool({
      name: "recordInvoice",
      arguments: { clientName: "Acme", quoteId: await quote(reader) },
      _meta: keyed("perm-1"),
    });
    expect(text(result)).toMatchObject({
      status: "permission_denied",
      error: { code: "PERMISSION_DENIED", details: { requiredPermission: "billing:write" } },
    });
    expect(await invoices("tenant_mcp_perm")).toEqual([]);
  });
});

describe("MCP exactly once", () => {
  it("recordInvoice twice with one key records one invoice; the repeat replays the stored result", async () => {
    const quoteId = await quote();
    const args = { clientName: "Acme Ltd", quoteId };
    const first = await session.writer.callTool({
      name: "recordInvoice",
      arguments: args,
      _meta: keyed("inv-once-1"),
    });
    const again = await session.writer.callTool({
      name: "recordInvoice",
      arguments: args,
      _meta: keyed("inv-once-1"),
    });
    expect(first.isError).toBe(false);
    const invoice = (
      first.structuredContent as { invoice: { invoiceId: string; grossTotal: { amount: string } } }
    ).invoice;
    expect(invoice.grossTotal.amount).toBe("1800.00");
    expect(again.structuredContent).toEqual(first.structuredContent);
    expect(again._meta?.[REPLAYED_META_KEY]).toBe(true);
    expect(first._meta?.[REPLAYED_META_KEY]).toBeUndefined();
    const recorded = (await invoices(WRITER.tenant_id)).filter((item) => item.quoteId === quoteId);
    expect(recorded.map((item) => item.invoiceId)).toEqual([invoice.invoiceId]);
  });

  it("every call lands in the run audit trail (one cycle, reason mcp tools/call), a replay too, visible to its user only", async () => {
    const quoteId = await quote();
    const args = { clientName: "Audit Ltd", quoteId };
    const first = await session.writer.callTool({
      name: "recordInvoice",
      arguments: args,
      _meta: keyed("inv-audit"),
    });
    const again = await session.writer.callTool({
      name: "recordInvoice",
      arguments: args,
      _meta: keyed("inv-audit"),
    });
    const ids = [first, again].map((r) => String(r._meta?.["io.boundloop/toolCallId"]));
    expect(ids[0]).not.toBe(ids[1]);
    for (const runId of ids) {
      const response = await session.mcp.api(`/v1/runs/${runId}`, {
        sub: WRITER.sub,
        tenant_id: WRITER.tenant_id,
      });
      expect(response.status).toBe(200);
      const run = (await response.json()) as {
        status: string;
        reason: string;
        cycles: number;
        steps: Array<{
          finishReason: string;
          toolCalls: Array<{ name: string; result: { status: string } }>;
        }>;
      };
      expect(run).toMatchObject({ status: "completed", reason: "mcp tools/call", cycles: 1 });
      expect(run.steps.map((step) => step.finishReason)).toEqual(["mcp"]);
      expect(run.steps[0]?.toolCalls.map((c) => [c.name, c.result.status])).toEqual([
        ["recordInvoice", "success"],
      ]);
    }
    const stranger = await session.mcp.api(`/v1/runs/${ids[0]}`, {
      sub: "usr_other",
      tenant_id: WRITER.tenant_id,
    });
    expect(stranger.status).toBe(404);
    // A call's run holds no conversation: continuing it is refused, not a run with an empty history.
    const continued = await session.mcp.api(
      "/v1/runs",
      { ...WRITER },
      { method: "POST", body: JSON.stringify({ prompt: "Now record it", previousRunId: ids[0] }) },
    );
    expect([continued.status, continued.headers.get("content-type")]).toEqual([
      409,
      "application/problem+json",
    ]);
    expect(await continued.json()).toMatchObject({
      code: "PREVIOUS_RUN_NOT_CONTINUABLE",
      previousRunStatus: "completed",
    });
  });

  it("the same key with other arguments is IDEMPOTENCY_KEY_REUSED naming the _meta field; nothing more is written", async () => {
    const quoteId = await quote();
    await session.writer.callTool({
      name: "recordInvoice",
      arguments: { clientName: "Acme", quoteId },
      _meta: keyed("inv-conflict"),
    });
    const other = await session.writer.callTool({
      name: "recordInvoice",
      arguments: { clientName: "Someone Else", quoteId: await quote() },
      _meta: keyed("inv-conflict"),
    });
    expect(other.isError).toBe(true);
    expect(text(other)).toMatchObject({
      status: "validation_error",
      error: { code: "IDEMPOTENCY_KEY_REUSED", details: { path: `_meta.${IDEMPOTENCY_META_KEY}` } },
    });
    expect((await invoices(WRITER.tenant_id)).filter((item) => item.quoteId === quoteId)).toHaveLength(1);
  });

  it("another user's call under the same key is that user's own operation, never a replay of the first user's result", async () => {
    const quoteId = await quote();
    const args = { clientName: "Acme", quoteId };
    await session.writer.callTool({ name: "recordInvoice", arguments: args, _meta: keyed("inv-shared-key") });
    const colleague = await session.mcp.connect(await session.mcp.token({ ...WRITER, sub: "usr_colleague" }));
    const result = await colleague.callTool({
      name: "recordInvoice",
      arguments: args,
      _meta: keyed("inv-shared-key"),
    });
    // Keys belong to one caller: the colleague's call runs, and the quote's one invoice refuses it.
    expect(result._meta?.["io.boundloop/replayed"]).toBeUndefined();
    expect(text(result)).toMatchObject({
      status: "business_error",
      error: { code: "QUOTE_ALREADY_RECORDED" },
    });
    expect((await invoices(WRITER.tenant_id)).filter((item) => item.quoteId === quoteId)).toHaveLength(1);
  });

  it("without a key recordInvoice is guarded by its quote: one invoice, the second call refused QUOTE_ALREADY_RECORDED", async () => {
    const quoteId = await quote();
    const args = { clientName: "Acme", quoteId };
    const first = await session.writer.callTool({ name: "recordInvoice", arguments: args });
    const second = await session.writer.callTool({ name: "recordInvoice", arguments: args });
    expect(first.isError).toBe(false);
    const invoiceId = (first.structuredContent as { invoice: { invoiceId: string } }).invoice.invoiceId;
    expect(text(second)).toMatchObject({
      status: "business_error",
      error: { code: "QUOTE_ALREADY_RECORDED", details: { invoiceId } },
    });
    expect((await invoices(WRITER.tenant_id)).filter((item) => item.quoteId === quoteId)).toHaveLength(1);
  });

  it("a malformed key is a validation error and nothing runs", async () => {
    const quoteId = await quote();
    const result = await session.writer.callTool({
      name: "recordInvoice",
      arguments: { clientName: "Acme", quoteId },
      _meta: { [IDEMPOTENCY_META_KEY]: 42 },
    });
    expect(text(result)).toMatchObject({
      status: "validation_error",
      error: { code: "INVALID_IDEMPOTENCY_KEY" },
    });
    expect((await invoices(WRITER.tenant_id)).filter((item) => item.quoteId === quoteId)).toHaveLength(0);
  });
});
