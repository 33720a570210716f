import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { dispatchToolCall } from "../shared/agent/dispatcher.js";
import { invoiceIdForQuote, LedgerStore } from "../shared/store/ledger.js";
import { recordInvoiceTool } from "../shared/tools/record-invoice.js";
import { countRequests } from "./support/idempotency.js";
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

describe("recordInvoice's one read of its quote under policies", () => {
  /** A quote of `writer` and a recordInvoice tool whose clock the test moves (epoch ms). */
  async function setUp() {
    let nowMs = Date.now();
    const tool = recordInvoiceTool({
      ledger: stack.deps.ledger,
      quotes: stack.deps.quotes,
      clock: () => new Date(nowMs),
    });
    const signal = new AbortController().signal;
    const quote = await dispatchToolCall(
      {
        id: "call_q",
        name: "calculateTax",
        arguments: JSON.stringify({
          amount: "50.00",
          currency: "GBP",
          jurisdiction: "GB",
          taxPointDate: null,
        }),
      },
      stack.deps.tools,
      writer,
      { runId: `run_${nowMs}`, runScope: `run_${nowMs}`, occurrence: 0, signal },
    );
    const { quoteId, expiresAt } = quote.data as { quoteId: string; expiresAt: string };
    const input = { clientName: "Acme Ltd", quoteId };
    const facts = tool.facts as NonNullable<typeof tool.facts>;
    const context = {
      runId: "run_reads",
      idempotencyKey: `op_${quoteId}`,
      operationKey: `op_${quoteId}`,
      signal,
    };
    return { tool, facts, input, context, signal, expiresAt, move: (to: number) => (nowMs = to) };
  }

  it("the handler uses the facts' read of the same call: one GetItem for both", async () => {
    const { tool, facts, input, context, signal } = await setUp();
    const counter = countRequests(stack.deps.ddb);
    try {
      expect(await facts.read(input, writer, { signal })).toMatchObject({
        facts: { currency: "GBP", grossMinor: 6_000 },
      });
      const recorded = (await tool.handler(input, writer, context)) as {
        invoice: { grossTotal: { amount: string } };
      };
      expect(recorded.invoice.grossTotal.amount).toBe("60.00");
      expect(counter.log).toEqual(["GetItem", "PutItem"]);
    } finally {
      counter.stop();
    }
  });

  it("a quote that expired between the facts' read and the handler is QUOTE_EXPIRED, nothing written", async () => {
    const { tool, facts, input, context, signal, expiresAt, move } = await setUp();
    expect(await facts.read(input, writer, { signal })).not.toBeNull();
    move(Date.parse(expiresAt));
    await expect(tool.handler(input, writer, context)).rejects.toMatchObject({ code: "QUOTE_EXPIRED" });
    expect(await stack.deps.ledger.get(writer.tenantId, invoiceIdForQuote(input.quoteId))).toBeUndefined();
  });

  it("a quote another operation recorded is settled (nobody is asked; the tool answers QUOTE_ALREADY_RECORDED); the recording operation's retry is not", async () => {
    const { tool, facts, input, context, signal } = await setUp();
    const settled = facts.settled as NonNullable<typeof facts.settled>;
    const first = { signal, operationKey: () => context.operationKey };
    const other = { signal, operationKey: () => "op_other" };
    expect(await settled(input, writer, other)).toBe(false);
    await tool.handler(input, writer, context);
    expect(await facts.read(input, writer, other)).toMatchObject({ facts: { grossMinor: 6_000 } });
    expect(await settled(input, writer, first)).toBe(false);
    expect(await settled(input, writer, other)).toBe(true);
    expect(await settled(input, writer, { signal })).toBe(false);
    await expect(
      tool.handler(input, writer, { ...context, idempotencyKey: "op_other", operationKey: "op_other" }),
    ).rejects.toMatchObject({ code: "QUOTE_ALREADY_RECORDED" });
  });

  it("when the ledger cannot be read, the call is not settled (fail closed: an approval policy still asks)", async () => {
    const { input, context, signal } = await setUp();
    await recordInvoiceTool({ ledger: stack.deps.ledger, quotes: stack.deps.quotes }).handler(
      input,
      writer,
      context,
    );
    // A real read that fails: DynamoDB Local answers ResourceNotFoundException for a table that is not there.
    const unreadable = recordInvoiceTool({
      ledger: new LedgerStore(stack.deps.ddb, "no_such_table"),
      quotes: stack.deps.quotes,
    });
    const settled = unreadable.facts?.settled as NonNullable<NonNullable<typeof unreadable.facts>["settled"]>;
    expect(await settled(input, writer, { signal, operationKey: () => "op_other" })).toBe(false);
  });
});
