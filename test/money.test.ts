import { describe, expect, it } from "vitest";
import {
  computeTax,
  Decimal,
  MoneyInputError,
  type MoneyInputReason,
  parseAmount,
  toMoneyValue,
} from "../shared/money/money.js";

/** The reason parseAmount rejects an input with, or "ok" with the value it parsed. */
function reasonOf(input: number | string, currency: string): MoneyInputReason | `ok ${string}` {
  try {
    return `ok ${parseAmount(input, currency).toString()}`;
  } catch (error) {
    if (error instanceof MoneyInputError) return error.reason;
    throw error;
  }
}

const gbp = (amount: number | string) =>
  computeTax(parseAmount(amount, "GBP"), "0.20", "GBP", "HALF_UP_PER_INVOICE");

describe("exact money", () => {
  it("computes the seed's GB values: 1500 GBP at 20% is 300.00 tax and 1800.00 gross", () => {
    const expected = {
      subtotal: { amount: "1500.00", minorUnits: 150000, currency: "GBP" },
      taxAmount: { amount: "300.00", minorUnits: 30000, currency: "GBP" },
      grossTotal: { amount: "1800.00", minorUnits: 180000, currency: "GBP" },
    };
    expect(gbp(1500)).toEqual(expected);
    expect(gbp("1500")).toEqual(expected);
    expect(gbp("1500.00")).toEqual(expected);
  });

  it("BD is 15%: 200 BDT gives 30.00 tax and 230.00 gross", () => {
    const result = computeTax(parseAmount("200", "BDT"), "0.15", "BDT", "HALF_UP_PER_INVOICE");
    expect([result.taxAmount.amount, result.grossTotal.amount, result.grossTotal.minorUnits]).toEqual([
      "30.00",
      "230.00",
      23000,
    ]);
  });

  it("GBP edge amounts: 0.01, 0.05, 999999999999.99", () => {
    // 0.01 x 0.20 = 0.002 → 0.00; 0.05 x 0.20 = 0.01 exactly.
    expect(gbp(0.01).taxAmount).toEqual({ amount: "0.00", minorUnits: 0, currency: "GBP" });
    expect(gbp(0.01).grossTotal.amount).toBe("0.01");
    expect(gbp("0.05").taxAmount).toEqual({ amount: "0.01", minorUnits: 1, currency: "GBP" });
    expect(gbp("0.05").grossTotal.amount).toBe("0.06");
    const top = gbp(999999999999.99);
    expect(top.subtotal).toEqual({ amount: "999999999999.99", minorUnits: 99999999999999, currency: "GBP" });
    // 999999999999.99 x 0.20 = 199999999999.998, to the nearer penny: 200000000000.00
    expect(top.taxAmount.amount).toBe("200000000000.00");
    expect(top.grossTotal).toEqual({
      amount: "1199999999999.99",
      minorUnits: 119999999999999,
      currency: "GBP",
    });
    expect(gbp("1e12").grossTotal.amount).toBe("1200000000000.00");
  });

  it("rounds half up to the minor unit, once per invoice", () => {
    // 0.025 x 0.20 cannot occur in GBP (3 decimals); 0.03 x 0.20 = 0.006 → 0.01, 0.02 x 0.20 = 0.004 → 0.00.
    expect(gbp("0.02").taxAmount.amount).toBe("0.00");
    expect(gbp("0.03").taxAmount.amount).toBe("0.01");
    // An exact half: 0.10 x 0.15 = 0.015 → 0.02 (half up, not half even).
    expect(
      computeTax(parseAmount("0.10", "BDT"), "0.15", "BDT", "HALF_UP_PER_INVOICE").taxAmount.amount,
    ).toBe("0.02");
    expect(
      computeTax(parseAmount("0.30", "BDT"), "0.15", "BDT", "HALF_UP_PER_INVOICE").taxAmount.amount,
    ).toBe("0.05");
  });

  it('rejects 1e-7 and "12.345" for GBP (more decimals than the currency has)', () => {
    expect(reasonOf(1e-7, "GBP")).toBe("TOO_MANY_DECIMALS");
    expect(reasonOf("1e-7", "GBP")).toBe("TOO_MANY_DECIMALS");
    expect(reasonOf("12.345", "GBP")).toBe("TOO_MANY_DECIMALS");
    expect(() => parseAmount("12.345", "GBP")).toThrow("more decimal places than GBP allows (2)");
    expect(reasonOf(12.345, "GBP")).toBe("TOO_MANY_DECIMALS");
    // Trailing zeros are not precision: "12.340" is 12.34.
    expect(reasonOf("12.340", "GBP")).toBe("ok 12.34");
  });

  it("rejects NaN, Infinity, negatives, amounts above 1e12 and non-decimal text", () => {
    expect(reasonOf(Number.NaN, "GBP")).toBe("INVALID_NUMBER");
    expect(reasonOf(Number.POSITIVE_INFINITY, "GBP")).toBe("INVALID_NUMBER");
    expect(reasonOf("NaN", "GBP")).toBe("INVALID_NUMBER");
    expect(reasonOf("Infinity", "GBP")).toBe("INVALID_NUMBER");
    expect(reasonOf("1,500.00", "GBP")).toBe("INVALID_NUMBER");
    expect(reasonOf("0x10", "GBP")).toBe("INVALID_NUMBER");
    expect(reasonOf("", "GBP")).toBe("INVALID_NUMBER");
    // Nothing around the digits: docs/money-and-tax.md's grammar is the whole string.
    expect(reasonOf(" 12.00", "GBP")).toBe("INVALID_NUMBER");
    expect(reasonOf("12.00 ", "GBP")).toBe("INVALID_NUMBER");
    expect(reasonOf("\u00a012.00", "GBP")).toBe("INVALID_NUMBER");
    expect(reasonOf(" ", "GBP")).toBe("INVALID_NUMBER");
    expect(reasonOf(-1, "GBP")).toBe("NEGATIVE");
    expect(reasonOf("-0.01", "GBP")).toBe("NEGATIVE");
    expect(reasonOf("1000000000000.01", "GBP")).toBe("TOO_LARGE");
    expect(reasonOf(1e13, "GBP")).toBe("TOO_LARGE");
    expect(reasonOf("1e12", "GBP")).toBe("ok 1000000000000");
    expect(reasonOf("12", "XXX")).toBe("UNKNOWN_CURRENCY");
  });

  it("exponent notation: exact in strings, rejected where a JSON number lost precision", () => {
    expect(reasonOf("1.5e3", "GBP")).toBe("ok 1500");
    expect(reasonOf("1.2345e2", "GBP")).toBe("ok 123.45");
    expect(reasonOf("1.2345e1", "GBP")).toBe("TOO_MANY_DECIMALS");
    expect(reasonOf("1e-400", "GBP")).toBe("TOO_MANY_DECIMALS");
    expect(reasonOf("1e400", "GBP")).toBe("TOO_LARGE");
    // 0.1 + 0.2 is 0.30000000000000004: 17 significant digits the caller never wrote.
    expect(reasonOf(0.1 + 0.2, "GBP")).toBe("PRECISION_LOST");
    expect(reasonOf(1234.5678901234567, "BHD")).toBe("PRECISION_LOST");
    // A JSON number with at most 15 significant digits is exactly what was written.
    expect(reasonOf(0.1, "GBP")).toBe("ok 0.1");
    expect(reasonOf(999999999999.999, "BHD")).toBe("ok 999999999999.999");
    expect(reasonOf(1.5e3, "GBP")).toBe("ok 1500");
  });

  it("negative zero is zero", () => {
    expect(toMoneyValue(parseAmount("-0", "GBP"), "GBP")).toEqual({
      amount: "0.00",
      minorUnits: 0,
      currency: "GBP",
    });
    expect(toMoneyValue(parseAmount(-0, "GBP"), "GBP").amount).toBe("0.00");
  });

  it("JPY has no minor unit: whole yen only, tax rounded to whole yen", () => {
    expect(reasonOf(1500, "JPY")).toBe("ok 1500");
    expect(reasonOf("1500.00", "JPY")).toBe("ok 1500");
    expect(reasonOf(1.5, "JPY")).toBe("TOO_MANY_DECIMALS");
    expect(reasonOf("0.1", "JPY")).toBe("TOO_MANY_DECIMALS");
    expect(() => parseAmount("1.5", "JPY")).toThrow("JPY allows (0)");
    // 1234 x 0.10 = 123.4 → 123; 1235 x 0.10 = 123.5 → 124 (half up); 5 x 0.10 = 0.5 → 1.
    const jpy = (amount: string) =>
      computeTax(parseAmount(amount, "JPY"), "0.10", "JPY", "HALF_UP_PER_INVOICE");
    expect(jpy("1234").taxAmount).toEqual({ amount: "123", minorUnits: 123, currency: "JPY" });
    expect(jpy("1235").taxAmount).toEqual({ amount: "124", minorUnits: 124, currency: "JPY" });
    expect(jpy("5").grossTotal).toEqual({ amount: "6", minorUnits: 6, currency: "JPY" });
  });

  it("BHD has three decimals", () => {
    expect(reasonOf("12.345", "BHD")).toBe("ok 12.345");
    expect(reasonOf("12.3456", "BHD")).toBe("TOO_MANY_DECIMALS");
    const bhd = computeTax(parseAmount("10.005", "BHD"), "0.10", "BHD", "HALF_UP_PER_INVOICE");
    // 10.005 x 0.10 = 1.0005 → 1.001
    expect(bhd.taxAmount).toEqual({ amount: "1.001", minorUnits: 1001, currency: "BHD" });
    expect(bhd.grossTotal.amount).toBe("11.006");
  });

  it("never lets a binary float into decimal arithmetic", () => {
    expect(() => new Decimal(0.1 as unknown as string)).toThrow(TypeError);
    expect(() => toMoneyValue(new Decimal("0.005"), "GBP")).toThrow(/not rounded/);
  });
});
