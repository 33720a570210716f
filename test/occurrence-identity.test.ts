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
import { runScripted, startScriptedModel } from "./support/agent-harness.js";
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
        runScope: "run_test",
        toolName: "recordInvoice",
        args: { clientName: "Acme Ltd", quoteId },
        occurrence,
      });
    const turn = (first: string, second: string) => ({
      tools: [...stack.deps.tools.values()],
      security: writer,
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

    const first = await runScripted(scripted, turn(plain, messy));
    expect(first.outcome.status).toBe("completed");
    expect(first.outcome.toolResults.map((r) => r.status)).toEqual(["success", "success"]);
    expect(first.outcome.toolResults.map((r) => r.metadata.idempotencyKey)).toEqual([keyOf(0), keyOf(1)]);
    const created = first.outcome.toolResults.map((r) => invoiceOf(r.data));
    expect(created.map((d) => d.replayed)).toEqual([false, false]);
    expect(new Set(created.map((d) => d.invoice.invoiceId)).size).toBe(2);

    // The same pair in a later run with the same run scope (runScripted's "run_test"): the same two keys,
    // so both calls replay their invoices and nothing new is written.
    const again = await runScripted(scripted, turn(messy, plain));
    expect(again.outcome.toolResults.map((r) => r.metadata.idempotencyKey)).toEqual([keyOf(0), keyOf(1)]);
    const replayed = again.outcome.toolResults.map((r) => invoiceOf(r.data));
    expect(replayed.map((d) => d.replayed)).toEqual([true, true]);
    expect(replayed.map((d) => d.invoice.invoiceId)).toEqual(created.map((d) => d.invoice.invoiceId));
    expect(await stack.deps.ledger.list(writer.tenantId)).toHaveLength(2);
  });
});
