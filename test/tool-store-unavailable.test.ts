/**
 * A tool whose DynamoDB write is still throttled after the AWS SDK's own attempts (3, shared/store/dynamo.ts):
 * the dispatcher answers fatal_error STORE_UNAVAILABLE, retryable, and the local planner makes the same
 * call once more. Real handler, DynamoDB Local and local model server (planner mode); the throttling is
 * DynamoDB's own ThrottlingException, thrown inside the SDK's retry loop by the storm test's
 * `injectThrottling` (test/support/reliability.ts), for quote writes only.
 */
import { ScanCommand } from "@aws-sdk/lib-dynamodb";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import type { ToolResult } from "../shared/agent/result.js";
import { injectThrottling } from "./support/reliability.js";
import { seedEvent, startTestStack, type TestStack } from "./support/stack.js";

let stack: TestStack;
beforeAll(async () => {
  stack = await startTestStack();
});
afterAll(async () => {
  await stack?.stop();
});

/** Throttles the next `limit` attempts to write a tax quote (a PutItem of an item whose sort key is QUOTE#…). */
const throttleQuoteWrites = (limit: number) =>
  injectThrottling(stack.deps.ddb, {
    rate: 1,
    seed: 1,
    limit,
    errorName: "ThrottlingException",
    only: (command, input) => command === "PutItemCommand" && JSON.stringify(input).includes('"QUOTE#'),
  });

interface RunBody {
  status: string;
  answer: string | null;
  cycles: number;
  toolResults: ToolResult[];
}

async function run(tenantId: string, prompt: string): Promise<RunBody> {
  const response = await stack.invoke(
    seedEvent({ prompt, claims: { sub: "usr_store", tenant_id: tenantId, scope: "billing:write" } }),
  );
  expect(response.statusCode).toBe(200);
  return JSON.parse(response.body ?? "") as RunBody;
}

/** The items of `tenantId` in the test's table whose sort key starts with `prefix`. */
async function itemsOf(tenantId: string, prefix: string): Promise<unknown[]> {
  const { Items = [] } = await stack.deps.ddb.send(
    new ScanCommand({
      TableName: stack.config.table.name,
      FilterExpression: "pk = :pk AND begins_with(sk, :prefix)",
      ExpressionAttributeValues: { ":pk": `TENANT#${tenantId}`, ":prefix": prefix },
    }),
  );
  return Items;
}

describe("a tool whose store stays throttled after the SDK's retries", () => {
  it("is a retryable fatal_error STORE_UNAVAILABLE with a fixed sentence (the SDK's error only in the logs); the planner tries once more, then answers; nothing is written", async () => {
    const throttle = throttleQuoteWrites(Number.POSITIVE_INFINITY);
    const logged = vi.spyOn(stack.deps.logger, "error");
    try {
      const body = await run(
        "tenant_store_down",
        "Calculate tax on 150 GBP for a client in the UK and record it.",
      );
      expect(body.status).toBe("completed");
      expect(body.cycles).toBe(3);
      expect(
        body.toolResults.map((r) => [r.metadata.toolName, r.status, r.error?.code, r.error?.retryable]),
      ).toEqual([
        ["calculateTax", "fatal_error", "STORE_UNAVAILABLE", true],
        ["calculateTax", "fatal_error", "STORE_UNAVAILABLE", true],
      ]);
      expect(body.toolResults[0]?.error?.message).toBe(
        "calculateTax could not reach the data store; it has no side effects. The same call can be made again.",
      );
      expect(body.toolResults[0]?.error?.details).toEqual({ mayHaveCommitted: false });
      // Neither the client nor the model provider got the SDK's text; the service's logger did.
      expect(JSON.stringify(body)).not.toContain("ThrottlingException");
      expect(JSON.stringify(stack.model.requests.slice(-3))).not.toContain("ThrottlingException");
      const internal = logged.mock.calls.filter(([message]) => message === "internal failure");
      expect(internal).toHaveLength(2);
      expect(internal[0]?.[1]).toEqual({
        source: "tool",
        name: "calculateTax",
        code: "STORE_UNAVAILABLE",
        detail: "ThrottlingException: Rate of requests exceeds the allowed throughput.",
      });
      expect(body.answer).toContain("calculateTax (UK): fatal_error STORE_UNAVAILABLE");
      // Two calls, each the SDK's 3 attempts.
      expect(throttle.stats.writeAttempts).toBe(6);
    } finally {
      throttle.stop();
      logged.mockRestore();
    }
    expect(await itemsOf("tenant_store_down", "QUOTE#")).toEqual([]);
    expect(await stack.deps.ledger.list("tenant_store_down")).toEqual([]);
  });

  it("when the store is back for the retry, the run records its one invoice", async () => {
    const throttle = throttleQuoteWrites(3);
    try {
      const body = await run(
        "tenant_store_back",
        "Calculate tax on 150 GBP for a client in the UK and record it.",
      );
      expect(body.status).toBe("completed");
      expect(body.cycles).toBe(4);
      expect(body.toolResults.map((r) => [r.metadata.toolName, r.status, r.error?.code ?? null])).toEqual([
        ["calculateTax", "fatal_error", "STORE_UNAVAILABLE"],
        ["calculateTax", "success", null],
        ["recordInvoice", "success", null],
      ]);
      expect(throttle.stats).toEqual({ writeAttempts: 4, injected: 3, byName: { ThrottlingException: 3 } });
    } finally {
      throttle.stop();
    }
    const invoices = await stack.deps.ledger.list("tenant_store_back");
    expect(invoices.map((i) => [i.subtotal.amount, i.taxAmount.amount, i.grossTotal.amount])).toEqual([
      ["150.00", "30.00", "180.00"],
    ]);
    expect(await itemsOf("tenant_store_back", "QUOTE#")).toHaveLength(1);
  });
});
