import * as z from "zod";
import { MINOR_UNITS, ROUNDING_RULES } from "./money.js";
import table from "./tax-rules.json" with { type: "json" };

/** True when `text` is YYYY-MM-DD and names a real calendar day (2026-02-30 is not one). */
export function isCalendarDate(text: string): boolean {
  if (!/^\d{4}-\d{2}-\d{2}$/.test(text)) return false;
  const date = new Date(`${text}T00:00:00Z`);
  return !Number.isNaN(date.getTime()) && date.toISOString().slice(0, 10) === text;
}

const IsoDate = z.string().refine(isCalendarDate, "expected a calendar date YYYY-MM-DD");
const Country = z.string().regex(/^[A-Z]{2}$/, "ISO 3166-1 alpha-2, upper case");
const Currency = z.string().refine((code) => code in MINOR_UNITS, "a currency listed in MINOR_UNITS");

/**
 * One row of the tax rule table: a rate for a jurisdiction over a period, with its legal source.
 * - `version`: unique id of this rate version; quotes and invoices record it
 * - `rate`: decimal string below 1 ("0.20" is 20%)
 * - `currency`: the jurisdiction's own currency; `acceptedCurrencies` the invoice currencies allowed
 *   (must include `currency`; today every row accepts only its own)
 * - `effectiveFrom`/`effectiveTo`: inclusive tax point dates (YYYY-MM-DD); `effectiveTo` null = open
 * - `rounding` and `roundingSource`: the rounding rule and where it comes from
 * - `source`: the statute or notice that sets the rate
 */
const TaxRuleSchema = z
  .object({
    version: z.string().regex(/^[A-Z0-9-]{3,64}$/, "upper-case letters, digits and dashes"),
    jurisdiction: Country,
    name: z.string().min(1),
    rate: z.string().regex(/^0\.\d{1,6}$/, "a decimal string below 1, e.g. 0.20"),
    currency: Currency,
    acceptedCurrencies: z.array(Currency).min(1),
    effectiveFrom: IsoDate,
    effectiveTo: IsoDate.nullable(),
    rounding: z.enum(ROUNDING_RULES),
    roundingSource: z.string().min(10),
    source: z.string().min(10),
  })
  .strict()
  .refine((rule) => rule.acceptedCurrencies.includes(rule.currency), {
    message: "acceptedCurrencies must include the jurisdiction's own currency",
    path: ["acceptedCurrencies"],
  })
  .refine((rule) => rule.effectiveTo === null || rule.effectiveFrom <= rule.effectiveTo, {
    message: "effectiveTo must not be before effectiveFrom",
    path: ["effectiveTo"],
  });

/** Two rows of one jurisdiction overlap when neither ends before the other starts. */
function overlaps(a: TaxRule, b: TaxRule): boolean {
  const aEndsBeforeB = a.effectiveTo !== null && a.effectiveTo < b.effectiveFrom;
  const bEndsBeforeA = b.effectiveTo !== null && b.effectiveTo < a.effectiveFrom;
  return !aEndsBeforeB && !bEndsBeforeA;
}

/**
 * The whole table: the timezone that decides "today" for the default tax point date, the rows, and
 * explicit aliases (input code → ISO code). Cross-row checks: unique versions, no overlapping periods
 * within a jurisdiction, aliases that point at a jurisdiction with rules.
 */
const TaxRuleTableSchema = z
  .object({
    timezone: z.string().refine((zone) => {
      try {
        new Intl.DateTimeFormat("en-CA", { timeZone: zone });
        return true;
      } catch {
        return false;
      }
    }, "an IANA timezone such as Europe/London"),
    rules: z.array(TaxRuleSchema).min(1),
    aliases: z.record(z.string().regex(/^[A-Z]{2,3}$/), Country),
  })
  .strict()
  .superRefine((value, ctx) => {
    const versions = new Set<string>();
    value.rules.forEach((rule, index) => {
      if (versions.has(rule.version)) {
        ctx.addIssue({ code: "custom", path: ["rules", index, "version"], message: "duplicate version" });
      }
      versions.add(rule.version);
      const clash = value.rules.findIndex(
        (other, j) => j < index && other.jurisdiction === rule.jurisdiction && overlaps(other, rule),
      );
      if (clash >= 0) {
        ctx.addIssue({
          code: "custom",
          path: ["rules", index, "effectiveFrom"],
          message: `period overlaps rules.${clash} (${rule.jurisdiction})`,
        });
      }
    });
    const codes = new Set(value.rules.map((rule) => rule.jurisdiction));
    for (const [alias, target] of Object.entries(value.aliases)) {
      if (!codes.has(target)) {
        ctx.addIssue({ code: "custom", path: ["aliases", alias], message: `${target} has no rules` });
      }
    }
  });

/** A validated tax rule, see `shared/money/tax-rules.json` (the data file is the source of every rate). */
export type TaxRule = z.infer<typeof TaxRuleSchema>;

/** A validated rule table. */
export type TaxRuleTable = z.infer<typeof TaxRuleTableSchema>;

/**
 * Validates a rule table (the shape of `tax-rules.json`).
 * @throws ZodError naming each bad field, e.g. `rules.1.effectiveFrom: period overlaps rules.0 (GB)`
 */
export function parseTaxRuleTable(raw: unknown): TaxRuleTable {
  return TaxRuleTableSchema.parse(raw);
}

/** The validated rule table, loaded at cold start; a malformed data file fails the import. */
export const TAX_RULES: TaxRuleTable = parseTaxRuleTable(table);

/** ISO 3166-1 alpha-2 codes with at least one rule, in order of first appearance in the table. */
export function supportedJurisdictions(rules: TaxRuleTable = TAX_RULES): string[] {
  return [...new Set(rules.rules.map((r) => r.jurisdiction))];
}

/** The supported codes of {@link TAX_RULES} ("GB", "BD"). */
export const SUPPORTED_JURISDICTIONS: readonly string[] = supportedJurisdictions();

/**
 * Normalizes a jurisdiction as a caller wrote it: trims, upper-cases and applies the table's explicit
 * aliases (only "UK" → "GB"). Returns undefined for anything that is not then a supported code.
 */
export function normalizeJurisdiction(input: string, rules: TaxRuleTable = TAX_RULES): string | undefined {
  const code = input.trim().toUpperCase();
  const resolved = rules.aliases[code] ?? code;
  return supportedJurisdictions(rules).includes(resolved) ? resolved : undefined;
}

/**
 * The calendar date (YYYY-MM-DD) of an instant in the rule table's timezone (Europe/London), used as
 * the default tax point date.
 */
export function todayInTableTimezone(now: Date = new Date(), rules: TaxRuleTable = TAX_RULES): string {
  return new Intl.DateTimeFormat("en-CA", { timeZone: rules.timezone }).format(now);
}

/**
 * Finds the rule version for a supported jurisdiction in force on a tax point date (bounds inclusive).
 * @param jurisdiction a normalized code from {@link normalizeJurisdiction}
 * @param taxPointDate YYYY-MM-DD
 * @returns the rule, or undefined when none is in force on that date
 */
export function findTaxRule(
  jurisdiction: string,
  taxPointDate: string,
  rules: TaxRuleTable = TAX_RULES,
): TaxRule | undefined {
  return rules.rules.find(
    (rule) =>
      rule.jurisdiction === jurisdiction &&
      rule.effectiveFrom <= taxPointDate &&
      (rule.effectiveTo === null || taxPointDate <= rule.effectiveTo),
  );
}
