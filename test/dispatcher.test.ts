import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { z } from "zod";
import {
  createRegistry,
  type DispatchContext,
  dispatchToolCall,
  type InternalFailure,
  type ToolRegistry,
} from "../shared/agent/dispatcher.js";
import { defineTool, ToolBusinessError } from "../shared/agent/tool.js";
import { createDocumentClient } from "../shared/store/dynamo.js";
import { QuoteStore } from "../shared/store/quotes.js";
import { ensureTable } from "../shared/store/table.js";
import { calculateTaxTool } from "../shared/tools/calculate-tax.js";

const security = { userId: "usr_1", tenantId: "tenant_a", permissions: ["billing:read"] };
const context = { runId: "run_1", runScope: "run_1", occurrence: 0, signal: new AbortController().signal };

const boom = defineTool({
  name: "explode",
  description: "Always throws.",
  inputSchema: z.object({}).strict(),
  isMutating: false,
  requiredPermission: undefined,
  handler: async () => {
    throw new Error("boom");
  },
});
const guarded = defineTool({
  name: "guarded",
  description: "Needs billing:write.",
  inputSchema: z.object({ n: z.number() }).strict(),
  isMutating: true,
  requiredPermission: "billing:write",
  handler: async () => ({ ok: true }),
});
const refuses = defineTool({
  name: "refuses",
  description: "Business rule says no.",
  inputSchema: z.object({}).strict(),
  isMutating: false,
  requiredPermission: undefined,
  handler: async () => {
    throw new ToolBusinessError("INVOICE_NOT_FOUND", "No invoice inv_x.", { invoiceId: "inv_x" });
  },
});
// calculateTax stores a quote, so it gets a quote store over its own table on the suite's DynamoDB Local.
const table = {
  name: `test-${randomUUID()}`,
  endpoint: inject("dynamoEndpoint"),
  region: "us-east-1",
  requestTimeoutMs: 3_000,
};
const ddb = createDocumentClient(table);
let registry: ToolRegistry;
beforeAll(async () => {
  await ensureTable(ddb, table.name);
  const calculateTax = calculateTaxTool({ quotes: new QuoteStore(ddb, table.name), quoteTtlSeconds: 900 });
  registry = createRegistry([calculateTax, boom, guarded, refuses] as never[]);
});
afterAll(() => ddb.destroy());
const call = (name: string, args: string, dispatch: DispatchContext = context) =>
  dispatchToolCall({ id: "c1", name, arguments: args }, registry, security, dispatch);

describe("dispatcher categories", () => {
  it("unknown tool → validation_error UNKNOWN_TOOL naming the available tools", async () => {
    const result = await call("deleteLedger", "{}");
    expect(result.status).toBe("validation_error");
    expect(result.error?.code).toBe("UNKNOWN_TOOL");
    expect(result.error?.message).toContain("calculateTax");
    expect(result.metadata).toEqual({
      toolName: "deleteLedger",
      toolCallId: "c1",
      latencyMs: 0,
      idempotencyKey: null,
    });
  });

  it("permission is checked before the arguments are even parsed", async () => {
    const result = await call("guarded", "{not json");
    expect(result.status).toBe("permission_denied");
    expect(result.error?.code).toBe("PERMISSION_DENIED");
    expect(result.error?.retryable).toBe(false);
  });

  it("malformed JSON arguments → validation_error INVALID_JSON", async () => {
    const result = await call("calculateTax", '{"amount": 1500, "currency": "GBP"');
    expect(result.status).toBe("validation_error");
    expect(result.error?.code).toBe("INVALID_JSON");
    expect(result.error?.retryable).toBe(true);
  });

  it("zod failure → validation_error INVALID_ARGUMENTS with field paths", async () => {
    const result = await call(
      "calculateTax",
      JSON.stringify({ amount: "12.345", currency: "GBP", jurisdiction: "GB", rate: 0.1 }),
    );
    expect(result.status).toBe("validation_error");
    expect(result.error?.code).toBe("INVALID_ARGUMENTS");
    const issues = result.error?.details.issues as Array<{ path: string; code: string }>;
    expect(issues.map((i) => i.path)).toContain("(root)");
    expect(issues.find((i) => i.code === "unrecognized_keys")).toMatchObject({ keys: ["rate"] });
    const wrongType = await call(
      "calculateTax",
      JSON.stringify({ amount: true, currency: "GBP", jurisdiction: "GB", taxPointDate: null }),
    );
    expect(wrongType.error?.details.issues).toEqual([expect.objectContaining({ path: "amount" })]);
    const decimals = await call(
      "calculateTax",
      JSON.stringify({ amount: "12.345", currency: "GBP", jurisdiction: "GB", taxPointDate: null }),
    );
    expect(decimals.error?.details.issues).toEqual([
      expect.objectContaining({
        path: "amount",
        message: expect.stringContaining("more decimal places than GBP allows (2)"),
      }),
    ]);
    // The message says the rule once: a custom check's constraint is its message.
    expect(decimals.error?.message).toBe(
      "Invalid arguments for calculateTax: amount: Amount 12.345 has more decimal places than GBP allows (2). (received string)",
    );
    // A type's constraint is still named.
    expect(wrongType.error?.message).toBe(
      "Invalid arguments for calculateTax: amount: a finite JSON number or a decimal string of at most 40 characters (expected number | string, received boolean)",
    );
  });

  it("business rule → business_error with the tool's code and details", async () => {
    const result = await call(
      "calculateTax",
      JSON.stringify({ amount: 500, currency: "EUR", jurisdiction: "DE", taxPointDate: null }),
    );
    expect(result.status).toBe("business_error");
    expect(result.error).toMatchObject({
      code: "UNSUPPORTED_JURISDICTION",
      details: { jurisdiction: "DE", supported: ["GB", "BD"] },
      retryable: false,
    });
    const custom = await call("refuses", "{}");
    expect(custom.error).toMatchObject({ code: "INVOICE_NOT_FOUND", details: { invoiceId: "inv_x" } });
  });

  it("unexpected throw → fatal_error TOOL_FAILED with a fixed sentence; the message goes to onInternalFailure", async () => {
    const failures: InternalFailure[] = [];
    const result = await call("explode", "{}", {
      runId: "r",
      runScope: "r",
      occurrence: 0,
      signal: new AbortController().signal,
      onInternalFailure: (failure) => void failures.push(failure),
    });
    expect(result.status).toBe("fatal_error");
    expect(result.error?.code).toBe("TOOL_FAILED");
    expect(JSON.stringify(result)).not.toContain("boom");
    expect(failures).toEqual([
      { source: "tool", name: "explode", code: "TOOL_FAILED", detail: expect.stringContaining("boom") },
    ]);
  });

  it("a JSON number written with more significant digits than a double holds is refused at its path, never rounded", async () => {
    // JSON.parse reads 0.30000000000000001 as 0.3 and 1500.0000000000000001 as 1500: the model wrote
    // neither amount (docs/money-and-tax.md: more than 15 significant digits, send a decimal string).
    for (const [written, path] of [
      ["0.30000000000000001", "amount"],
      ["1500.0000000000000001", "amount"],
      ["12345678901234567", "amount"],
    ] as const) {
      const result = await call(
        "calculateTax",
        `{"currency": "GBP", "amount": ${written}, "jurisdiction": "GB"}`,
      );
      expect(result.status, written).toBe("validation_error");
      expect(result.error?.code).toBe("INVALID_ARGUMENTS");
      expect(result.error?.details.issues).toEqual([
        {
          path,
          code: "custom",
          message: `The JSON number ${written} has more significant digits than a JSON number holds exactly (15); send it as a decimal string.`,
          expected: "a decimal string",
          received: "number",
          reason: "PRECISION_LOST",
        },
      ]);
    }
    // Digits inside strings are text, and trailing zeros are not significant.
    const exact = await call(
      "calculateTax",
      '{"amount": 1500.000000000000000000, "currency": "GBP", "jurisdiction": "GB", "taxPointDate": null}',
    );
    expect(exact.status).toBe("success");
    const inString = await call(
      "calculateTax",
      '{"amount": "0.30000000000000001", "currency": "GBP", "jurisdiction": "GB"}',
    );
    expect(inString.error?.details.issues).toEqual([
      expect.objectContaining({
        path: "amount",
        message: expect.stringContaining("more decimal places than GBP allows"),
      }),
    ]);
  });

  it("success carries data and no error", async () => {
    const result = await call(
      "calculateTax",
      JSON.stringify({ amount: 200, currency: "BDT", jurisdiction: "bd", taxPointDate: null }),
    );
    expect(result.status).toBe("success");
    expect(result.error).toBeNull();
    expect(result.data).toMatchObject({
      jurisdiction: "BD",
      rate: "0.15",
      taxAmount: { amount: "30.00" },
      grossTotal: { amount: "230.00" },
    });
  });
});
