/**
 * Tenant isolation on every read and write path: tenant B, holding tenant A's run id, invoice ids,
 * quote id, listing cursor and Idempotency-Key, gets a 404 / business_error / an empty listing, and
 * never any of A's data. B's caller even has A's user id (`sub`): the tenant is the boundary.
 */
import { randomUUID } from "node:crypto";
import type { APIGatewayProxyStructuredResultV2 } from "aws-lambda";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ToolResult } from "../../shared/agent/result.js";
import { apiEvent, type EventOptions } from "../fixtures/events.js";
import { captureOutput, FAKE_API_KEY, FAKE_JWT, secretsIn, tenantItems } from "../support/reliability.js";
import { startTestStack, type TestStack } from "../support/stack.js";

const tenantA = `tenant_a_${randomUUID().slice(0, 8)}`;
const tenantB = `tenant_b_${randomUUID().slice(0, 8)}`;
const SHARED_KEY = `shared-${randomUUID()}`;
const PROMPT_A = "Calculate tax on 500 GBP for a client in the UK and record it.";

let stack: TestStack;
let capture: ReturnType<typeof captureOutput>;
let runA: { runId: string; body: string };
let invoicesA: string[] = [];
let quoteA = "";
let cursorA = "";

function as(tenantId: string, options: EventOptions) {
  const event = apiEvent("http-api-v2", {
    ...options,
    headers: { authorization: `Bearer ${FAKE_JWT}`, ...options.headers },
    claims: { sub: "usr_same_person", tenant_id: tenantId, scope: "billing:read billing:write" },
  });
  return stack.invoke(event as unknown as Parameters<TestStack["invoke"]>[0]);
}
const json = (response: APIGatewayProxyStructuredResultV2) =>
  JSON.parse(response.body ?? "{}") as Record<string, unknown>;
const toolResults = (response: APIGatewayProxyStructuredResultV2) =>
  (json(response).toolResults ?? []) as ToolResult[];

/** True when `text` mentions any of A's identifiers. */
const leaksA = (text: string) =>
  [runA.runId, quoteA, ...invoicesA, tenantA].some((id) => id !== "" && text.includes(id));

beforeAll(async () => {
  stack = await startTestStack({ OPENAI_API_KEY: FAKE_API_KEY });
  capture = captureOutput();
  // Tenant A: two runs through the planner, each recording an invoice; the first under SHARED_KEY.
  const first = await as(tenantA, { body: { prompt: PROMPT_A }, headers: { "idempotency-key": SHARED_KEY } });
  const second = await as(tenantA, {
    body: { prompt: "Calculate tax on 600 GBP for a client in the UK and record it." },
  });
  for (const response of [first, second]) expect(response.statusCode).toBe(200);
  runA = { runId: String(json(first).runId), body: first.body ?? "" };
  quoteA = String((toolResults(first)[0]?.data as { quoteId: string } | undefined)?.quoteId);
  invoicesA = [first, second].map((r) =>
    String(
      (
        toolResults(r).find((t) => t.metadata.toolName === "recordInvoice")?.data as
          | { invoice: { invoiceId: string } }
          | undefined
      )?.invoice.invoiceId,
    ),
  );
  for (const id of [quoteA, ...invoicesA]) expect(id).toMatch(/^(qt|inv)_[0-9a-f]+$/);
  const page = await as(tenantA, { method: "GET", path: "/v1/invoices?limit=1" });
  cursorA = String(json(page).nextCursor);
  expect(cursorA).not.toBe("null");
});
afterAll(async () => {
  capture?.stop();
  await stack?.stop();
});

async function expectNothingOfB() {
  const items = await tenantItems(stack.deps.ddb, stack.config.table.name, tenantB);
  expect(items.filter((item) => /^(INVOICE|QUOTE)#/.test(String(item.sk)))).toEqual([]);
}

describe("tenant isolation: tenant B with tenant A's ids and keys", () => {
  it("GET /v1/runs/{A's run}: 404", async () => {
    const response = await as(tenantB, { method: "GET", path: `/v1/runs/${runA.runId}` });
    expect([response.statusCode, json(response).code]).toEqual([404, "NOT_FOUND"]);
    expect(response.body).not.toContain(PROMPT_A);
    expect(leaksA((response.body ?? "").replace(runA.runId, ""))).toBe(false);
  });

  it("GET /v1/invoices/{A's invoice}: 404 for each", async () => {
    for (const invoiceId of invoicesA) {
      const response = await as(tenantB, { method: "GET", path: `/v1/invoices/${invoiceId}` });
      expect([response.statusCode, json(response).code]).toEqual([404, "NOT_FOUND"]);
      expect(response.body).not.toContain('"grossTotal"');
    }
  });

  it("GET /v1/invoices: B's listing is empty; A's cursor is refused", async () => {
    const list = await as(tenantB, { method: "GET", path: "/v1/invoices" });
    expect([list.statusCode, json(list).items, json(list).nextCursor]).toEqual([200, [], null]);
    const withCursor = await as(tenantB, { method: "GET", path: `/v1/invoices?cursor=${cursorA}` });
    expect([withCursor.statusCode, json(withCursor).code]).toEqual([400, "INVALID_REQUEST"]);
    expect(leaksA(withCursor.body ?? "")).toBe(false);
  });

  it("getInvoice and listInvoices tools: business_error and an empty list", async () => {
    stack.model.script([
      {
        toolCalls: [
          { id: "call_get", name: "getInvoice", arguments: JSON.stringify({ invoiceId: invoicesA[0] }) },
          { id: "call_list", name: "listInvoices", arguments: JSON.stringify({ limit: null }) },
        ],
      },
      { content: "Done." },
    ]);
    const response = await as(tenantB, {
      body: { prompt: `Show me invoice ${invoicesA[0]} and list all invoices.` },
    });
    const [get, list] = toolResults(response);
    expect([get?.status, get?.error?.code, get?.data]).toEqual(["business_error", "INVOICE_NOT_FOUND", null]);
    expect(list?.status).toBe("success");
    expect((list?.data as { invoices: unknown[] } | undefined)?.invoices).toEqual([]);
    expect(JSON.stringify(list?.data)).not.toContain("inv_");
  });

  it("recordInvoice with A's quoteId: business_error QUOTE_NOT_FOUND, nothing written", async () => {
    stack.model.script([
      {
        toolCalls: [
          {
            id: "call_rec",
            name: "recordInvoice",
            arguments: JSON.stringify({
              clientName: "B Ltd",
              quoteId: quoteA,
              clientReference: null,
              description: null,
            }),
          },
        ],
      },
      { content: "Done." },
    ]);
    const response = await as(tenantB, { body: { prompt: `Record quote ${quoteA}.` } });
    const [record] = toolResults(response);
    expect([record?.status, record?.error?.code, record?.data]).toEqual([
      "business_error",
      "QUOTE_NOT_FOUND",
      null,
    ]);
    await expectNothingOfB();
    expect(await stack.deps.ledger.list(tenantA)).toHaveLength(2);
  });

  it("A's Idempotency-Key: B's request runs as B's own (no replay of A's response, no 422)", async () => {
    stack.model.usePlanner();
    const same = await as(tenantB, {
      body: { prompt: PROMPT_A },
      headers: { "idempotency-key": SHARED_KEY },
    });
    expect([same.statusCode, same.headers?.["idempotent-replayed"]]).toEqual([200, undefined]);
    expect(json(same).runId).not.toBe(runA.runId);
    expect(leaksA(same.body ?? "")).toBe(false);
    const invoiceB = (
      toolResults(same).find((t) => t.metadata.toolName === "recordInvoice")?.data as
        | { invoice: { invoiceId: string } }
        | undefined
    )?.invoice.invoiceId;
    expect(invoiceB).toMatch(/^inv_[0-9a-f]{24}$/);
    expect(invoicesA).not.toContain(invoiceB);

    const different = await as(tenantB, {
      body: { prompt: "Calculate tax on 900 GBP for a client in the UK." },
      headers: { "idempotency-key": `${SHARED_KEY}-other` },
    });
    expect(different.statusCode).toBe(200);
    // A's key record is still A's, replaying A's own response to A.
    const replay = await as(tenantA, {
      body: { prompt: PROMPT_A },
      headers: { "idempotency-key": SHARED_KEY },
    });
    expect([replay.statusCode, replay.headers?.["idempotent-replayed"], replay.body]).toEqual([
      200,
      "true",
      runA.body,
    ]);
    expect(await stack.deps.ledger.list(tenantA)).toHaveLength(2);
    expect(await stack.deps.ledger.list(tenantB)).toHaveLength(1);
  });

  it("no log line carries the API key or the JWT", () => {
    expect(capture.text()).toContain('"message":"request"');
    expect(secretsIn(capture.text())).toEqual([]);
  });
});
