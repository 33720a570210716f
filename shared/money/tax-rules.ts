import { z } from "zod";
import { MINOR_UNITS } from "./money.js";
import table from "./tax-rules.json" with { type: "json" };

const IsoDate = z.string().regex(/^\d{4}-\d{2}-\d{2}$/, "expected YYYY-MM-DD");

/** One row of the tax rule table: a rate for a jurisdiction over a period, with its legal source. */
const TaxRuleSchema = z
  .object({
    jurisdiction: z.string().regex(/^[A-Z]{2}$/, "ISO 3166-1 alpha-2"),
    name: z.string().min(1),
    rate: z.string().regex(/^0\.\d{1,6}$/, "a decimal string below 1, e.g. 0.20"),
    currency: z.string().refine((code) => code in MINOR_UNITS, "a currency listed in MINOR_UNITS"),
    effectiveFrom: IsoDate,
    effectiveTo: IsoDate.nullable(),
    rounding: z.literal("HALF_UP_PER_INVOICE"),
    source: z.string().min(10),
  })
  .strict();

const TaxRuleTableSchema = z
  .object({
    timezone: z.string().min(1),
    rules: z.array(TaxRuleSchema).min(1),
    aliases: z.record(z.string().regex(/^[A-Z]{2}$/), z.string().regex(/^[A-Z]{2}$/)),
  })
  .strict();

/** A validated tax rule, see `shared/money/tax-rules.json` (the data file is the source of every rate). */
export type TaxRule = z.infer<typeof TaxRuleSchema>;

/** The validated rule table, loaded at cold start; a malformed data file fails the import. */
export const TAX_RULES = TaxRuleTableSchema.parse(table);

/** ISO 3166-1 alpha-2 codes with at least one rule, sorted by first appearance in the table. */
export const SUPPORTED_JURISDICTIONS: readonly string[] = [
  ...new Set(TAX_RULES.rules.map((r) => r.jurisdiction)),
];

/**
 * Normalizes a jurisdiction as a caller wrote it: trims, upper-cases and applies the table's explicit
 * aliases (only "UK" → "GB"). Returns undefined for anything that is not then a supported code.
 */
export function normalizeJurisdiction(input: string): string | undefined {
  const code = input.trim().toUpperCase();
  const resolved = TAX_RULES.aliases[code] ?? code;
  return SUPPORTED_JURISDICTIONS.includes(resolved) ? resolved : undefined;
}

/** Today's date (YYYY-MM-DD) in the rule table's timezone. */
export function todayInTableTimezone(now: Date = new Date()): string {
  return new Intl.DateTimeFormat("en-CA", { timeZone: TAX_RULES.timezone }).format(now);
}

/**
 * Finds the rule for a supported jurisdiction in force on a tax point date.
 * @param jurisdiction a normalized code from {@link normalizeJurisdiction}
 * @param taxPointDate YYYY-MM-DD; defaults to today in the table's timezone
 * @returns the rule, or undefined when none is in force on that date
 */
export function findTaxRule(
  jurisdiction: string,
  taxPointDate: string = todayInTableTimezone(),
): TaxRule | undefined {
  return TAX_RULES.rules.find(
    (rule) =>
      rule.jurisdiction === jurisdiction &&
      rule.effectiveFrom <= taxPointDate &&
      (rule.effectiveTo === null || taxPointDate <= rule.effectiveTo),
  );
}
