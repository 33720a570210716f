import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PLANNER_BANNER } from "../local/planner.js";
import type { ToolResult } from "../shared/agent/result.js";
import { seedEvent, startTestStack, type TestStack } from "./support/stack.js";

let stack: TestStack;
beforeAll(async () => {
  stack = await startTestStack();
});
afterAll(async () => {
  await stack?.stop();
});

interface RunBody {
  runId: string;
  status: string;
  answer: string | null;
  cycles: number;
  toolResults: ToolResult[];
  usage: { promptTokens: number; completionTokens: number; totalTokens: number };
  durationMs: number;
}

describe("the seed scenario through the Lambda handler", () => {
  it("calculates GB tax, rejects DE, records one UK invoice", async () => {
    const response = await stack.invoke(seedEvent());
    expect(response.statusCode).toBe(200);
    expect(response.headers?.["content-type"]).toMatch(/application\/json/);
    const body = JSON.parse(response.body ?? "") as RunBody;
    expect(body.status).toBe("completed");
    expect(body.runId).toMatch(/^run_/);
    expect(body.cycles).toBe(3);
    expect(body.usage.totalTokens).toBeGreaterThan(0);
    expect(body.usage.totalTokens).toBe(body.usage.promptTokens + body.usage.completionTokens);

    const [uk, de, record, ...rest] = body.toolResults;
    expect(rest).toHaveLength(0);
    expect(uk?.metadata.toolName).toBe("calculateTax");
    expect(uk?.status).toBe("success");
    expect(uk?.data).toMatchObject({
      jurisdiction: "GB",
      rate: "0.20",
      currency: "GBP",
      subtotal: { amount: "1500.00", minorUnits: 150000 },
      taxAmount: { amount: "300.00", minorUnits: 30000 },
      grossTotal: { amount: "1800.00", minorUnits: 180000 },
    });

    expect(de?.metadata.toolName).toBe("calculateTax");
    expect(de?.status).toBe("business_error");
    expect(de?.error?.code).toBe("UNSUPPORTED_JURISDICTION");
    expect(de?.error?.message).toContain("GB, BD");
    expect(de?.data).toBeNull();

    expect(record?.metadata.toolName).toBe("recordInvoice");
    expect(record?.status).toBe("success");
    expect(record?.metadata.idempotencyKey).toMatch(/^tk_[0-9a-f]{64}$/);
    const invoice = (record?.data as { invoice?: { invoiceId: string } } | undefined)?.invoice ?? {
      invoiceId: "",
    };
    expect(invoice.invoiceId).toMatch(/^inv_[0-9a-f]{24}$/);

    const ledger = await stack.deps.ledger.list("tenant_uk_01");
    expect(ledger).toHaveLength(1);
    expect(ledger[0]).toMatchObject({
      invoiceId: invoice.invoiceId,
      tenantId: "tenant_uk_01",
      jurisdiction: "GB",
      currency: "GBP",
      subtotal: { amount: "1500.00", minorUnits: 150000 },
      taxAmount: { amount: "300.00", minorUnits: 30000 },
      grossTotal: { amount: "1800.00", minorUnits: 180000 },
      createdBy: "usr_9918",
    });

    expect(body.answer).toContain(PLANNER_BANNER);
    expect(body.answer).toContain("1800.00");
    expect(body.answer).toContain(invoice.invoiceId);
  });

  it("denies recordInvoice to a caller without billing:write and writes nothing", async () => {
    const claims = { sub: "usr_2001", tenant_id: "tenant_ro_01", scope: "billing:read" };
    const response = await stack.invoke(seedEvent({ claims }));
    expect(response.statusCode).toBe(200);
    const body = JSON.parse(response.body ?? "") as RunBody;
    expect(body.status).toBe("permission_denied");
    const record = body.toolResults.find((r) => r.metadata.toolName === "recordInvoice");
    expect(record?.status).toBe("permission_denied");
    expect(record?.error?.code).toBe("PERMISSION_DENIED");
    expect(record?.error?.details).toEqual({ requiredPermission: "billing:write" });
    expect(await stack.deps.ledger.list("tenant_ro_01")).toHaveLength(0);
    // The run ended in order: no model call after the denied turn.
    expect(stack.model.requests.at(-1)?.messages.some((m) => m.role === "tool")).toBe(true);
  });

  it("answers 401 problem+json without verified identity, and runs nothing", async () => {
    const event = seedEvent();
    const before = stack.model.requests.length;
    delete (event.requestContext as { authorizer?: unknown }).authorizer;
    const response = await stack.invoke(event);
    expect(response.statusCode).toBe(401);
    expect(response.headers?.["content-type"]).toBe("application/problem+json");
    expect(JSON.parse(response.body ?? "")).toMatchObject({ status: 401, code: "UNAUTHENTICATED" });
    expect(stack.model.requests.length).toBe(before);
  });
});
