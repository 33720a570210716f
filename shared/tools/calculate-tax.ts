import * as z from "zod";
import { defineTool, ToolBusinessError, type ToolDefinition } from "../agent/tool.js";
import { TAX_RULES, todayInTableTimezone } from "../money/tax-rules.js";
import { newQuoteId, type Quote, type QuoteStore, quoteIdFor } from "../store/quotes.js";
import { CalculateTaxOutput } from "./output-schemas.js";
import { TaxFacts, taxFactsOf } from "./tax-facts.js";
import { calculateTaxAmounts, describeRulesInForce, refineAmount, taxInputFields } from "./tax-quote.js";

/** calculateTax's input: amount, currency, jurisdiction, taxPointDate; extra properties are rejected. */
export const CalculateTaxInput = z.object(taxInputFields).strict().superRefine(refineAmount);

/**
 * What calculateTax needs.
 * - `quotes`: where quotes are stored
 * - `quoteTtlSeconds`: how long a quote can be recorded (config QUOTE_TTL_SECONDS)
 * - `clock`: current time (defaults to the system clock); decides "today" and the quote's expiry
 */
export interface CalculateTaxDeps {
  quotes: QuoteStore;
  quoteTtlSeconds: number;
  clock?: () => Date;
}

/**
 * The data calculateTax returns: the calculation (see `TaxCalculation`) plus the stored quote's
 * `quoteId` and `expiresAt` (ISO 8601 UTC).
 */
export type CalculateTaxResult = Omit<Quote, "tenantId" | "runId" | "createdBy" | "createdAt"> & {
  roundingSource: string;
  ruleSource: string;
};

/**
 * calculateTax: no permission needed. Computes tax from the rule table, stores it as a quote for the
 * caller's tenant (TTL `quoteTtlSeconds`) and returns it. It writes only that short-lived quote, never
 * the ledger, so it is not a mutating tool: calling it again just mints another quote.
 * @throws (as tool results) the business errors of `calculateTaxAmounts`
 */
export function calculateTaxTool(deps: CalculateTaxDeps): ToolDefinition<typeof CalculateTaxInput> {
  const clock = deps.clock ?? (() => new Date());
  const minutes = Math.round(deps.quoteTtlSeconds / 60);
  return defineTool({
    name: "calculateTax",
    description:
      "Calculate VAT for one invoice subtotal and store the result as a quote. Returns quoteId (pass it to " +
      `recordInvoice; valid ${minutes} minutes), expiresAt, rate, rateVersion, and subtotal, taxAmount and ` +
      "grossTotal, each as an exact decimal string (amount) plus integer minor units (minorUnits). The currency " +
      "must be the jurisdiction's own. taxPointDate picks the rate version (null: today in " +
      `${TAX_RULES.timezone}). Tax is rounded once per invoice to the nearest minor unit, half up. Rules in ` +
      `force: ${describeRulesInForce(todayInTableTimezone(clock()))} Any other jurisdiction is an ` +
      "UNSUPPORTED_JURISDICTION error, never a default rate.",
    inputSchema: CalculateTaxInput,
    isMutating: false,
    hints: { readOnly: false, destructive: false, idempotent: true },
    outputSchema: CalculateTaxOutput,
    requiredPermission: undefined,
    // The amounts the call is about to compute and store, computed here the same way (docs/policies.md);
    // an input the rule table refuses has none: the call then fails with that business error.
    facts: {
      schema: TaxFacts,
      read: async (input) => {
        try {
          return taxFactsOf(calculateTaxAmounts(input, input.taxPointDate ?? todayInTableTimezone(clock())));
        } catch (error) {
          if (error instanceof ToolBusinessError) return null;
          throw error;
        }
      },
    },
    handler: async (input, security, context): Promise<CalculateTaxResult> => {
      const now = clock();
      const calculation = calculateTaxAmounts(input, input.taxPointDate ?? todayInTableTimezone(now));
      const { roundingSource, ruleSource, ...stored } = calculation;
      const quote: Quote = {
        ...stored,
        // The same operation (a retried request) gets the same quote id; see quoteIdFor.
        quoteId: context.operationKey ? quoteIdFor(context.operationKey) : newQuoteId(),
        tenantId: security.tenantId,
        runId: context.runId,
        createdBy: security.userId,
        createdAt: now.toISOString(),
        expiresAt: new Date(now.getTime() + deps.quoteTtlSeconds * 1000).toISOString(),
      };
      const saved = await deps.quotes.createOrGet(quote, now.getTime(), context.signal);
      const { tenantId: _t, runId: _r, createdBy: _c, createdAt: _a, ...visible } = saved;
      return { ...visible, roundingSource, ruleSource };
    },
  });
}
