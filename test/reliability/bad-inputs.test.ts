/**
 * Runs the bad-input corpus (./bad-inputs.ts) through the real handler, one case at a time: each gets
 * its own tenant, its expected status/code, and a DynamoDB check of what was written.
 */
import { randomUUID } from "node:crypto";
import { ScanCommand } from "@aws-sdk/lib-dynamodb";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { quotedRecordInvoiceArgs } from "../../local/fixtures.js";
import type { ToolResult } from "../../shared/agent/result.js";
import { apiEvent, type EventOptions } from "../fixtures/events.js";
import { captureOutput, FAKE_API_KEY, FAKE_JWT, secretsIn, tenantItems } from "../support/reliability.js";
import { startTestStack, type TestStack } from "../support/stack.js";
import {
  BAD_INPUTS,
  type HttpCase,
  OTHER_TENANTS_INVOICE,
  OTHER_TENANTS_QUOTE,
  TENANT,
  type ToolCase,
} from "./bad-inputs.js";

let stack: TestStack;
let capture: ReturnType<typeof captureOutput>;
const otherTenant = `tenant_other_${randomUUID().slice(0, 8)}`;
let otherQuote = "";
let otherInvoice = "";

beforeAll(async () => {
  stack = await startTestStack({ OPENAI_API_KEY: FAKE_API_KEY });
  // Another tenant's live quote and recorded invoice, which injected prompts try to use.
  const args = JSON.parse(await quotedRecordInvoiceArgs(stack.deps, otherTenant)) as { quoteId: string };
  otherQuote = args.quoteId;
  const invoiceQuote = JSON.parse(await quotedRecordInvoiceArgs(stack.deps, otherTenant)) as {
    quoteId: string;
  };
  const quote = await stack.deps.quotes.lookup(otherTenant, invoiceQuote.quoteId, Date.now());
  if (quote.kind !== "live") throw new Error("no live quote");
  const { invoice } = await stack.deps.ledger.recordOnce(
    {
      tenantId: otherTenant,
      clientName: "Other Co",
      clientReference: null,
      description: null,
      quoteId: quote.quote.quoteId,
      jurisdiction: quote.quote.jurisdiction,
      currency: quote.quote.currency,
      rateVersion: quote.quote.rateVersion,
      rate: quote.quote.rate,
      taxPointDate: quote.quote.taxPointDate,
      subtotal: quote.quote.subtotal,
      taxAmount: quote.quote.taxAmount,
      grossTotal: quote.quote.grossTotal,
      runId: "run_other",
      createdBy: "usr_other",
    },
    `tk_${"0".repeat(64)}`,
  );
  otherInvoice = invoice.invoiceId;
  capture = captureOutput();
});
afterAll(async () => {
  capture?.stop();
  await stack?.stop();
});

/** Replaces the corpus placeholders in any JSON-able value. */
function fill<T>(value: T, tenantId: string): T {
  const text = JSON.stringify(value)
    .replaceAll(TENANT, tenantId)
    .replaceAll(OTHER_TENANTS_QUOTE, otherQuote)
    .replaceAll(OTHER_TENANTS_INVOICE, otherInvoice);
  return JSON.parse(text) as T;
}

async function tableCount(): Promise<number> {
  let count = 0;
  let startKey: Record<string, unknown> | undefined;
  do {
    const page = await stack.deps.ddb.send(
      new ScanCommand({
        TableName: stack.config.table.name,
        Select: "COUNT",
        ConsistentRead: true,
        ExclusiveStartKey: startKey,
      }),
    );
    count += page.Count ?? 0;
    startKey = page.LastEvaluatedKey;
  } while (startKey);
  return count;
}

async function invoke(options: EventOptions) {
  const event = apiEvent("http-api-v2", {
    ...options,
    headers: { authorization: `Bearer ${FAKE_JWT}`, ...options.headers },
  });
  return stack.invoke(event as unknown as Parameters<TestStack["invoke"]>[0]);
}

const httpCases = BAD_INPUTS.filter((c): c is HttpCase => c.kind === "http");
const toolCases = BAD_INPUTS.filter((c): c is ToolCase => c.kind === "tool");

describe(`bad-input corpus (${BAD_INPUTS.length} cases)`, () => {
  it("has at least 40 cases, with unique names", () => {
    expect(BAD_INPUTS.length).toBeGreaterThanOrEqual(40);
    expect(new Set(BAD_INPUTS.map((c) => c.name)).size).toBe(BAD_INPUTS.length);
  });

  it.each(httpCases.map((c) => [c.name, c] as const))("HTTP: %s", async (_name, testCase) => {
    const tenantId = `tenant_bad_${randomUUID().slice(0, 8)}`;
    const before = await tableCount();
    const response = await invoke(fill(testCase.request, tenantId));
    const body = JSON.parse(response.body ?? "{}") as { code?: string };
    expect([response.statusCode, body.code ?? null]).toEqual([testCase.expect.status, testCase.expect.code]);
    if (testCase.expect.status >= 400)
      expect(response.headers?.["content-type"]).toBe("application/problem+json");
    // Nothing written anywhere in the table.
    expect(await tableCount()).toBe(before);
    expect(await tenantItems(stack.deps.ddb, stack.config.table.name, tenantId)).toEqual([]);
  });

  it.each(toolCases.map((c) => [c.name, c] as const))("tool: %s", async (_name, raw) => {
    const tenantId = `tenant_bad_${randomUUID().slice(0, 8)}`;
    const testCase = fill(raw, tenantId);
    const before = await tableCount();
    const otherBefore = await tenantItems(stack.deps.ddb, stack.config.table.name, otherTenant);
    stack.model.script([
      { toolCalls: [{ id: "call_bad", name: testCase.tool, arguments: testCase.arguments }] },
      { content: "Done." },
    ]);
    const response = await invoke({
      body: { prompt: testCase.prompt ?? "Calculate tax on 100 GBP for a client in the UK and record it." },
      claims: {
        sub: "usr_bad_input",
        tenant_id: tenantId,
        scope: testCase.scope ?? "billing:read billing:write",
      },
    });
    expect(response.statusCode).toBe(200);
    const result = (JSON.parse(response.body ?? "{}") as { toolResults: ToolResult[] }).toolResults[0];
    expect([result?.status, result?.error?.code ?? ""]).toEqual([
      testCase.expect.status,
      testCase.expect.code,
    ]);
    if (testCase.expect.status !== "success") expect(result?.data).toBeNull();

    // What was written: the run's audit records and event log, the day's usage counter (docs/quotas.md:
    // every run's tokens are counted, limits or not) holding this one run, plus the normalized quote of an
    // accepted case.
    const items = await tenantItems(stack.deps.ddb, stack.config.table.name, tenantId);
    const counters = items.filter((item) => String(item.sk).startsWith("COUNTER#quota#"));
    expect(counters.map((item) => item.t_n)).toEqual([1]);
    const notAudit = items.filter((item) => !/^(RUN|EVENTS|COUNTER#quota)#/.test(String(item.sk)));
    if (testCase.writes) {
      expect(
        notAudit.map((item) => [String(item.sk).split("#")[0], item.jurisdiction, item.currency]),
      ).toEqual([["QUOTE", testCase.writes.quote.jurisdiction, testCase.writes.quote.currency]]);
    } else {
      expect(notAudit).toEqual([]);
    }
    expect(items.some((item) => String(item.sk).startsWith("RUN#"))).toBe(true);
    expect(await tableCount()).toBe(before + items.length);
    // The other tenant's data is untouched.
    expect(await tenantItems(stack.deps.ddb, stack.config.table.name, otherTenant)).toEqual(otherBefore);
  });

  it("no log line of the corpus carries the API key or the JWT", () => {
    const logs = capture.text();
    expect(logs).toContain('"message":"request"');
    expect(secretsIn(logs)).toEqual([]);
    console.log(
      `RELIABILITY bad-inputs ${JSON.stringify({ cases: BAD_INPUTS.length, http: httpCases.length, tool: toolCases.length, logLines: capture.lines() })}`,
    );
  });
});
