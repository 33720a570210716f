import { PutCommand } from "@aws-sdk/lib-dynamodb";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { dispatchToolCall } from "../shared/agent/dispatcher.js";
import type { ToolResult } from "../shared/agent/result.js";
import type { SecurityContext } from "../shared/identity.js";
import type { Invoice } from "../shared/store/invoice.js";
import { keys } from "../shared/store/keys.js";
import { tableItem, tableKey } from "../shared/store/table.js";
import { startTestStack, type TestStack } from "./support/stack.js";

let stack: TestStack;
beforeAll(async () => {
  stack = await startTestStack();
});
afterAll(async () => {
  await stack?.stop();
});

const clerk = (tenantId: string): SecurityContext => ({
  userId: "usr_clerk",
  tenantId,
  permissions: ["billing:read", "billing:write"],
});

let callCount = 0;
function call(name: string, args: Record<string, unknown>, security: SecurityContext): Promise<ToolResult> {
  callCount += 1;
  return dispatchToolCall(
    { id: `c${callCount}`, name, arguments: JSON.stringify(args) },
    stack.deps.tools,
    security,
    {
      runId: "run_read",
      runScope: `run_read_${callCount}`,
      occurrence: 0,
      signal: new AbortController().signal,
    },
  );
}

/** Records one invoice through calculateTax and recordInvoice; returns it. */
async function record(tenantId: string, amount: string, clientName: string): Promise<Invoice> {
  const quote = await call(
    "calculateTax",
    { amount, currency: "GBP", jurisdiction: "GB", taxPointDate: null },
    clerk(tenantId),
  );
  const quoteId = (quote.data as { quoteId: string }).quoteId;
  const result = await call(
    "recordInvoice",
    { clientName, quoteId, clientReference: null, description: "Consulting, November" },
    clerk(tenantId),
  );
  expect(result.status).toBe("success");
  return (result.data as { invoice: Invoice }).invoice;
}

describe("getInvoice and listInvoices", () => {
  let invoices: Invoice[] = [];
  beforeAll(async () => {
    invoices = [
      await record("tenant_read", "100", "A Ltd"),
      await record("tenant_read", "250.50", "B Ltd"),
      await record("tenant_read", "0.05", "C Ltd"),
    ];
    await record("tenant_other", "999", "Other Co");
  });

  it("getInvoice returns the recorded invoice, with the backend's amounts", async () => {
    const target = invoices[1] as Invoice;
    const result = await call("getInvoice", { invoiceId: target.invoiceId }, clerk("tenant_read"));
    expect(result.status).toBe("success");
    expect(result.data).toEqual({ invoice: target });
    expect(target).toMatchObject({
      clientName: "B Ltd",
      description: "Consulting, November",
      subtotal: { amount: "250.50", minorUnits: 25050 },
      taxAmount: { amount: "50.10", minorUnits: 5010 },
      grossTotal: { amount: "300.60", minorUnits: 30060 },
    });
  });

  it("getInvoice is tenant-scoped: another tenant's invoice is not found", async () => {
    const target = invoices[0] as Invoice;
    const result = await call("getInvoice", { invoiceId: target.invoiceId }, clerk("tenant_other"));
    expect(result.status).toBe("business_error");
    expect(result.error).toMatchObject({
      code: "INVOICE_NOT_FOUND",
      details: { invoiceId: target.invoiceId },
    });
    const malformed = await call("getInvoice", { invoiceId: "INV-1" }, clerk("tenant_read"));
    expect(malformed.status).toBe("validation_error");
    expect(malformed.error?.details.issues).toEqual([expect.objectContaining({ path: "invoiceId" })]);
  });

  it("listInvoices lists only the caller's tenant, with limit and hasMore", async () => {
    const all = await call("listInvoices", { limit: null }, clerk("tenant_read"));
    expect(all.status).toBe("success");
    const data = all.data as { invoices: Invoice[]; count: number; hasMore: boolean };
    expect(data.count).toBe(3);
    expect(data.hasMore).toBe(false);
    const byId = (a: Invoice, b: Invoice) => a.invoiceId.localeCompare(b.invoiceId);
    expect(data.invoices).toEqual([...invoices].sort(byId));

    const two = await call("listInvoices", { limit: 2 }, clerk("tenant_read"));
    expect(two.data).toMatchObject({ count: 2, hasMore: true });
    const other = await call("listInvoices", { limit: 50 }, clerk("tenant_other"));
    expect((other.data as { invoices: Invoice[] }).invoices.map((i) => i.clientName)).toEqual(["Other Co"]);

    for (const limit of [0, 51, 2.5]) {
      const bad = await call("listInvoices", { limit }, clerk("tenant_read"));
      expect(bad.status).toBe("validation_error");
      expect(bad.error?.details.issues).toEqual([expect.objectContaining({ path: "limit" })]);
    }
  });

  it("both need billing:read; the seed caller (billing:write only) is denied", async () => {
    const writerOnly = { userId: "usr_9918", tenantId: "tenant_read", permissions: ["billing:write"] };
    const target = invoices[0] as Invoice;
    for (const [name, args] of [
      ["getInvoice", { invoiceId: target.invoiceId }],
      ["listInvoices", { limit: null }],
    ] as const) {
      const result = await call(name, args, writerOnly);
      expect(result.status).toBe("permission_denied");
      expect(result.error?.details).toEqual({ requiredPermission: "billing:read" });
      expect(result.data).toBeNull();
    }
  });

  it("an item that is not an invoice of the one schema's shape is refused, never returned as one", async () => {
    const target = invoices[0] as Invoice;
    const item = { ...target, invoiceId: "inv_00000000000000000000bad0", grossTotal: { amount: 1800 } };
    await stack.deps.ddb.send(
      new PutCommand({
        TableName: stack.config.table.name,
        Item: tableItem(tableKey("tenant_read", keys.invoice(item.invoiceId)), "invoice", item),
      }),
    );
    await expect(stack.deps.ledger.get("tenant_read", item.invoiceId)).rejects.toThrow(
      /^Stored invoice inv_00000000000000000000bad0 is malformed: grossTotal\.amount /,
    );
    const result = await call("getInvoice", { invoiceId: item.invoiceId }, clerk("tenant_read"));
    expect([result.status, result.data]).toEqual(["fatal_error", null]);
  });
});
