import * as z from "zod";
import type { VouchedFacts } from "../agent/tool.js";
import type { TaxAmounts } from "../money/money.js";

/**
 * The facts calculateTax and recordInvoice vouch for (docs/policies.md `context.facts`): the tax
 * computation's amounts in minor units (Cedar Longs), its currency and jurisdiction. For recordInvoice
 * they come from the stored quote, for calculateTax from the computation the call is about to store:
 * never from the model's text.
 */
export const TaxFacts = z
  .object({
    subtotalMinor: z.number().int(),
    taxMinor: z.number().int(),
    grossMinor: z.number().int(),
    currency: z.string(),
    jurisdiction: z.string(),
  })
  .strict();

/** What a computed or stored tax quote says, as facts and as the preview a person decides on. */
export function taxFactsOf(
  amounts: TaxAmounts & { currency: string; jurisdiction: string; rateVersion: string; quoteId?: string },
): VouchedFacts {
  return {
    facts: {
      subtotalMinor: amounts.subtotal.minorUnits,
      taxMinor: amounts.taxAmount.minorUnits,
      grossMinor: amounts.grossTotal.minorUnits,
      currency: amounts.currency,
      jurisdiction: amounts.jurisdiction,
    },
    preview: {
      ...(amounts.quoteId ? { quoteId: amounts.quoteId } : {}),
      jurisdiction: amounts.jurisdiction,
      rateVersion: amounts.rateVersion,
      subtotal: amounts.subtotal.amount,
      taxAmount: amounts.taxAmount.amount,
      grossTotal: amounts.grossTotal.amount,
      currency: amounts.currency,
    },
  };
}
