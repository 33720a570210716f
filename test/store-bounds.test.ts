/**
 * The stores' conditional writes are bounded (CONDITIONAL_WRITE_ATTEMPTS, shared/store/errors.ts): when
 * the item that failed a put's condition is gone by the time it is read, the put is tried again, at most
 * three times, then the store throws StoreContentionError, which the tool layer reports as a retryable
 * fatal_error STORE_UNAVAILABLE and the HTTP layer as 503 STORE_UNAVAILABLE.
 *
 * The race is real DynamoDB behaviour made repeatable: dynalite answers a failed condition without the
 * item (as DynamoDB does without ReturnValuesOnConditionCheckFailure), and the item was deleted (TTL, a
 * release) before the store's consistent read. A middleware in the SDK's deserialize step answers the
 * chosen puts with DynamoDB's own ConditionalCheckFailedException and no item; every read goes to
 * DynamoDB Local, where the item is absent. Real handler, real dispatcher, local model server.
 */
import { ConditionalCheckFailedException } from "@aws-sdk/client-dynamodb";
import { type DynamoDBDocumentClient, GetCommand } from "@aws-sdk/lib-dynamodb";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { toProblem } from "../functions/api/problem-details.js";
import { dispatchToolCall, type InternalFailure } from "../shared/agent/dispatcher.js";
import { CONDITIONAL_WRITE_ATTEMPTS, StoreContentionError } from "../shared/store/errors.js";
import { keys } from "../shared/store/keys.js";
import type { Quote } from "../shared/store/quotes.js";
import { tableKey } from "../shared/store/table.js";
import { header } from "./fixtures/events.js";
import { runEvent } from "./support/idempotency.js";
import { startTestStack, type TestStack } from "./support/stack.js";

let stack: TestStack;
beforeAll(async () => {
  stack = await startTestStack();
});
afterAll(async () => {
  await stack?.stop();
});

/**
 * Makes the next `limit` PutItem attempts whose marshalled input contains `marker` fail their condition
 * with no item returned; counts those puts and the GetItem reads that follow them.
 */
function vanishingConflicts(
  client: DynamoDBDocumentClient,
  marker: string,
  limit = Number.POSITIVE_INFINITY,
) {
  const seen = { puts: 0, failedPuts: 0, reads: 0 };
  const name = `vanishingConflicts_${marker}_${Math.random()}`;
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const command = String(context.commandName);
      const input = JSON.stringify((args as { input?: unknown }).input);
      if (!input.includes(marker)) return next(args);
      if (command === "GetItemCommand") seen.reads += 1;
      if (command !== "PutItemCommand") return next(args);
      seen.puts += 1;
      if (seen.failedPuts >= limit) return next(args);
      seen.failedPuts += 1;
      throw new ConditionalCheckFailedException({
        message: "The conditional request failed",
        $metadata: { httpStatusCode: 400, requestId: `vanished-${seen.failedPuts}`, attempts: 1 },
      });
    },
    { step: "deserialize", name },
  );
  return { seen, stop: () => client.middlewareStack.remove(name) };
}

const money = (amount: string, minorUnits: number) => ({ amount, minorUnits, currency: "GBP" });
const quoteOf = (tenantId: string, quoteId: string): Quote => ({
  quoteId,
  tenantId,
  jurisdiction: "GB",
  rateVersion: "GB-VAT-STANDARD-2011-01-04",
  rate: "0.20",
  taxPointDate: "2026-11-30",
  currency: "GBP",
  rounding: "HALF_UP_PER_INVOICE",
  subtotal: money("100.00", 10_000),
  taxAmount: money("20.00", 2_000),
  grossTotal: money("120.00", 12_000),
  runId: "run_bounds",
  createdBy: "usr_bounds",
  createdAt: new Date().toISOString(),
  expiresAt: new Date(Date.now() + 900_000).toISOString(),
});

async function storedQuote(tenantId: string, quoteId: string) {
  const { Item } = await stack.deps.ddb.send(
    new GetCommand({
      TableName: stack.config.table.name,
      Key: tableKey(tenantId, keys.quote(quoteId)),
      ConsistentRead: true,
    }),
  );
  return Item;
}

describe("QuoteStore.createOrGet under a conflict that vanishes before the read", () => {
  it("tries three times, then throws StoreContentionError and writes nothing", async () => {
    const quoteId = "qt_00000000000000000000000000000001";
    const conflicts = vanishingConflicts(stack.deps.ddb, keys.quote(quoteId));
    try {
      const attempt = stack.deps.quotes.createOrGet(quoteOf("tenant_bounds", quoteId), Date.now());
      await expect(attempt).rejects.toBeInstanceOf(StoreContentionError);
      await expect(attempt).rejects.toMatchObject({ code: "STORE_CONTENTION", attempts: 3 });
    } finally {
      conflicts.stop();
    }
    expect(CONDITIONAL_WRITE_ATTEMPTS).toBe(3);
    expect(conflicts.seen).toEqual({ puts: 3, failedPuts: 3, reads: 3 });
    expect(await storedQuote("tenant_bounds", quoteId)).toBeUndefined();
  });

  it("stores the quote when the third attempt finds the way clear", async () => {
    const quoteId = "qt_00000000000000000000000000000002";
    const quote = quoteOf("tenant_bounds", quoteId);
    const conflicts = vanishingConflicts(stack.deps.ddb, keys.quote(quoteId), 2);
    try {
      expect(await stack.deps.quotes.createOrGet(quote, Date.now())).toEqual(quote);
    } finally {
      conflicts.stop();
    }
    expect(conflicts.seen).toEqual({ puts: 3, failedPuts: 2, reads: 2 });
    expect(await storedQuote("tenant_bounds", quoteId)).toMatchObject({ quoteId, tenantId: "tenant_bounds" });
  });

  it("reaches the model as a retryable fatal_error STORE_UNAVAILABLE from calculateTax", async () => {
    const conflicts = vanishingConflicts(stack.deps.ddb, keys.quote(""));
    const failures: InternalFailure[] = [];
    let result: Awaited<ReturnType<typeof dispatchToolCall>>;
    try {
      result = await dispatchToolCall(
        {
          id: "call_1",
          name: "calculateTax",
          arguments: JSON.stringify({
            amount: "100",
            currency: "GBP",
            jurisdiction: "GB",
            taxPointDate: null,
          }),
        },
        stack.deps.tools,
        { userId: "usr_bounds", tenantId: "tenant_bounds_tool", permissions: [] },
        {
          runId: "run_bounds",
          runScope: "run_bounds",
          occurrence: 0,
          signal: new AbortController().signal,
          onInternalFailure: (failure) => void failures.push(failure),
        },
      );
    } finally {
      conflicts.stop();
    }
    expect(conflicts.seen.failedPuts).toBe(3);
    expect(result.status).toBe("fatal_error");
    expect(result.error).toMatchObject({ code: "STORE_UNAVAILABLE", retryable: true });
    expect(result.error?.message).toBe(
      "calculateTax could not reach the data store; it has no side effects. The same call can be made again.",
    );
    expect(failures).toEqual([
      {
        source: "tool",
        name: "calculateTax",
        code: "STORE_UNAVAILABLE",
        detail: expect.stringMatching(
          /^StoreContentionError: Quote qt_[0-9a-f]{32} kept changing during 3 conditional write attempts; nothing was written\.$/,
        ),
      },
    ]);
  });
});

describe("IdempotencyStore.acquire under a conflict that vanishes before the read", () => {
  it("POST /v1/runs answers 503 STORE_UNAVAILABLE after three attempts; no model call is made", async () => {
    const conflicts = vanishingConflicts(stack.deps.ddb, keys.idempotencyPrefix);
    const calls = stack.model.requests.length;
    let response: Awaited<ReturnType<TestStack["invoke"]>>;
    try {
      response = await stack.invoke(runEvent({ key: "bounds-key-1", tenantId: "tenant_bounds_http" }));
    } finally {
      conflicts.stop();
    }
    expect(conflicts.seen).toEqual({ puts: 3, failedPuts: 3, reads: 3 });
    expect(response.statusCode).toBe(503);
    expect(header(response, "content-type")).toBe("application/problem+json");
    expect(JSON.parse(response.body ?? "")).toMatchObject({ code: "STORE_UNAVAILABLE", status: 503 });
    expect(stack.model.requests.length).toBe(calls);
    // The error itself, wherever it surfaces, maps to 503 STORE_UNAVAILABLE with Retry-After.
    const problem = toProblem(new StoreContentionError("A lease record", 3));
    expect([problem.status, problem.body.code, problem.headers]).toEqual([
      503,
      "STORE_UNAVAILABLE",
      { "retry-after": "1" },
    ]);
  });
});
