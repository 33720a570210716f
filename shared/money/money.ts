import Big from "big.js";

/**
 * ISO 4217 minor units (digits after the decimal point) of the currencies this service accepts.
 * Source: ISO 4217 list one (SIX Financial Information), e.g. GBP 2, JPY 0, BHD 3.
 */
export const MINOR_UNITS: Readonly<Record<string, number>> = {
  GBP: 2,
  EUR: 2,
  USD: 2,
  BDT: 2,
  CHF: 2,
  JPY: 0,
  KRW: 0,
  BHD: 3,
  KWD: 3,
  OMR: 3,
};

/** The largest amount accepted anywhere (exclusive of nothing: 1e12 itself is allowed). */
export const MAX_AMOUNT = new Big("1e12");

/** Raised when an amount or currency is not acceptable; `reason` is a stable machine code. */
export class MoneyInputError extends Error {
  readonly reason: "INVALID_NUMBER" | "TOO_MANY_DECIMALS" | "NEGATIVE" | "TOO_LARGE" | "UNKNOWN_CURRENCY";
  constructor(reason: MoneyInputError["reason"], message: string) {
    super(message);
    this.name = new.target.name;
    this.reason = reason;
  }
}

/**
 * Returns the ISO 4217 minor units of a currency.
 * @throws MoneyInputError UNKNOWN_CURRENCY for a code not in {@link MINOR_UNITS}
 */
export function minorUnitsOf(currency: string): number {
  const digits = MINOR_UNITS[currency];
  if (digits === undefined) {
    throw new MoneyInputError(
      "UNKNOWN_CURRENCY",
      `Unsupported currency "${currency}"; supported: ${Object.keys(MINOR_UNITS).join(", ")}.`,
    );
  }
  return digits;
}

/** Number of digits after the decimal point that a Big value really carries. */
function decimalPlaces(value: Big): number {
  return Math.max(0, value.c.length - 1 - value.e);
}

/**
 * Parses an amount given as a JSON number or a decimal string into an exact decimal, for `currency`.
 * A JSON number is read through its shortest round-trip decimal form (`String(n)`), so 0.1 is 0.1.
 * @throws MoneyInputError INVALID_NUMBER (NaN, Infinity, not a plain decimal), TOO_MANY_DECIMALS (more
 *   places than the currency's minor units), NEGATIVE, TOO_LARGE (above {@link MAX_AMOUNT}),
 *   UNKNOWN_CURRENCY
 */
export function parseAmount(input: number | string, currency: string): Big {
  const digits = minorUnitsOf(currency);
  let text: string;
  if (typeof input === "number") {
    if (!Number.isFinite(input))
      throw new MoneyInputError("INVALID_NUMBER", "Amount must be a finite number.");
    text = String(input);
  } else {
    text = input.trim();
  }
  if (!/^-?(\d+(\.\d*)?|\.\d+)(e[+-]?\d+)?$/i.test(text)) {
    throw new MoneyInputError("INVALID_NUMBER", `Amount "${text}" is not a decimal number.`);
  }
  const value = new Big(text);
  if (value.lt(0)) throw new MoneyInputError("NEGATIVE", "Amount must not be negative.");
  if (value.gt(MAX_AMOUNT)) throw new MoneyInputError("TOO_LARGE", "Amount must be at most 1000000000000.");
  if (decimalPlaces(value) > digits) {
    throw new MoneyInputError(
      "TOO_MANY_DECIMALS",
      `Amount ${text} has more decimal places than ${currency} allows (${digits}).`,
    );
  }
  return value;
}

/**
 * An exact amount in one currency, as both a decimal string and integer minor units.
 * - `amount`: decimal string with exactly the currency's minor-unit digits, e.g. "300.00"
 * - `minorUnits`: the same amount in minor units (pence, cents, yen), a safe integer
 */
export interface MoneyValue {
  amount: string;
  minorUnits: number;
  currency: string;
}

/** Renders an exact decimal (already at the currency's precision) as a {@link MoneyValue}. */
export function toMoneyValue(value: Big, currency: string): MoneyValue {
  const digits = minorUnitsOf(currency);
  return {
    amount: value.toFixed(digits),
    minorUnits: Number(value.times(new Big(10).pow(digits)).toFixed(0)),
    currency,
  };
}

/** Rounding rules named in the tax rule table. */
export type RoundingRule = "HALF_UP_PER_INVOICE";

/**
 * Computes tax on a subtotal exactly: tax = round(subtotal x rate) to the currency's minor units, using
 * the jurisdiction's rounding rule (HALF_UP_PER_INVOICE: nearer minor unit, half up, once per invoice;
 * for GB this is one of the methods HMRC VAT Notice 700 section 17.5 allows). Gross = subtotal + tax.
 * @param rate decimal string such as "0.20"
 */
export function computeTax(
  subtotal: Big,
  rate: string,
  currency: string,
  rounding: RoundingRule,
): { subtotal: MoneyValue; taxAmount: MoneyValue; grossTotal: MoneyValue } {
  const digits = minorUnitsOf(currency);
  // HALF_UP_PER_INVOICE is the only rule so far; a new rule must add its own branch here.
  const roundingMode = { HALF_UP_PER_INVOICE: Big.roundHalfUp }[rounding];
  const tax = subtotal.times(new Big(rate)).round(digits, roundingMode);
  return {
    subtotal: toMoneyValue(subtotal, currency),
    taxAmount: toMoneyValue(tax, currency),
    grossTotal: toMoneyValue(subtotal.plus(tax), currency),
  };
}
