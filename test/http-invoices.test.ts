import type { APIGatewayProxyStructuredResultV2 } from "aws-lambda";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  InvoicePageSchema,
  InvoiceSchema,
  ProblemSchema,
  RunResponseSchema,
} from "../functions/api/contract.js";
import { keys } from "../shared/store/keys.js";
import { encodeCursor } from "../shared/store/query.js";
import { tableKey } from "../shared/store/table.js";
import { apiEvent, type EventOptions, type EventShape, header } from "./fixtures/events.js";
import { startTestStack, type TestStack } from "./support/stack.js";

type Result = APIGatewayProxyStructuredResultV2 & { multiValueHeaders?: Record<string, unknown[]> };
let stack: TestStack;
const call = async (shape: EventShape, options: EventOptions = {}) =>
  (await stack.invoke(apiEvent(shape, options) as never)) as Result;
const get = (path: string, options: EventOptions = {}, shape: EventShape = "http-api-v2") =>
  call(shape, { method: "GET", path, ...options });
const json = (response: Result) => JSON.parse(response.body ?? "") as unknown;
const problem = (response: Result, status: number, code: string) => {
  expect(response.statusCode).toBe(status);
  expect(header(response, "content-type")).toBe("application/problem+json");
  const body = ProblemSchema.parse(json(response));
  expect(body.code).toBe(code);
  return body;
};

const AMOUNTS = ["100", "200", "300", "400", "500"];
let recorded: string[] = [];

beforeAll(async () => {
  stack = await startTestStack();
  // The ledger is filled the way users fill it: runs that record invoices (the local planner).
  for (const amount of AMOUNTS) {
    const response = await call("http-api-v2", {
      body: { prompt: `Calculate tax on ${amount} GBP for a client in the UK and record the invoice.` },
    });
    const run = RunResponseSchema.parse(json(response));
    const invoice = run.toolResults.find(
      (r) => r.metadata.toolName === "recordInvoice" && r.status === "success",
    );
    const data = invoice?.data as { invoice?: { invoiceId?: string } } | undefined;
    recorded.push(String(data?.invoice?.invoiceId));
  }
  await call("rest-v1", {
    body: { prompt: "Calculate tax on 999 GBP for a client in the UK and record the invoice." },
  });
  recorded = recorded.sort();
});
afterAll(async () => {
  await stack?.stop();
});

describe("GET /v1/invoices", () => {
  it("pages through the tenant's ledger with an opaque cursor", async () => {
    expect(recorded).toHaveLength(5);
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const query: string = cursor ? `?limit=2&cursor=${cursor}` : "?limit=2";
      const response = await get(`/v1/invoices${query}`);
      expect(response.statusCode).toBe(200);
      const page = InvoicePageSchema.parse(json(response));
      expect(page.items.length).toBeLessThanOrEqual(2);
      for (const invoice of page.items) expect(invoice.tenantId).toBe("tenant_uk_01");
      seen.push(...page.items.map((i) => i.invoiceId));
      cursor = page.nextCursor;
      if (cursor) expect(cursor).toMatch(/^[A-Za-z0-9_-]+$/);
      pages += 1;
    } while (cursor && pages < 10);
    expect(pages).toBe(3);
    expect(seen).toEqual(recorded);
  });

  it("order=newest pages newest createdAt first; its cursor is refused by the id order and an unknown order is 400", async () => {
    const all = InvoicePageSchema.parse(json(await get("/v1/invoices?limit=100"))).items;
    const expected = [...all]
      .sort((a, b) => b.createdAt.localeCompare(a.createdAt) || b.invoiceId.localeCompare(a.invoiceId))
      .map((i) => i.invoiceId);
    expect(expected).toHaveLength(5);
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const query: string = `?order=newest&limit=4${cursor ? `&cursor=${cursor}` : ""}`;
      const page = InvoicePageSchema.parse(json(await get(`/v1/invoices${query}`)));
      seen.push(...page.items.map((i) => i.invoiceId));
      if (page.nextCursor && !cursor) {
        problem(await get(`/v1/invoices?cursor=${page.nextCursor}`), 400, "INVALID_REQUEST");
      }
      cursor = page.nextCursor;
    } while (cursor && seen.length < 20);
    expect(seen).toEqual(expected);
    problem(await get("/v1/invoices?order=oldest"), 400, "INVALID_REQUEST");
  });

  it("defaults to 20 a page, and the last page has no cursor", async () => {
    const page = InvoicePageSchema.parse(json(await get("/v1/invoices")));
    expect(page.items.map((i) => i.invoiceId)).toEqual(recorded);
    expect(page.nextCursor).toBeNull();
    const exact = InvoicePageSchema.parse(json(await get("/v1/invoices?limit=5")));
    expect(exact.items).toHaveLength(5);
    expect(exact.nextCursor).toBeNull();
    const grossTotals = page.items.map((i) => i.grossTotal.amount).sort((a, b) => Number(a) - Number(b));
    expect(grossTotals).toEqual(["120.00", "240.00", "360.00", "480.00", "600.00"]);
  });

  it("works for a REST v1 event with its query string parameters, tenant-scoped", async () => {
    const response = await get("/v1/invoices?limit=1", {}, "rest-v1");
    expect(response.statusCode).toBe(200);
    expect(header(response, "content-type")).toMatch(/^application\/json/);
    const page = InvoicePageSchema.parse(json(response));
    expect(page.items).toHaveLength(1);
    expect(page.items[0]).toMatchObject({ tenantId: "tenant_uk_02", subtotal: { amount: "999.00" } });
    expect(page.nextCursor).toBeNull();
  });

  it("an out-of-range limit is 400 naming the query parameter", async () => {
    for (const limit of ["0", "101", "abc", "2.5"]) {
      const body = problem(await get(`/v1/invoices?limit=${limit}`), 400, "INVALID_REQUEST");
      expect(body.errors?.[0]).toMatchObject({ in: "query", path: "limit" });
    }
  });

  it("a cursor that is malformed, or names another tenant's partition, is 400", async () => {
    const first = InvoicePageSchema.parse(json(await get("/v1/invoices?limit=1")));
    const mine = first.nextCursor ?? "";
    expect(mine).not.toBe("");
    // Well-formed cursors as the store encodes them: another tenant's partition, and the caller's own
    // partition outside the invoices.
    const forged = encodeCursor(tableKey("tenant_uk_02", keys.invoice("inv_000000000000000000000000")));
    const notAnInvoice = encodeCursor(tableKey("tenant_uk_01", keys.run("x")));
    const extraField = Buffer.from(
      JSON.stringify({ ...tableKey("tenant_uk_01", keys.invoice("inv_0")), extra: "1" }),
    ).toString("base64url");
    for (const cursor of ["!!!", "bm90LWpzb24", forged, notAnInvoice, extraField]) {
      const body = problem(
        await get(`/v1/invoices?cursor=${encodeURIComponent(cursor)}`),
        400,
        "INVALID_REQUEST",
      );
      expect(body.errors?.[0]).toMatchObject({ in: "query", path: "cursor" });
    }
    // A cursor issued to one tenant is refused for another.
    problem(await get(`/v1/invoices?cursor=${mine}`, {}, "rest-v1"), 400, "INVALID_REQUEST");
  });

  it("needs billing:read: 403 FORBIDDEN without it", async () => {
    const writer = { extraClaims: { scope: "billing:write" } };
    const body = problem(await get("/v1/invoices", writer), 403, "FORBIDDEN");
    expect(body.detail).toContain("billing:read");
    expect(body.requiredPermission).toBe("billing:read");
    problem(await get(`/v1/invoices/${recorded[0]}`, writer), 403, "FORBIDDEN");
  });
});

describe("GET /v1/invoices/{invoiceId}", () => {
  it("returns the tenant's invoice", async () => {
    const response = await get(`/v1/invoices/${recorded[0]}`);
    expect(response.statusCode).toBe(200);
    const invoice = InvoiceSchema.parse(json(response));
    expect(invoice).toMatchObject({
      invoiceId: recorded[0],
      tenantId: "tenant_uk_01",
      createdBy: "usr_9918",
    });
    expect(invoice.idempotencyKey).toMatch(/^tk_/);
  });

  it("another tenant's invoice is 404, like an unknown one", async () => {
    const other = problem(
      await get(`/v1/invoices/${recorded[0]}`, { extraClaims: { tenant_id: "tenant_other" } }),
      404,
      "NOT_FOUND",
    );
    const unknown = problem(await get("/v1/invoices/inv_000000000000000000000000"), 404, "NOT_FOUND");
    expect({ ...other, detail: "" }).toEqual({ ...unknown, detail: "" });
  });

  it("a malformed invoiceId is 400", async () => {
    const body = problem(await get("/v1/invoices/inv%23x"), 400, "INVALID_REQUEST");
    expect(body.errors?.[0]).toMatchObject({ in: "path", path: "invoiceId" });
  });
});
