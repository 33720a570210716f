/**
 * One quote, at most one invoice, across the runs of a conversation: the real Lambda handler over real
 * deps, DynamoDB Local, and the local model server through the real openai client.
 */
import { randomUUID } from "node:crypto";
import { describe, expect, it } from "vitest";
import { checkGrounding } from "../shared/agent/grounding.js";
import type { ChatMessage } from "../shared/agent/model.js";
import type { HistoryMessage } from "../shared/agent/transcript.js";
import { QuoteAlreadyRecordedError } from "../shared/store/ledger.js";
import { invoiceOf, newCaller, post, quoteIdOf, run, summary } from "./support/conversation.js";
import { testStackForFile } from "./support/stack.js";

const stack = testStackForFile({}, { planner: true });

describe("one quote, at most one invoice, across runs", () => {
  it("recording an already-recorded quote in a later run is QUOTE_ALREADY_RECORDED naming the invoice", async () => {
    const caller = newCaller();
    const first = run(
      await post(stack, caller, {
        prompt: "Calculate tax on 200 BDT for a client in Bangladesh and record it.",
      }),
    );
    expect(summary(first.toolResults)).toEqual(["calculateTax:success", "recordInvoice:success"]);
    const invoice = invoiceOf(first.toolResults[1]);
    const again = run(await post(stack, caller, { prompt: "Record it again.", previousRunId: first.runId }));
    expect(summary(again.toolResults)).toEqual(["recordInvoice:business_error:QUOTE_ALREADY_RECORDED"]);
    const error = again.toolResults[0]?.error;
    expect(error?.details).toMatchObject({ invoiceId: invoice.invoiceId, quoteId: invoice.quoteId });
    expect(error?.message).toContain(invoice.invoiceId);
    expect(await stack.deps.ledger.list(caller.tenantId)).toHaveLength(1);
  });

  it("five runs continuing one conversation race to record its quote: exactly one invoice", async () => {
    const caller = newCaller();
    const first = run(
      await post(stack, caller, { prompt: "Calculate tax on 1500 GBP for a client in the UK." }),
    );
    const racers = await Promise.all(
      Array.from({ length: 5 }, () =>
        post(stack, caller, { prompt: "Now record it.", previousRunId: first.runId }),
      ),
    );
    const outcomes = racers.map((response) => summary(run(response).toolResults)[0]).sort();
    expect(outcomes).toEqual([
      ...Array<string>(4).fill("recordInvoice:business_error:QUOTE_ALREADY_RECORDED"),
      "recordInvoice:success",
    ]);
    expect(await stack.deps.ledger.list(caller.tenantId)).toHaveLength(1);
  });

  it("LedgerStore.recordOnce: of eight concurrent recordings of one quote under different keys, one writes", async () => {
    const caller = newCaller();
    const { deps } = stack;
    const quote = run(
      await post(stack, caller, { prompt: "Calculate tax on 99 GBP for a client in the UK." }),
    );
    const found = await deps.quotes.lookup(
      caller.tenantId,
      String(quoteIdOf(quote.toolResults[0])),
      Date.now(),
    );
    if (found.kind !== "live") throw new Error("quote not live");
    const q = found.quote;
    const invoice = (n: number) => ({
      tenantId: caller.tenantId,
      clientName: `Client ${n}`,
      clientReference: null,
      description: null,
      quoteId: q.quoteId,
      jurisdiction: q.jurisdiction,
      currency: q.currency,
      rateVersion: q.rateVersion,
      rate: q.rate,
      taxPointDate: q.taxPointDate,
      subtotal: q.subtotal,
      taxAmount: q.taxAmount,
      grossTotal: q.grossTotal,
      runId: `run_race_${n}`,
      createdBy: caller.userId,
    });
    const settled = await Promise.allSettled(
      Array.from({ length: 8 }, (_, n) => deps.ledger.recordOnce(invoice(n), `tk_race_${n}`)),
    );
    const won = settled.filter((s) => s.status === "fulfilled");
    const lost = settled.flatMap((s) => (s.status === "rejected" ? [s.reason as unknown] : []));
    expect(won).toHaveLength(1);
    expect(lost).toHaveLength(7);
    const winner = (
      won[0] as PromiseFulfilledResult<{ invoice: { invoiceId: string; idempotencyKey: string } }>
    ).value.invoice;
    for (const error of lost) {
      expect(error).toBeInstanceOf(QuoteAlreadyRecordedError);
      expect((error as QuoteAlreadyRecordedError).invoice.invoiceId).toBe(winner.invoiceId);
    }
    // The winner's own retry still replays its invoice.
    const winnerKey = winner.idempotencyKey;
    const n = Number(winnerKey.replace("tk_race_", ""));
    const replay = await deps.ledger.recordOnce(invoice(n), winnerKey);
    expect(replay).toMatchObject({ created: false, invoice: { invoiceId: winner.invoiceId } });
    expect(await deps.ledger.list(caller.tenantId)).toHaveLength(1);
  });

  it("a transcript stored with whole tool-result envelopes still continues: its quote is recorded, its metadata grounds nothing", async () => {
    const caller = newCaller();
    const prompt = "Calculate tax on 1500 GBP for a client in the UK.";
    const before = stack.model.requests.length;
    const first = run(await post(stack, caller, { prompt }));
    const tax = first.toolResults[0];
    if (!tax) throw new Error("no calculateTax result");
    // Tool messages of this form (the envelope, metadata and all) are in transcripts stored before the
    // model read only { status, data, error }: a run continuing one reads them as they are.
    const envelope = JSON.stringify({ ...tax, metadata: { ...tax.metadata, latencyMs: 4321 } });
    const runId = `run_${randomUUID()}`;
    const now = new Date();
    const limits = { maxCycles: 5, timeoutMs: 1_000 };
    await stack.deps.runs.start(
      { tenantId: caller.tenantId, runId, userId: caller.userId, prompt, limits },
      now,
    );
    const usage = { promptTokens: 1, completionTokens: 1, totalTokens: 2 };
    // The first run's own transcript (its last model request without the system prompt), its tool
    // message replaced by the envelope.
    const asked = (stack.model.requests.at(-1)?.messages ?? []).slice(1) as unknown as HistoryMessage[];
    expect(stack.model.requests.length - before).toBe(2);
    expect(asked.map((m) => m.role)).toEqual(["user", "assistant", "tool"]);
    const transcript: HistoryMessage[] = [
      ...asked.map((m) => (m.role === "tool" ? { ...m, content: envelope } : m)),
      { role: "assistant", content: first.answer },
    ];
    const ended = { status: "completed" as const, cycles: 2, answer: first.answer, reason: null, usage };
    await stack.deps.runs.finish(caller.tenantId, runId, { ...ended, durationMs: 5, transcript }, now);

    const from = stack.model.requests.length;
    const second = run(await post(stack, caller, { prompt: "Now record it.", previousRunId: runId }));
    expect(summary(second.toolResults)).toEqual(["recordInvoice:success"]);
    expect(invoiceOf(second.toolResults[0]).quoteId).toBe(quoteIdOf(tax));
    expect(second.grounding).toMatchObject({ action: "none", ungrounded: [] });
    const sent = stack.model.requests[from]?.messages as unknown as ChatMessage[];
    expect(sent.find((m) => m.role === "tool")?.content).toBe(envelope);
    expect(checkGrounding("It took 4321 ms; the tax is 300.00.", sent).ungrounded).toEqual([
      { text: "4321", value: "4321" },
    ]);
  });
});
