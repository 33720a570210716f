/**
 * The local planner's read path: "List my invoices" calls listInvoices, a prompt naming
 * an invoice id calls getInvoice, and a caller not offered those tools gets an answer saying so, with no
 * call. Through the real handler, DynamoDB Local and the local model server (planner mode).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RunResponseSchema } from "../functions/api/contract.js";
import { apiEvent } from "./fixtures/events.js";
import { startTestStack, type TestStack } from "./support/stack.js";

let stack: TestStack;
beforeAll(async () => {
  stack = await startTestStack();
});
afterAll(async () => {
  await stack?.stop();
});

/** POST /v1/runs with `prompt` as the fixture's caller (billing:read billing:write), or with `claims`. */
async function run(prompt: string, claims?: Record<string, unknown>) {
  const response = await stack.invoke(
    apiEvent("http-api-v2", { body: { prompt }, ...(claims ? { extraClaims: claims } : {}) }) as never,
  );
  expect(response.statusCode, response.body).toBe(200);
  return RunResponseSchema.parse(JSON.parse(response.body ?? ""));
}

describe("the local planner reads invoices", () => {
  it("lists the tenant's invoices, then gets one by id; the answers copy the tools' values", async () => {
    const empty = await run("List my invoices");
    expect(empty.toolResults.map((r) => [r.metadata.toolName, r.status])).toEqual([
      ["listInvoices", "success"],
    ]);
    expect(empty.answer).toContain("listInvoices: no invoices recorded yet.");

    const recorded = await run("Calculate tax on 200 BDT for a client in Bangladesh and record it");
    const invoice = recorded.toolResults.find((r) => r.metadata.toolName === "recordInvoice")?.data as {
      invoice: { invoiceId: string };
    };
    const { invoiceId } = invoice.invoice;

    const listed = await run("List my invoices");
    expect(listed.status).toBe("completed");
    expect(listed.toolResults.map((r) => [r.metadata.toolName, r.status])).toEqual([
      ["listInvoices", "success"],
    ]);
    expect(listed.answer).toContain("listInvoices: 1 invoice(s):");
    expect(listed.answer).toContain(`${invoiceId} for Bangladesh client, gross 230.00 BDT`);

    const got = await run(`Show me invoice ${invoiceId}`);
    expect(got.toolResults.map((r) => [r.metadata.toolName, r.status])).toEqual([["getInvoice", "success"]]);
    expect(got.answer).toContain(`getInvoice: invoice ${invoiceId} for Bangladesh client, gross 230.00 BDT.`);

    const missing = await run("Show me invoice inv_000000000000000000000000");
    expect(missing.toolResults.map((r) => [r.metadata.toolName, r.error?.code])).toEqual([
      ["getInvoice", "INVOICE_NOT_FOUND"],
    ]);
  });

  it("calls no read tool a caller without billing:read is not offered, and says so", async () => {
    const requestsBefore = stack.model.requests.length;
    const body = await run("List my invoices", { scope: "billing:write" });
    expect(body.status).toBe("completed");
    expect(body.toolResults).toEqual([]);
    expect(body.answer).toContain("The listInvoices tool is not offered to you");
    expect(stack.model.requests.length - requestsBefore).toBe(1);
  });
});
