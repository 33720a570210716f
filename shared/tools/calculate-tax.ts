import { z } from "zod";
import { defineTool } from "../agent/tool.js";
import { moneyFields, quoteTax, refineAmount } from "./tax-quote.js";

/** calculateTax's input: subtotal, currency and jurisdiction; extra properties are rejected. */
export const CalculateTaxInput = z.object(moneyFields).strict().superRefine(refineAmount);

/**
 * calculateTax: read-only, no permission needed. Returns the jurisdiction's rate and the exact tax
 * amount and gross total (decimal strings plus minor units), rounded half up to the minor unit per
 * invoice (HMRC VAT Notice 700 section 17.5 for GB).
 */
export const calculateTaxTool = defineTool({
  name: "calculateTax",
  description:
    "Calculate VAT for one invoice subtotal. Returns rate, taxAmount and grossTotal as exact decimal strings " +
    "with minor units. Tax is rounded to the nearest minor unit (half up), once per invoice. An unsupported " +
    "jurisdiction is an error, never a default rate.",
  inputSchema: CalculateTaxInput,
  isMutating: false,
  requiredPermission: undefined,
  handler: async (input) => quoteTax(input),
});
