import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { computeTax, MoneyInputError, parseAmount } from "../shared/money/money.js";
import { calculateTaxAmounts } from "../shared/tools/tax-quote.js";

/**
 * The independent reference: integer arithmetic on minor units with BigInt, no decimal library.
 * tax = round_half_up(subtotalMinor x rateNumerator / rateDenominator); for non-negative values
 * round_half_up(a / b) = floor((2a + b) / 2b).
 */
function referenceTax(subtotalMinor: bigint, rate: string): { tax: bigint; gross: bigint } {
  const [, fraction = ""] = rate.split(".");
  const numerator = BigInt(fraction);
  const denominator = 10n ** BigInt(fraction.length);
  const tax = (2n * subtotalMinor * numerator + denominator) / (2n * denominator);
  return { tax, gross: subtotalMinor + tax };
}

/** Formats minor units as a decimal string with `digits` decimals, by string slicing only. */
function formatMinor(minor: bigint, digits: number): string {
  if (digits === 0) return minor.toString();
  const text = minor.toString().padStart(digits + 1, "0");
  return `${text.slice(0, -digits)}.${text.slice(-digits)}`;
}

const RUNS = 100_000;
/** 1e12 in minor units of a 2-decimal currency: the largest subtotal accepted. */
const MAX_MINOR_2DP = 10n ** 14n;

describe("tax amounts against an independent BigInt computation", () => {
  it(`${RUNS} random GB/BD subtotals through calculateTaxAmounts: 0 mismatches`, () => {
    let compared = 0;
    const mismatches: string[] = [];
    fc.assert(
      fc.property(
        fc.bigInt({ min: 0n, max: MAX_MINOR_2DP }),
        fc.constantFrom(
          { jurisdiction: "GB", currency: "GBP", rate: "0.20" },
          { jurisdiction: "uk", currency: "gbp", rate: "0.20" },
          { jurisdiction: "BD", currency: "BDT", rate: "0.15" },
        ),
        fc.boolean(),
        (minor, rule, asNumber) => {
          const text = formatMinor(minor, 2);
          // Every subtotal here has at most 16 digits; as a JSON number it is exact up to 15 significant.
          const amount =
            asNumber && text.replace(".", "").replace(/^0+/, "").length <= 15 ? Number(text) : text;
          const result = calculateTaxAmounts(
            { amount, currency: rule.currency, jurisdiction: rule.jurisdiction },
            "2026-11-30",
          );
          const expected = referenceTax(minor, rule.rate);
          compared += 1;
          const ok =
            result.rate === rule.rate &&
            result.subtotal.amount === text &&
            BigInt(result.subtotal.minorUnits) === minor &&
            result.taxAmount.amount === formatMinor(expected.tax, 2) &&
            BigInt(result.taxAmount.minorUnits) === expected.tax &&
            result.grossTotal.amount === formatMinor(expected.gross, 2) &&
            BigInt(result.grossTotal.minorUnits) === expected.gross;
          if (!ok) mismatches.push(`${text} ${rule.jurisdiction}`);
          return ok;
        },
      ),
      { numRuns: RUNS, seed: 20261130 },
    );
    expect(compared).toBe(RUNS);
    expect(mismatches).toEqual([]);
  });

  it("random rates and currencies with 0, 2 and 3 minor units agree with the reference", () => {
    let compared = 0;
    fc.assert(
      fc.property(
        fc.constantFrom(["JPY", 0] as const, ["GBP", 2] as const, ["BHD", 3] as const),
        fc.bigInt({ min: 0n, max: 10n ** 15n }),
        // Rates that often land exactly on a half minor unit, and arbitrary six-decimal rates.
        fc.oneof(
          fc.constantFrom(50_000, 500_000, 150_000, 250_000, 125_000),
          fc.integer({ min: 1, max: 999_999 }),
        ),
        ([currency, digits], rawMinor, rateMillionths) => {
          const minor = rawMinor % (10n ** BigInt(12 + digits) + 1n);
          const rate = `0.${String(rateMillionths).padStart(6, "0")}`;
          const result = computeTax(
            parseAmount(formatMinor(minor, digits), currency),
            rate,
            currency,
            "HALF_UP_PER_INVOICE",
          );
          const expected = referenceTax(minor, rate);
          compared += 1;
          return (
            result.taxAmount.amount === formatMinor(expected.tax, digits) &&
            BigInt(result.taxAmount.minorUnits) === expected.tax &&
            result.grossTotal.amount === formatMinor(expected.gross, digits)
          );
        },
      ),
      { numRuns: 20_000, seed: 7 },
    );
    expect(compared).toBe(20_000);
  });

  it("any amount with more decimals than the currency has is rejected, never rounded", () => {
    fc.assert(
      fc.property(
        fc.constantFrom(["JPY", 0] as const, ["GBP", 2] as const, ["BHD", 3] as const),
        fc.bigInt({ min: 0n, max: 10n ** 12n - 1n }),
        fc.integer({ min: 1, max: 6 }),
        fc.integer({ min: 1, max: 9 }),
        ([currency, digits], whole, extra, lastDigit) => {
          const fraction = `${"0".repeat(digits + extra - 1)}${lastDigit}`;
          try {
            parseAmount(`${whole}.${fraction}`, currency);
            return false;
          } catch (error) {
            return error instanceof MoneyInputError && error.reason === "TOO_MANY_DECIMALS";
          }
        },
      ),
      { numRuns: 5_000, seed: 11 },
    );
  });
});
