import { GetCommand, UpdateCommand } from "@aws-sdk/lib-dynamodb";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { plan } from "../local/planner.js";
import { dispatchToolCall, type ToolRegistry } from "../shared/agent/dispatcher.js";
import type { ToolResult } from "../shared/agent/result.js";
import type { SecurityContext } from "../shared/identity.js";
import type { Invoice } from "../shared/store/invoice.js";
import { keys } from "../shared/store/keys.js";
import { newQuoteId } from "../shared/store/quotes.js";
import { accountingTools } from "../shared/tools/registry.js";
import { startTestStack, type TestStack } from "./support/stack.js";

const START = Date.parse("2026-11-30T06:00:00Z");
const TTL_SECONDS = 900;

let stack: TestStack;
let tools: ToolRegistry;
let nowMs = START;
beforeAll(async () => {
  stack = await startTestStack();
  tools = accountingTools({
    ledger: stack.deps.ledger,
    quotes: stack.deps.quotes,
    quoteTtlSeconds: TTL_SECONDS,
    clock: () => new Date(nowMs),
  });
});
afterAll(async () => {
  await stack?.stop();
});

const writer = (tenantId: string): SecurityContext => ({
  userId: `usr_${tenantId}`,
  tenantId,
  permissions: ["billing:write"],
});

function call(
  name: string,
  args: Record<string, unknown>,
  security: SecurityContext,
  runScope = "run_q",
): Promise<ToolResult> {
  return dispatchToolCall({ id: "c1", name, arguments: JSON.stringify(args) }, tools, security, {
    runId: runScope,
    runScope,
    occurrence: 0,
    signal: new AbortController().signal,
  });
}

/** A fresh quote for `tenantId`: 1500 GBP in GB at the current test clock. */
async function quote(tenantId: string, amount: string | number = "1500"): Promise<string> {
  const result = await call(
    "calculateTax",
    { amount, currency: "GBP", jurisdiction: "GB", taxPointDate: null },
    writer(tenantId),
  );
  expect(result.status).toBe("success");
  return (result.data as { quoteId: string }).quoteId;
}

const recordArgs = (quoteId: string, clientName = "Acme Ltd") => ({
  clientName,
  quoteId,
  clientReference: "PO-1042",
  description: null,
});

describe("quotes", () => {
  it("recordInvoice copies every amount from the quote", async () => {
    nowMs = START;
    const quoteId = await quote("tenant_copy", "999999999999.99");
    const result = await call("recordInvoice", recordArgs(quoteId), writer("tenant_copy"));
    expect(result.status).toBe("success");
    const { invoice, replayed } = result.data as { invoice: Invoice; replayed: boolean };
    expect(replayed).toBe(false);
    expect(invoice).toEqual({
      invoiceId: expect.stringMatching(/^inv_[0-9a-f]{24}$/),
      tenantId: "tenant_copy",
      clientName: "Acme Ltd",
      clientReference: "PO-1042",
      description: null,
      quoteId,
      jurisdiction: "GB",
      currency: "GBP",
      rateVersion: "GB-VAT-STANDARD-2011-01-04",
      rate: "0.20",
      taxPointDate: "2026-11-30",
      subtotal: { amount: "999999999999.99", minorUnits: 99999999999999, currency: "GBP" },
      taxAmount: { amount: "200000000000.00", minorUnits: 20000000000000, currency: "GBP" },
      grossTotal: { amount: "1199999999999.99", minorUnits: 119999999999999, currency: "GBP" },
      idempotencyKey: result.metadata.idempotencyKey,
      runId: "run_q",
      createdBy: "usr_tenant_copy",
      createdAt: expect.any(String),
    });
    expect(await stack.deps.ledger.list("tenant_copy")).toEqual([invoice]);
  });

  it("is stored under the tenant with a ttl in epoch seconds", async () => {
    nowMs = START + 123; // not on a whole second: ttl rounds up, never before expiresAt
    const quoteId = await quote("tenant_ttl");
    const { Item } = await stack.deps.ddb.send(
      new GetCommand({
        TableName: stack.config.table.name,
        Key: { pk: "TENANT#tenant_ttl", sk: `QUOTE#${quoteId}` },
        ConsistentRead: true,
      }),
    );
    expect(Item).toMatchObject({
      type: "quote",
      tenantId: "tenant_ttl",
      expiresAt: "2026-11-30T06:15:00.123Z",
      ttl: Math.ceil((START + 123) / 1000) + TTL_SECONDS,
    });
  });

  it("another tenant cannot use a quote", async () => {
    nowMs = START;
    const quoteId = await quote("tenant_owner");
    const stolen = await call("recordInvoice", recordArgs(quoteId, "Mallory"), writer("tenant_thief"));
    expect(stolen.status).toBe("business_error");
    expect(stolen.error).toMatchObject({ code: "QUOTE_NOT_FOUND", details: { quoteId }, retryable: false });
    expect(await stack.deps.ledger.list("tenant_thief")).toEqual([]);
    expect(await stack.deps.quotes.lookup("tenant_thief", quoteId, nowMs)).toEqual({ kind: "missing" });
    // The owner still can.
    const own = await call("recordInvoice", recordArgs(quoteId), writer("tenant_owner"));
    expect(own.status).toBe("success");
    expect(await stack.deps.ledger.list("tenant_owner")).toHaveLength(1);
  });

  it("a missing quote is a business_error; a malformed id a validation_error", async () => {
    const missing = newQuoteId();
    const result = await call("recordInvoice", recordArgs(missing), writer("tenant_missing"));
    expect(result.status).toBe("business_error");
    expect(result.error?.code).toBe("QUOTE_NOT_FOUND");
    const malformed = await call("recordInvoice", recordArgs("quote-1"), writer("tenant_missing"));
    expect(malformed.status).toBe("validation_error");
    expect(malformed.error?.details.issues).toEqual([expect.objectContaining({ path: "quoteId" })]);
    expect(await stack.deps.ledger.list("tenant_missing")).toEqual([]);
  });

  it("recordInvoice ignores any amount the model adds, because the schema rejects it", async () => {
    nowMs = START;
    const quoteId = await quote("tenant_extra");
    const result = await call(
      "recordInvoice",
      { ...recordArgs(quoteId), amount: "1", taxAmount: "0.01", grossTotal: "1.01" },
      writer("tenant_extra"),
    );
    expect(result.status).toBe("validation_error");
    expect(result.error?.code).toBe("INVALID_ARGUMENTS");
    expect(result.error?.details.issues).toEqual([
      expect.objectContaining({
        path: "(root)",
        code: "unrecognized_keys",
        keys: ["amount", "taxAmount", "grossTotal"],
      }),
    ]);
    expect(result.error?.message).toContain('Unrecognized keys: "amount", "taxAmount", "grossTotal"');
    expect(await stack.deps.ledger.list("tenant_extra")).toEqual([]);
  });

  it("an expired quote gives a business_error (checked on read, whatever DynamoDB TTL did)", async () => {
    nowMs = START;
    const quoteId = await quote("tenant_expiry");
    nowMs = START + TTL_SECONDS * 1000; // the expiry instant itself is expired
    const late = await call("recordInvoice", recordArgs(quoteId), writer("tenant_expiry"));
    expect(late.status).toBe("business_error");
    expect(late.error).toMatchObject({
      code: "QUOTE_EXPIRED",
      message: expect.stringContaining("expired at 2026-11-30T06:15:00.000Z"),
      details: { quoteId, expiresAt: "2026-11-30T06:15:00.000Z" },
    });
    expect(await stack.deps.ledger.list("tenant_expiry")).toEqual([]);
    nowMs = START + TTL_SECONDS * 1000 - 1;
    const justInTime = await call("recordInvoice", recordArgs(quoteId), writer("tenant_expiry"));
    expect(justInTime.status).toBe("success");
  });

  it("a retry of a recorded invoice replays it even after the quote expired", async () => {
    nowMs = START;
    const quoteId = await quote("tenant_replay");
    const first = await call("recordInvoice", recordArgs(quoteId), writer("tenant_replay"));
    nowMs = START + 3_600_000;
    const retry = await call("recordInvoice", recordArgs(quoteId), writer("tenant_replay"));
    expect(retry.status).toBe("success");
    expect(retry.data).toEqual({ invoice: (first.data as { invoice: Invoice }).invoice, replayed: true });
    // A different request (another run) with the expired, recorded quote is refused, naming the invoice.
    const other = await call("recordInvoice", recordArgs(quoteId), writer("tenant_replay"), "run_other");
    expect(other.error?.code).toBe("QUOTE_ALREADY_RECORDED");
    expect(other.error?.details).toMatchObject({
      quoteId,
      invoiceId: (first.data as { invoice: Invoice }).invoice.invoiceId,
    });
    expect(await stack.deps.ledger.list("tenant_replay")).toHaveLength(1);
  });

  it("a stored quote whose amounts were altered never reaches the ledger", async () => {
    nowMs = START;
    const quoteId = await quote("tenant_tamper");
    await stack.deps.ddb.send(
      new UpdateCommand({
        TableName: stack.config.table.name,
        Key: { pk: keys.tenant("tenant_tamper"), sk: keys.quote(quoteId) },
        UpdateExpression: "SET taxAmount = :tax",
        ExpressionAttributeValues: { ":tax": { amount: "1.00", minorUnits: 100, currency: "GBP" } },
      }),
    );
    const result = await call("recordInvoice", recordArgs(quoteId), writer("tenant_tamper"));
    expect(result.status).toBe("fatal_error");
    // The model gets a fixed sentence; what was found wrong goes to the logs, never into the tool message.
    expect(result.error?.message).toMatch(/^recordInvoice failed with an internal error/);
    expect(result.error?.message).not.toContain("recomputation");
    expect(await stack.deps.ledger.list("tenant_tamper")).toEqual([]);
  });
});

describe("the local planner", () => {
  it("records from the quoteId its calculateTax returned, and sends no amount", () => {
    const prompt = "Calculate tax on 1500 GBP for a client in the UK and record it.";
    const first = plan([{ role: "user", content: prompt }]);
    expect(first).toEqual({
      kind: "tool_calls",
      calls: [
        {
          id: "call_1_0",
          name: "calculateTax",
          arguments: JSON.stringify({
            amount: "1500",
            currency: "GBP",
            jurisdiction: "UK",
            taxPointDate: null,
          }),
        },
      ],
    });
    const quoteId = newQuoteId();
    const second = plan([
      { role: "user", content: prompt },
      {
        role: "assistant",
        tool_calls: [
          {
            id: "call_1_0",
            function: {
              name: "calculateTax",
              arguments: first.kind === "tool_calls" ? (first.calls[0]?.arguments ?? "") : "",
            },
          },
        ],
      },
      {
        role: "tool",
        tool_call_id: "call_1_0",
        content: JSON.stringify({ status: "success", data: { quoteId, jurisdiction: "GB" } }),
      },
    ]);
    expect(second).toEqual({
      kind: "tool_calls",
      calls: [
        {
          id: "call_2_0",
          name: "recordInvoice",
          arguments: JSON.stringify({
            clientName: "UK client",
            quoteId,
            clientReference: null,
            description: null,
          }),
        },
      ],
    });
  });
});
