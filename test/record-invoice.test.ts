import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { dispatchToolCall } from "../shared/agent/dispatcher.js";
import { startTestStack, type TestStack } from "./support/stack.js";

let stack: TestStack;
beforeAll(async () => {
  stack = await startTestStack();
});
afterAll(async () => {
  await stack?.stop();
});

const writer = { userId: "usr_1", tenantId: "tenant_idem", permissions: ["billing:write"] };

describe("recordInvoice idempotency", () => {
  it("a second call with the same idempotency key returns the first invoice and writes nothing", async () => {
    const context = {
      runId: "run_a",
      runScope: "run_a",
      occurrence: 0,
      signal: new AbortController().signal,
    };
    const quote = await dispatchToolCall(
      {
        id: "call_0",
        name: "calculateTax",
        arguments: JSON.stringify({
          amount: "99.99",
          currency: "GBP",
          jurisdiction: "GB",
          taxPointDate: null,
        }),
      },
      stack.deps.tools,
      writer,
      context,
    );
    const call = {
      id: "call_1",
      name: "recordInvoice",
      arguments: JSON.stringify({
        clientName: "Acme Ltd",
        quoteId: (quote.data as { quoteId: string }).quoteId,
        clientReference: null,
        description: null,
      }),
    };
    const first = await dispatchToolCall(call, stack.deps.tools, writer, context);
    // A re-issue in a later cycle gets a new tool_call id but the same operation key.
    const second = await dispatchToolCall({ ...call, id: "call_9" }, stack.deps.tools, writer, context);
    expect(first.status).toBe("success");
    expect(second.status).toBe("success");
    expect(second.metadata.idempotencyKey).toBe(first.metadata.idempotencyKey);
    const a = first.data as {
      invoice: { invoiceId: string; taxAmount: { amount: string } };
      replayed: boolean;
    };
    const b = second.data as typeof a;
    expect(a.replayed).toBe(false);
    expect(b.replayed).toBe(true);
    expect(b.invoice.invoiceId).toBe(a.invoice.invoiceId);
    expect(a.invoice.taxAmount.amount).toBe("20.00");
    expect(await stack.deps.ledger.list("tenant_idem")).toHaveLength(1);

    // Two identical calls in one turn are two operations (occurrence 1): the second would record the
    // same quote again, which is refused naming the first invoice (one quote, at most one invoice).
    const third = await dispatchToolCall(call, stack.deps.tools, writer, { ...context, occurrence: 1 });
    expect(third.metadata.idempotencyKey).not.toBe(first.metadata.idempotencyKey);
    expect(third.status).toBe("business_error");
    expect(third.error?.code).toBe("QUOTE_ALREADY_RECORDED");
    expect(third.error?.details).toMatchObject({ invoiceId: a.invoice.invoiceId });
    expect(third.error?.message).toContain(a.invoice.invoiceId);
    expect(await stack.deps.ledger.list("tenant_idem")).toHaveLength(1);
  });
});
