/**
 * The tools a run offers the model follow the caller's permissions (shared/agent/dispatcher.ts
 * toolsAllowedFor), the dispatcher still refuses a call to a withheld tool, and a run that stops after
 * an effect says in its outcome what was done. Through the real handler, DynamoDB Local and the local
 * model server in scripted mode.
 */
import type { APIGatewayProxyStructuredResultV2 } from "aws-lambda";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RunResponseSchema } from "../functions/api/contract.js";
import type { ScriptedReply } from "../local/model-server.js";
import { toolsAllowedFor } from "../shared/agent/dispatcher.js";
import { apiEvent } from "./fixtures/events.js";
import { startTestStack, type TestStack } from "./support/stack.js";

let stack: TestStack;
beforeAll(async () => {
  stack = await startTestStack();
});
afterAll(async () => {
  await stack?.stop();
});

const TENANT = "tenant_uk_01";
const GB_TAX = { amount: 1500, currency: "GBP", jurisdiction: "UK" };

/** Scripts the model and sends POST /v1/runs as a caller holding `scope`. */
async function run(scope: string, script: ScriptedReply[]) {
  stack.model.requests.length = 0;
  stack.model.script(script);
  const response = (await stack.invoke(
    apiEvent("http-api-v2", {
      body: { prompt: "Calculate tax on 1500 GBP for a client in the UK and record it for Acme Ltd." },
      extraClaims: { scope },
    }) as never,
  )) as APIGatewayProxyStructuredResultV2;
  expect(response.statusCode).toBe(200);
  return RunResponseSchema.parse(JSON.parse(response.body ?? ""));
}

/** The tool names of recorded model request `index`. */
const offered = (index: number) =>
  ((stack.model.requests[index]?.tools ?? []) as Array<{ function: { name: string } }>).map(
    (tool) => tool.function.name,
  );

describe("tools offered to the model", () => {
  it("are exactly those the caller's permissions allow, on every model call", async () => {
    await run("billing:write", [{ content: "Nothing to do." }]);
    expect(offered(0)).toEqual(["calculateTax", "recordInvoice"]);
    await run("billing:read", [{ content: "Nothing to do." }]);
    expect(offered(0)).toEqual(["calculateTax", "getInvoice", "listInvoices"]);
    await run("billing:read billing:write", [
      { toolCalls: [{ id: "c1", name: "calculateTax", arguments: GB_TAX }] },
      { content: "300.00 GBP." },
    ]);
    expect([offered(0), offered(1)]).toEqual([
      ["calculateTax", "recordInvoice", "getInvoice", "listInvoices"],
      ["calculateTax", "recordInvoice", "getInvoice", "listInvoices"],
    ]);
  });

  it("toolsAllowedFor keeps the registry's order and the open tools for a caller without permissions", () => {
    const names = (permissions: string[]) =>
      toolsAllowedFor(stack.deps.tools, { tenantId: TENANT, userId: "u", permissions } as never).map(
        (tool) => tool.name,
      );
    expect(names([])).toEqual(["calculateTax"]);
    expect(names(["billing:read"])).toEqual(["calculateTax", "getInvoice", "listInvoices"]);
  });

  it("a call to a withheld tool after recording an invoice: permission_denied, and the outcome says the invoice was recorded", async () => {
    const quote = await run("billing:write", [
      { toolCalls: [{ id: "c1", name: "calculateTax", arguments: GB_TAX }] },
      { content: "300.00 GBP." },
    ]);
    const { quoteId } = (quote.toolResults[0]?.data ?? {}) as { quoteId: string };
    const body = await run("billing:write", [
      { toolCalls: [{ id: "c2", name: "recordInvoice", arguments: { clientName: "Acme Ltd", quoteId } }] },
      // A model "confirming" what was recorded with a tool this caller was never offered.
      { toolCalls: [{ id: "c3", name: "getInvoice", arguments: { invoiceId: "inv_unknown" } }] },
      { content: "never reached" },
    ]);
    expect(offered(1)).not.toContain("getInvoice");
    expect(body.status).toBe("permission_denied");
    expect(body.answer).toBeNull();
    expect(body.toolResults.map((result) => `${result.metadata.toolName}:${result.status}`)).toEqual([
      "recordInvoice:success",
      "getInvoice:permission_denied",
    ]);
    const { invoice } = (body.toolResults[0]?.data ?? {}) as { invoice: { invoiceId: string } };
    const ledger = await stack.deps.ledger.list(TENANT);
    expect(ledger.filter((row) => row.invoiceId === invoice.invoiceId)).toHaveLength(1);
    const summary = `recordInvoice recorded invoice ${invoice.invoiceId} for Acme Ltd (gross total 1800.00 GBP)`;
    expect(body.details).toEqual({
      permission: { toolName: "getInvoice", requiredPermission: "billing:read" },
      effects: [{ toolName: "recordInvoice", toolCallId: "c2", summary }],
    });
    expect(body.reason).toBe(
      `getInvoice needs the permission "billing:read", which the caller lacks. Done before it stopped: ${summary}.`,
    );
  });

  it("a completed run and a stopped run without effects carry no effects", async () => {
    const completed = await run("billing:write", [
      { toolCalls: [{ id: "c1", name: "calculateTax", arguments: GB_TAX }] },
      { content: "300.00 GBP." },
    ]);
    expect(completed.status).toBe("completed");
    expect(completed.details).toEqual({});
    const denied = await run("billing:write", [
      { toolCalls: [{ id: "c1", name: "listInvoices", arguments: {} }] },
    ]);
    expect(denied.status).toBe("permission_denied");
    expect(denied.details.effects).toBeUndefined();
    expect(denied.reason).toBe('listInvoices needs the permission "billing:read", which the caller lacks.');
  });
});
