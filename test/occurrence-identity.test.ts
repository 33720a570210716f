/**
 * Occurrences of a mutating tool call are counted once, on the identity its idempotency key is built from:
 * the tool name and the validated (zod-parsed) arguments, not the raw argument text. Real accounting
 * tools on DynamoDB Local, the real loop and openai client against the scripted model server.
 */
import type OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { LocalModelServer } from "../local/model-server.js";
import { dispatchToolCall } from "../shared/agent/dispatcher.js";
import { toolIdempotencyKey } from "../shared/agent/idempotency-key.js";
import { DEFAULT_CAPS, runScripted, startScriptedModel } from "./support/agent-harness.js";
import { startTestStack, type TestStack } from "./support/stack.js";

let stack: TestStack;
let scripted: { model: LocalModelServer; client: OpenAI; stop(): Promise<void> };
beforeAll(async () => {
  stack = await startTestStack();
  scripted = await startScriptedModel();
});
afterAll(async () => {
  await stack?.stop();
  await scripted?.stop();
});

const writer = { userId: "usr_occ", tenantId: "tenant_occ", permissions: ["billing:read", "billing:write"] };

describe("occurrence identity", () => {
  it("a same-turn pair differing only in what the schema normalizes is two operations, the same two on re-issue", async () => {
    const quote = await dispatchToolCall(
      {
        id: "q",
        name: "calculateTax",
        arguments: JSON.stringify({
          amount: "250.00",
          currency: "GBP",
          jurisdiction: "GB",
          taxPointDate: null,
        }),
      },
      stack.deps.tools,
      writer,
      { runId: "run_q", runScope: "run_q", occurrence: 0, signal: new AbortController().signal },
    );
    const quoteId = (quote.data as { quoteId: string }).quoteId;
    // Different raw text: key order, whitespace, a name zod trims, and nulls of optional fields sent or
    // left out. zod's output is the same for both: { clientName: "Acme Ltd", quoteId }.
    const plain = JSON.stringify({
      clientName: "Acme Ltd",
      quoteId,
      clientReference: null,
      description: null,
    });
    const messy = `{ "quoteId" : "${quoteId}",\n  "description": null,  "clientName": "  Acme Ltd " }`;
    const keyOf = (occurrence: number) =>
      toolIdempotencyKey({
        tenantId: writer.tenantId,
        userId: writer.userId,
        runScope: "run_test",
        toolName: "recordInvoice",
        args: { clientName: "Acme Ltd", quoteId },
        occurrence,
      });
    // One call at a time, in call order: with the turn's calls running concurrently, which of two
    // recordings of one quote wins the conditional write is a race, and this test is about the keys.
    const turn = (first: string, second: string) => ({
      tools: [...stack.deps.tools.values()],
      security: writer,
      caps: { ...DEFAULT_CAPS, maxConcurrentToolCalls: 1 },
      script: [
        {
          toolCalls: [
            { id: "r1", name: "recordInvoice", arguments: first },
            { id: "r2", name: "recordInvoice", arguments: second },
          ],
        },
        { content: "recorded" },
      ],
    });
    const invoiceOf = (data: unknown) => data as { invoice: { invoiceId: string }; replayed: boolean };
    // Two operations on one quote: the first records it, the second is refused (one quote, at most one
    // invoice) naming the first's invoice. Counted on the raw text instead, both calls would be occurrence
    // 0 under one key, and the second would replay the first as a success.
    const refusal = (result: (typeof first.outcome.toolResults)[number] | undefined) => ({
      status: result?.status,
      code: result?.error?.code,
      invoiceId: result?.error?.details.invoiceId,
    });

    const first = await runScripted(scripted, turn(plain, messy));
    expect(first.outcome.status).toBe("completed");
    expect(first.outcome.toolResults.map((r) => r.metadata.idempotencyKey)).toEqual([keyOf(0), keyOf(1)]);
    const created = invoiceOf(first.outcome.toolResults[0]?.data);
    expect(first.outcome.toolResults[0]?.status).toBe("success");
    expect(created.replayed).toBe(false);
    expect(refusal(first.outcome.toolResults[1])).toEqual({
      status: "business_error",
      code: "QUOTE_ALREADY_RECORDED",
      invoiceId: created.invoice.invoiceId,
    });

    // The same pair in a later run with the same run scope (runScripted's "run_test"): the same two keys,
    // so the first call replays its invoice, the second is refused again, and nothing new is written.
    const again = await runScripted(scripted, turn(messy, plain));
    expect(again.outcome.toolResults.map((r) => r.metadata.idempotencyKey)).toEqual([keyOf(0), keyOf(1)]);
    const replayed = invoiceOf(again.outcome.toolResults[0]?.data);
    expect(replayed.replayed).toBe(true);
    expect(replayed.invoice.invoiceId).toBe(created.invoice.invoiceId);
    expect(refusal(again.outcome.toolResults[1])).toEqual(refusal(first.outcome.toolResults[1]));
    expect(await stack.deps.ledger.list(writer.tenantId)).toHaveLength(1);
  });
});
