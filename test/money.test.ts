import Big from "big.js";
import { describe, expect, it } from "vitest";
import { computeTax, parseAmount } from "../shared/money/money.js";
import { findTaxRule, normalizeJurisdiction } from "../shared/money/tax-rules.js";

describe("money", () => {
  it("computes the seed's GB values exactly", () => {
    expect(computeTax(parseAmount(1500, "GBP"), "0.20", "GBP", "HALF_UP_PER_INVOICE")).toEqual({
      subtotal: { amount: "1500.00", minorUnits: 150000, currency: "GBP" },
      taxAmount: { amount: "300.00", minorUnits: 30000, currency: "GBP" },
      grossTotal: { amount: "1800.00", minorUnits: 180000, currency: "GBP" },
    });
  });

  it("rounds half up to the minor unit once per invoice", () => {
    // 0.025 * 0.20 is not representable here; 0.05 * 0.20 = 0.01 exactly, 0.02 * 0.20 = 0.004 → 0.00
    expect(computeTax(new Big("0.02"), "0.20", "GBP", "HALF_UP_PER_INVOICE").taxAmount.amount).toBe("0.00");
    expect(computeTax(new Big("0.03"), "0.20", "GBP", "HALF_UP_PER_INVOICE").taxAmount.amount).toBe("0.01");
    expect(computeTax(new Big("0.1"), "0.15", "BDT", "HALF_UP_PER_INVOICE").taxAmount.amount).toBe("0.02");
    expect(
      computeTax(new Big("999999999999.99"), "0.20", "GBP", "HALF_UP_PER_INVOICE").grossTotal.amount,
    ).toBe("1199999999999.99");
  });

  it("rejects amounts that are not exact money", () => {
    expect(() => parseAmount("12.345", "GBP")).toThrow(/more decimal places/);
    expect(() => parseAmount(Number.NaN, "GBP")).toThrow(/finite/);
    expect(() => parseAmount(-1, "GBP")).toThrow(/negative/);
    expect(() => parseAmount("1000000000000.01", "GBP")).toThrow(/at most/);
    expect(() => parseAmount(1.5, "JPY")).toThrow(/JPY allows \(0\)/);
    expect(() => parseAmount(1e-7, "GBP")).toThrow(/more decimal places/);
    expect(parseAmount(0.1, "GBP").toFixed(2)).toBe("0.10");
  });

  it("normalizes jurisdictions with the explicit UK alias only", () => {
    expect(normalizeJurisdiction("UK")).toBe("GB");
    expect(normalizeJurisdiction(" gb ")).toBe("GB");
    expect(normalizeJurisdiction("DE")).toBeUndefined();
    expect(normalizeJurisdiction("ＧＢ")).toBeUndefined();
    expect(findTaxRule("GB", "2010-12-31")).toBeUndefined();
    expect(findTaxRule("GB", "2026-11-30")?.rate).toBe("0.20");
  });
});
