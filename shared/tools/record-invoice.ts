import { z } from "zod";
import { defineTool, type ToolDefinition } from "../agent/tool.js";
import type { LedgerStore } from "../store/ledger.js";
import { moneyFields, quoteTax, refineAmount } from "./tax-quote.js";

/** recordInvoice's input; the backend recomputes every amount, the model supplies no tax or total. */
export const RecordInvoiceInput = z
  .object({
    clientName: z
      .string()
      .trim()
      .min(1)
      .max(200)
      .describe("The client's name as the user gave it (1-200 chars)."),
    ...moneyFields,
  })
  .strict()
  .superRefine(refineAmount);

/**
 * recordInvoice: mutating, needs `billing:write`. Recomputes tax from the rule table and writes the
 * invoice once per idempotency key (a second call with the same key returns the first invoice and
 * writes nothing).
 * @throws (as tool results) the business errors of `quoteTax`
 */
export function recordInvoiceTool(ledger: LedgerStore): ToolDefinition<typeof RecordInvoiceInput> {
  return defineTool({
    name: "recordInvoice",
    description:
      "Record an invoice in the ledger for a client. Call only after calculateTax succeeded for the same " +
      "amount, currency and jurisdiction; the backend recomputes the tax. Safe to retry: the same request " +
      "records once. Needs the billing:write permission.",
    inputSchema: RecordInvoiceInput,
    isMutating: true,
    requiredPermission: "billing:write",
    handler: async (input, security, context) => {
      const quote = quoteTax(input);
      if (!context.idempotencyKey) throw new Error("recordInvoice needs an idempotency key.");
      const { invoice, created } = await ledger.recordOnce(
        {
          tenantId: security.tenantId,
          clientName: input.clientName,
          jurisdiction: quote.jurisdiction,
          currency: quote.currency,
          rate: quote.rate,
          subtotal: quote.subtotal,
          taxAmount: quote.taxAmount,
          grossTotal: quote.grossTotal,
          runId: context.runId,
          createdBy: security.userId,
        },
        context.idempotencyKey,
        context.signal,
      );
      return { invoice, replayed: !created };
    },
  });
}
