import * as z from "zod";
import { ToolBusinessError } from "../agent/tool.js";
import {
  computeTax,
  MAX_AMOUNT,
  MINOR_UNITS,
  MoneyInputError,
  minorUnitsOf,
  parseAmount,
  type RoundingRule,
  type TaxAmounts,
} from "../money/money.js";
import {
  findTaxRule,
  isCalendarDate,
  normalizeJurisdiction,
  SUPPORTED_JURISDICTIONS,
  TAX_RULES,
  type TaxRule,
} from "../money/tax-rules.js";

const DATE_SHAPE = /^\d{4}-\d{2}-\d{2}$/;

/**
 * calculateTax's input fields, validated before the tool runs:
 * - `amount`: the subtotal in major units (pounds, taka), a JSON number or decimal string, 0 to 1e12,
 *   with at most the currency's minor-unit decimals (checked by {@link refineAmount})
 * - `currency`: ISO 4217 code (case-insensitive)
 * - `jurisdiction`: ISO 3166-1 alpha-2 code (case-insensitive; "UK" is accepted for GB)
 * - `taxPointDate`: YYYY-MM-DD, or null (or absent) for today in the rule table's timezone
 */
export const taxInputFields = {
  amount: z
    .union([z.number(), z.string().max(40)], {
      error: "a finite JSON number or a decimal string of at most 40 characters",
    })
    .describe(
      'Subtotal before tax in major units, e.g. 1500 or "1500.00" for GBP 1,500. 0 to 1e12, with at most the currency\'s minor-unit decimals (GBP/EUR/BDT 2, JPY 0, BHD 3). Prefer a decimal string.',
    ),
  currency: z
    .string()
    .regex(/^[A-Za-z]{3}$/, "an ISO 4217 code such as GBP")
    .describe("ISO 4217 currency code, e.g. GBP. Must be the jurisdiction's own currency."),
  jurisdiction: z
    .string()
    .trim()
    .regex(/^[A-Za-z]{2}$/, 'an ISO 3166-1 alpha-2 code such as "GB"')
    .describe(
      `ISO 3166-1 alpha-2 code of the client's country; "UK" is accepted for GB. Supported: ${SUPPORTED_JURISDICTIONS.join(", ")}.`,
    ),
  taxPointDate: z
    .string()
    .regex(DATE_SHAPE, "a date YYYY-MM-DD")
    // Only a well-formed date can fail this; the regex reports the others (one issue per problem).
    .refine((date) => !DATE_SHAPE.test(date) || isCalendarDate(date), "a calendar date that exists")
    // null is declared, not only stripped: the JSON Schema a model and an MCP client see says it is accepted.
    .nullable()
    .optional()
    .describe(
      `Tax point (time of supply) as YYYY-MM-DD; it picks the rate version. null means today in ${TAX_RULES.timezone}.`,
    ),
};

/**
 * Adds a zod issue at `amount` (or `currency`) when the amount is not acceptable money for the currency:
 * the money error's message, and in `params` its `reason` and the `expected` format (the issue's
 * `expected`, shared/agent/zod-issues.ts).
 */
export function refineAmount(
  value: { amount: number | string; currency: string },
  ctx: z.RefinementCtx,
): void {
  const currency = value.currency.toUpperCase();
  try {
    parseAmount(value.amount, currency);
  } catch (error) {
    if (!(error instanceof MoneyInputError)) throw error;
    ctx.addIssue({
      code: "custom",
      path: error.reason === "UNKNOWN_CURRENCY" ? ["currency"] : ["amount"],
      message: error.message,
      params: { reason: error.reason, expected: expectedMoney(error.reason, currency) },
    });
  }
}

/** What an amount (or its currency) should have been, by the reason it was refused. */
function expectedMoney(reason: MoneyInputError["reason"], currency: string): string {
  switch (reason) {
    case "INVALID_NUMBER":
      return 'a decimal number, e.g. "1500.00"';
    case "PRECISION_LOST":
      return "a decimal string";
    case "NEGATIVE":
      return "number >= 0";
    case "TOO_LARGE":
      return `number <= ${MAX_AMOUNT}`;
    case "TOO_MANY_DECIMALS":
      return `at most ${minorUnitsOf(currency)} decimal places (${currency})`;
    case "UNKNOWN_CURRENCY":
      return `one of ${Object.keys(MINOR_UNITS).join(", ")}`;
  }
}

/**
 * One tax calculation, every number computed here from the rule table.
 * - `rateVersion`: the rule row's `version`; `rate` its decimal string ("0.20")
 * - `taxPointDate`: the date (YYYY-MM-DD) that picked the rule
 * - `rounding`, `roundingSource`, `ruleSource`: the rule's rounding and the texts it cites
 */
export interface TaxCalculation extends TaxAmounts {
  jurisdiction: string;
  rateVersion: string;
  rate: string;
  taxPointDate: string;
  currency: string;
  rounding: RoundingRule;
  roundingSource: string;
  ruleSource: string;
}

/**
 * Computes tax for an already schema-validated input.
 * @param taxPointDate YYYY-MM-DD (the caller resolves the default "today")
 * @throws ToolBusinessError UNSUPPORTED_JURISDICTION (message lists the supported codes),
 *   NO_RULE_IN_FORCE (supported, but no rate version covers the date), CURRENCY_MISMATCH (the currency
 *   is not one the rule accepts: today only the jurisdiction's own)
 */
export function calculateTaxAmounts(
  input: { amount: number | string; currency: string; jurisdiction: string },
  taxPointDate: string,
): TaxCalculation {
  const jurisdiction = normalizeJurisdiction(input.jurisdiction);
  if (!jurisdiction) {
    throw new ToolBusinessError(
      "UNSUPPORTED_JURISDICTION",
      `Jurisdiction "${input.jurisdiction}" is not supported. Supported jurisdictions: ${SUPPORTED_JURISDICTIONS.join(", ")}.`,
      { jurisdiction: input.jurisdiction, supported: SUPPORTED_JURISDICTIONS },
    );
  }
  const rule = findTaxRule(jurisdiction, taxPointDate);
  if (!rule) {
    const periods = TAX_RULES.rules
      .filter((r) => r.jurisdiction === jurisdiction)
      .map((r) => `${r.effectiveFrom} to ${r.effectiveTo ?? "open"}`);
    throw new ToolBusinessError(
      "NO_RULE_IN_FORCE",
      `No ${jurisdiction} tax rule is in force on ${taxPointDate}. Covered periods: ${periods.join(", ")}.`,
      { jurisdiction, taxPointDate },
    );
  }
  const currency = input.currency.toUpperCase();
  if (!rule.acceptedCurrencies.includes(currency)) {
    throw new ToolBusinessError(
      "CURRENCY_MISMATCH",
      `Invoices in ${jurisdiction} must be in ${rule.acceptedCurrencies.join(" or ")}, not ${currency}.`,
      { jurisdiction, expected: rule.acceptedCurrencies, received: currency },
    );
  }
  const amounts = computeTax(parseAmount(input.amount, currency), rule.rate, currency, rule.rounding);
  return {
    jurisdiction,
    rateVersion: rule.version,
    rate: rule.rate,
    taxPointDate,
    currency,
    ...amounts,
    rounding: rule.rounding,
    roundingSource: rule.roundingSource,
    ruleSource: rule.source,
  };
}

/** A rate as a percentage string: "0.20" → "20", "0.175" → "17.5" (string arithmetic, no floats). */
function percent(rate: string): string {
  const [, fraction = ""] = rate.split(".");
  const padded = fraction.padEnd(2, "0");
  const whole = padded.slice(0, 2).replace(/^0(?=\d)/, "");
  const rest = padded.slice(2).replace(/0+$/, "");
  return rest ? `${whole}.${rest}` : whole;
}

/**
 * One line per rule in force today (from the table, so descriptions never drift from it), e.g.
 * `GB: 20% in GBP (GB-VAT-STANDARD-2011-01-04); rounding: HMRC VAT Notice 700 section 17.5: …`.
 */
export function describeRulesInForce(today: string): string {
  return SUPPORTED_JURISDICTIONS.map((code) => findTaxRule(code, today))
    .filter((rule): rule is TaxRule => rule !== undefined)
    .map(
      (rule) =>
        `${rule.jurisdiction}: ${percent(rule.rate)}% in ${rule.acceptedCurrencies.join("/")} (${rule.version}); rounding: ${rule.roundingSource}.`,
    )
    .join(" ");
}
