import { z } from "zod";
import { ToolBusinessError } from "../agent/tool.js";
import { computeTax, MoneyInputError, type MoneyValue, parseAmount } from "../money/money.js";
import { findTaxRule, normalizeJurisdiction, SUPPORTED_JURISDICTIONS } from "../money/tax-rules.js";

/**
 * The money fields shared by calculateTax and recordInvoice, validated before any tool runs:
 * `amount` is a JSON number or decimal string (the subtotal, in major units such as pounds),
 * `currency` an ISO 4217 code, `jurisdiction` an ISO 3166-1 alpha-2 code ("UK" is an alias of GB).
 */
export const moneyFields = {
  amount: z
    .union([z.number(), z.string().max(40)])
    .describe(
      'Subtotal before tax in major units (e.g. 1500 or "1500.00" for £1,500). At most the currency\'s minor-unit decimals, 0 to 1e12.',
    ),
  currency: z
    .string()
    .regex(/^[A-Za-z]{3}$/, "an ISO 4217 code such as GBP")
    .describe("ISO 4217 currency code, e.g. GBP. Must be the jurisdiction's currency."),
  jurisdiction: z
    .string()
    .min(2)
    .max(64)
    .describe(
      `ISO 3166-1 alpha-2 code of the client's country; "UK" is accepted for GB. Supported: ${SUPPORTED_JURISDICTIONS.join(", ")}.`,
    ),
};

/** Adds a zod issue at `amount` when the amount is not acceptable money for the currency. */
export function refineAmount(
  value: { amount: number | string; currency: string },
  ctx: z.RefinementCtx,
): void {
  try {
    parseAmount(value.amount, value.currency.toUpperCase());
  } catch (error) {
    if (!(error instanceof MoneyInputError)) throw error;
    ctx.addIssue({
      code: "custom",
      path: error.reason === "UNKNOWN_CURRENCY" ? ["currency"] : ["amount"],
      message: error.message,
      params: { reason: error.reason },
    });
  }
}

/**
 * A tax calculation, every number computed here from the rule table.
 * `rate` is the decimal string from the table (e.g. "0.20"); `ruleSource` names the statute.
 */
export interface TaxQuote {
  jurisdiction: string;
  rate: string;
  currency: string;
  subtotal: MoneyValue;
  taxAmount: MoneyValue;
  grossTotal: MoneyValue;
  rounding: string;
  ruleSource: string;
}

/**
 * Computes tax for an already schema-validated input.
 * @throws ToolBusinessError UNSUPPORTED_JURISDICTION (message lists the supported codes),
 *   NO_RULE_IN_FORCE, CURRENCY_MISMATCH (the currency must be the jurisdiction's own, per the table)
 */
export function quoteTax(input: {
  amount: number | string;
  currency: string;
  jurisdiction: string;
}): TaxQuote {
  const jurisdiction = normalizeJurisdiction(input.jurisdiction);
  if (!jurisdiction) {
    throw new ToolBusinessError(
      "UNSUPPORTED_JURISDICTION",
      `Jurisdiction "${input.jurisdiction}" is not supported. Supported jurisdictions: ${SUPPORTED_JURISDICTIONS.join(", ")}.`,
      { jurisdiction: input.jurisdiction, supported: SUPPORTED_JURISDICTIONS },
    );
  }
  const rule = findTaxRule(jurisdiction);
  if (!rule) {
    throw new ToolBusinessError("NO_RULE_IN_FORCE", `No tax rule for ${jurisdiction} is in force today.`, {
      jurisdiction,
    });
  }
  const currency = input.currency.toUpperCase();
  if (currency !== rule.currency) {
    throw new ToolBusinessError(
      "CURRENCY_MISMATCH",
      `Invoices in ${jurisdiction} must be in ${rule.currency}, not ${currency}.`,
      { jurisdiction, expected: rule.currency, received: currency },
    );
  }
  const amounts = computeTax(parseAmount(input.amount, currency), rule.rate, currency, rule.rounding);
  return {
    jurisdiction,
    rate: rule.rate,
    currency,
    ...amounts,
    rounding: rule.rounding,
    ruleSource: rule.source,
  };
}
