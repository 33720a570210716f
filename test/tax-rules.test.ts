import { describe, expect, it } from "vitest";
import {
  findTaxRule,
  isCalendarDate,
  normalizeJurisdiction,
  parseTaxRuleTable,
  SUPPORTED_JURISDICTIONS,
  TAX_RULES,
  todayInTableTimezone,
} from "../shared/money/tax-rules.js";
import table from "../shared/money/tax-rules.json" with { type: "json" };
import { calculateTaxAmounts } from "../shared/tools/tax-quote.js";

/** A deep copy of the shipped table to break in one place. */
const copy = () => structuredClone(table) as { rules: Array<Record<string, unknown>>; [k: string]: unknown };
const issuesOf = (raw: unknown): string[] => {
  try {
    parseTaxRuleTable(raw);
    return [];
  } catch (error) {
    return (error as { issues: Array<{ path: PropertyKey[]; message: string }> }).issues.map(
      (issue) => `${issue.path.join(".")}: ${issue.message}`,
    );
  }
};

describe("the tax rule table", () => {
  it("ships GB 20% and BD 15% standard VAT with sources and effective dates", () => {
    expect(SUPPORTED_JURISDICTIONS).toEqual(["GB", "BD"]);
    expect(findTaxRule("GB", "2026-11-30")).toMatchObject({
      version: "GB-VAT-STANDARD-2011-01-04",
      rate: "0.20",
      currency: "GBP",
      acceptedCurrencies: ["GBP"],
      effectiveFrom: "2011-01-04",
      effectiveTo: null,
      rounding: "HALF_UP_PER_INVOICE",
      source: expect.stringContaining("Value Added Tax Act 1994"),
      roundingSource: expect.stringContaining("HMRC VAT Notice 700 section 17.5"),
    });
    expect(findTaxRule("BD", "2026-11-30")).toMatchObject({
      version: "BD-VAT-STANDARD-2019-07-01",
      rate: "0.15",
      currency: "BDT",
      effectiveFrom: "2019-07-01",
      source: expect.stringContaining("Value Added Tax and Supplementary Duty Act 2012"),
    });
    expect(TAX_RULES.timezone).toBe("Europe/London");
  });

  it("the tax point date picks the rate version, bounds inclusive", () => {
    expect(findTaxRule("GB", "2011-01-03")?.rate).toBe("0.175");
    expect(findTaxRule("GB", "2011-01-04")?.rate).toBe("0.20");
    expect(findTaxRule("GB", "2010-01-01")?.version).toBe("GB-VAT-STANDARD-2010-01-01");
    expect(findTaxRule("GB", "2009-12-31")).toBeUndefined();
    expect(findTaxRule("BD", "2019-06-30")).toBeUndefined();
    expect(findTaxRule("DE", "2026-11-30")).toBeUndefined();
    const old = calculateTaxAmounts({ amount: "1000", currency: "GBP", jurisdiction: "GB" }, "2010-06-01");
    expect([old.rateVersion, old.taxAmount.amount, old.grossTotal.amount]).toEqual([
      "GB-VAT-STANDARD-2010-01-01",
      "175.00",
      "1175.00",
    ]);
  });

  it("today is taken in the table's timezone (Europe/London)", () => {
    // 23:30 UTC on 30 June is 00:30 BST on 1 July in London.
    expect(todayInTableTimezone(new Date("2026-06-30T23:30:00Z"))).toBe("2026-07-01");
    // In winter London is on UTC.
    expect(todayInTableTimezone(new Date("2026-11-30T23:30:00Z"))).toBe("2026-11-30");
  });

  it("codes are ISO 3166-1 alpha-2; UK is an explicit alias of GB; lowercase is normalized", () => {
    expect(normalizeJurisdiction("UK")).toBe("GB");
    expect(normalizeJurisdiction("uk")).toBe("GB");
    expect(normalizeJurisdiction(" gb ")).toBe("GB");
    expect(normalizeJurisdiction("bd")).toBe("BD");
    expect(normalizeJurisdiction("DE")).toBeUndefined();
    expect(normalizeJurisdiction("GBR")).toBeUndefined();
    expect(normalizeJurisdiction("ＧＢ")).toBeUndefined();
  });

  it("checks calendar dates", () => {
    expect(isCalendarDate("2024-02-29")).toBe(true);
    expect(isCalendarDate("2026-02-29")).toBe(false);
    expect(isCalendarDate("2026-13-01")).toBe(false);
    expect(isCalendarDate("2026-1-01")).toBe(false);
  });

  it("rejects a malformed table at load, naming the field", () => {
    expect(issuesOf(table)).toEqual([]);
    const overlap = copy();
    overlap.rules.push({ ...overlap.rules[0], version: "GB-VAT-X", effectiveFrom: "2020-01-01" });
    expect(issuesOf(overlap)).toEqual(["rules.3.effectiveFrom: period overlaps rules.0 (GB)"]);
    const duplicate = copy();
    duplicate.rules.push({ ...duplicate.rules[2], effectiveFrom: "2000-01-01", effectiveTo: "2000-12-31" });
    expect(issuesOf(duplicate)).toEqual(["rules.3.version: duplicate version"]);
    const badRate = copy();
    (badRate.rules[0] as Record<string, unknown>).rate = 0.2;
    expect(issuesOf(badRate)[0]).toMatch(/^rules\.0\.rate: /);
    const wrongCurrency = copy();
    (wrongCurrency.rules[0] as Record<string, unknown>).acceptedCurrencies = ["EUR"];
    expect(issuesOf(wrongCurrency)).toEqual([
      "rules.0.acceptedCurrencies: acceptedCurrencies must include the jurisdiction's own currency",
    ]);
    const badDate = copy();
    (badDate.rules[0] as Record<string, unknown>).effectiveFrom = "2011-02-30";
    expect(issuesOf(badDate)).toEqual(["rules.0.effectiveFrom: expected a calendar date YYYY-MM-DD"]);
    const danglingAlias = { ...copy(), aliases: { UK: "GB", EL: "GR" } };
    expect(issuesOf(danglingAlias)).toEqual(["aliases.EL: GR has no rules"]);
    const badZone = { ...copy(), timezone: "Mars/Olympus" };
    expect(issuesOf(badZone)).toEqual(["timezone: an IANA timezone such as Europe/London"]);
  });
});
