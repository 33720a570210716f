import { QueryCommand } from "@aws-sdk/lib-dynamodb";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { dispatchToolCall, type ToolRegistry } from "../shared/agent/dispatcher.js";
import { modelTool } from "../shared/agent/model-step.js";
import type { ToolResult } from "../shared/agent/result.js";
import { toOpenAITool } from "../shared/model/openai-chat.js";
import { keys } from "../shared/store/keys.js";
import { accountingTools } from "../shared/tools/registry.js";
import { startTestStack, type TestStack } from "./support/stack.js";

let stack: TestStack;
let tools: ToolRegistry;
let now = new Date("2026-11-30T06:00:00Z");
beforeAll(async () => {
  stack = await startTestStack();
  tools = accountingTools({
    ledger: stack.deps.ledger,
    quotes: stack.deps.quotes,
    quoteTtlSeconds: 900,
    clock: () => now,
  });
});
afterAll(async () => {
  await stack?.stop();
});

const caller = { userId: "usr_1", tenantId: "tenant_tax", permissions: ["billing:write"] };

/** Calls calculateTax through the real dispatcher; `args` may be raw JSON text. */
function calculateTax(
  args: Record<string, unknown> | string,
  tenantId = caller.tenantId,
): Promise<ToolResult> {
  return dispatchToolCall(
    { id: "c1", name: "calculateTax", arguments: typeof args === "string" ? args : JSON.stringify(args) },
    tools,
    { ...caller, tenantId },
    { runId: "run_tax", runScope: "run_tax", occurrence: 0, signal: new AbortController().signal },
  );
}

/** Number of quote items stored for a tenant (raw query on the table). */
async function quoteCount(tenantId: string): Promise<number> {
  const result = await stack.deps.ddb.send(
    new QueryCommand({
      TableName: stack.config.table.name,
      KeyConditionExpression: "pk = :pk AND begins_with(sk, :quote)",
      ExpressionAttributeValues: { ":pk": keys.tenant(tenantId), ":quote": "QUOTE#" },
      ConsistentRead: true,
    }),
  );
  return result.Count ?? 0;
}

/** The field paths of a validation_error's issues. */
const pathsOf = (result: ToolResult) =>
  (result.error?.details.issues as Array<{ path: string }> | undefined)?.map((issue) => issue.path);

describe("calculateTax", () => {
  it("1500 GBP in the UK: 300.00 tax, 1800.00 gross, as a stored quote", async () => {
    now = new Date("2026-11-30T06:00:00Z");
    const result = await calculateTax({
      amount: 1500,
      currency: "GBP",
      jurisdiction: "UK",
      taxPointDate: null,
    });
    expect(result.status).toBe("success");
    const data = result.data as Record<string, unknown> & { quoteId: string };
    expect(data).toEqual({
      quoteId: expect.stringMatching(/^qt_[0-9a-f]{32}$/),
      expiresAt: "2026-11-30T06:15:00.000Z",
      jurisdiction: "GB",
      rateVersion: "GB-VAT-STANDARD-2011-01-04",
      rate: "0.20",
      taxPointDate: "2026-11-30",
      currency: "GBP",
      rounding: "HALF_UP_PER_INVOICE",
      subtotal: { amount: "1500.00", minorUnits: 150000, currency: "GBP" },
      taxAmount: { amount: "300.00", minorUnits: 30000, currency: "GBP" },
      grossTotal: { amount: "1800.00", minorUnits: 180000, currency: "GBP" },
      roundingSource: expect.stringContaining("HMRC VAT Notice 700 section 17.5"),
      ruleSource: expect.stringContaining("Value Added Tax Act 1994"),
    });
    const stored = await stack.deps.quotes.lookup(caller.tenantId, data.quoteId, now.getTime());
    expect(stored).toEqual({
      kind: "live",
      quote: {
        quoteId: data.quoteId,
        tenantId: "tenant_tax",
        jurisdiction: "GB",
        rateVersion: "GB-VAT-STANDARD-2011-01-04",
        rate: "0.20",
        taxPointDate: "2026-11-30",
        currency: "GBP",
        rounding: "HALF_UP_PER_INVOICE",
        subtotal: data.subtotal,
        taxAmount: data.taxAmount,
        grossTotal: data.grossTotal,
        runId: "run_tax",
        createdBy: "usr_1",
        createdAt: "2026-11-30T06:00:00.000Z",
        expiresAt: "2026-11-30T06:15:00.000Z",
      },
    });
  });

  it("BD is 15%, lowercase codes are normalized", async () => {
    const result = await calculateTax({
      amount: "200",
      currency: "bdt",
      jurisdiction: "bd",
      taxPointDate: null,
    });
    expect(result.data).toMatchObject({
      jurisdiction: "BD",
      rate: "0.15",
      currency: "BDT",
      taxAmount: { amount: "30.00", minorUnits: 3000 },
      grossTotal: { amount: "230.00", minorUnits: 23000 },
    });
  });

  it("DE is unsupported: business_error listing the supported codes, no quote stored", async () => {
    const result = await calculateTax(
      { amount: 500, currency: "EUR", jurisdiction: "DE", taxPointDate: null },
      "tenant_de",
    );
    expect(result.status).toBe("business_error");
    expect(result.error).toMatchObject({
      code: "UNSUPPORTED_JURISDICTION",
      message: 'Jurisdiction "DE" is not supported. Supported jurisdictions: GB, BD.',
      details: { jurisdiction: "DE", supported: ["GB", "BD"] },
      retryable: false,
    });
    expect(await quoteCount("tenant_de")).toBe(0);
  });

  it("the currency must be the jurisdiction's own", async () => {
    const result = await calculateTax(
      { amount: 500, currency: "EUR", jurisdiction: "GB", taxPointDate: null },
      "tenant_fx",
    );
    expect(result.status).toBe("business_error");
    expect(result.error).toMatchObject({
      code: "CURRENCY_MISMATCH",
      details: { jurisdiction: "GB", expected: ["GBP"], received: "EUR" },
    });
    expect(await quoteCount("tenant_fx")).toBe(0);
  });

  it("the tax point date picks the rate version; the default is today in Europe/London", async () => {
    const old = await calculateTax({
      amount: "1000",
      currency: "GBP",
      jurisdiction: "GB",
      taxPointDate: "2010-06-01",
    });
    expect(old.data).toMatchObject({
      rateVersion: "GB-VAT-STANDARD-2010-01-01",
      rate: "0.175",
      taxPointDate: "2010-06-01",
      taxAmount: { amount: "175.00" },
    });
    const none = await calculateTax({
      amount: "1000",
      currency: "GBP",
      jurisdiction: "GB",
      taxPointDate: "2009-06-01",
    });
    expect(none.status).toBe("business_error");
    expect(none.error?.code).toBe("NO_RULE_IN_FORCE");
    expect(none.error?.message).toContain("2010-01-01 to 2011-01-03");

    now = new Date("2026-06-30T23:30:00Z"); // 00:30 on 1 July in London
    const today = await calculateTax({
      amount: "1",
      currency: "GBP",
      jurisdiction: "GB",
      taxPointDate: null,
    });
    expect(today.data).toMatchObject({ taxPointDate: "2026-07-01", expiresAt: "2026-06-30T23:45:00.000Z" });
  });

  it("bad money is a validation_error naming the field path, before anything runs", async () => {
    const base = { currency: "GBP", jurisdiction: "GB", taxPointDate: null };
    const cases: Array<[string, string]> = [
      [JSON.stringify({ ...base, amount: "12.345" }), "more decimal places than GBP allows (2)"],
      [JSON.stringify({ ...base, amount: 1e-7 }), "more decimal places than GBP allows (2)"],
      ['{"currency":"GBP","jurisdiction":"GB","taxPointDate":null,"amount":1e400}', "a finite JSON number"],
      [JSON.stringify({ ...base, amount: "NaN" }), "not a decimal number"],
      [JSON.stringify({ ...base, amount: "Infinity" }), "not a decimal number"],
      [JSON.stringify({ ...base, amount: -5 }), "must not be negative"],
      [JSON.stringify({ ...base, amount: "1000000000000.01" }), "at most 1000000000000"],
      [JSON.stringify({ ...base, amount: 0.1 + 0.2 }), "send it as a decimal string"],
      // docs/money-and-tax.md's grammar has no room for spaces around the digits.
      [JSON.stringify({ ...base, amount: " 12.00" }), 'Amount " 12.00" is not a decimal number'],
      [JSON.stringify({ ...base, amount: "12.00 " }), 'Amount "12.00 " is not a decimal number'],
      [JSON.stringify({ ...base, amount: "\t12\n" }), "is not a decimal number"],
      [JSON.stringify({ ...base, amount: "+12" }), 'Amount "+12" is not a decimal number'],
      [JSON.stringify({ ...base, amount: "12 000" }), 'Amount "12 000" is not a decimal number'],
    ];
    for (const [args, message] of cases) {
      const result = await calculateTax(args, "tenant_bad");
      expect(result.status, args).toBe("validation_error");
      expect(result.error?.code).toBe("INVALID_ARGUMENTS");
      expect(result.error?.details.issues, args).toEqual([
        expect.objectContaining({ path: "amount", message: expect.stringContaining(message) }),
      ]);
    }
    expect(await quoteCount("tenant_bad")).toBe(0);
  });

  it("rejects other bad fields and extra properties by path", async () => {
    const base = { amount: "10", currency: "GBP", jurisdiction: "GB", taxPointDate: null };
    expect(pathsOf(await calculateTax({ ...base, jurisdiction: "Germany" }))).toEqual(["jurisdiction"]);
    expect(pathsOf(await calculateTax({ ...base, taxPointDate: "2026-02-30" }))).toEqual(["taxPointDate"]);
    expect(pathsOf(await calculateTax({ ...base, taxPointDate: "30/11/2026" }))).toEqual(["taxPointDate"]);
    // taxPointDate is optional in zod (required and nullable on the wire): omitted means today.
    const { taxPointDate: _omitted, ...withoutDate } = base;
    const today = await calculateTax(withoutDate);
    expect(today.status).toBe("success");
    expect((today.data as { taxPointDate: string }).taxPointDate).toMatch(/^\d{4}-\d{2}-\d{2}$/);
    expect(pathsOf(await calculateTax({ ...base, currency: "XXX" }))).toEqual(["currency"]);
    const extra = await calculateTax({ ...base, rate: "0.05" });
    expect(extra.error?.details.issues).toEqual([
      expect.objectContaining({ path: "(root)", code: "unrecognized_keys", keys: ["rate"] }),
    ]);
  });

  it("its description states units, limits and the rounding rule with its source", () => {
    const tool = toOpenAITool(modelTool(tools.get("calculateTax") as never));
    expect(tool.function.description).toContain("minor units");
    expect(tool.function.description).toContain("valid 15 minutes");
    expect(tool.function.description).toContain("GB: 20% in GBP (GB-VAT-STANDARD-2011-01-04)");
    expect(tool.function.description).toContain("HMRC VAT Notice 700 section 17.5");
    expect(tool.function.description).toContain("BD: 15% in BDT");
    expect(tool.function.parameters).toMatchObject({
      additionalProperties: false,
      required: ["amount", "currency", "jurisdiction", "taxPointDate"],
    });
  });
});
