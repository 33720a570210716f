import BigJs from "big.js";
import * as z from "zod";

/**
 * The decimal constructor every money computation uses: big.js (arbitrary-precision decimal, exact
 * +, -, x; explicit rounding modes), as its own constructor in strict mode, so passing a JS number to it
 * or calling `toNumber()` where precision would be lost throws a TypeError instead of silently using a
 * binary float. Build values from strings: `new Decimal("12.34")`.
 */
export const Decimal: BigJs.BigConstructor = BigJs();
Decimal.strict = true;
/** An exact decimal value made by {@link Decimal}. */
export type Decimal = BigJs.Big;

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

/** The largest amount accepted anywhere, in major units (1e12 itself is allowed). */
export const MAX_AMOUNT: Decimal = new Decimal("1e12");

/**
 * Significant digits a JSON number may carry: every decimal with at most 15 significant digits
 * survives the trip through an IEEE 754 double unchanged (DBL_DIG = 15), and every valid amount
 * (at most 1e12 with at most 3 decimals) has at most 15.
 */
export const MAX_NUMBER_DIGITS = 15;

/** Why an amount or currency was rejected (stable machine codes). */
export type MoneyInputReason =
  | "INVALID_NUMBER"
  | "PRECISION_LOST"
  | "TOO_MANY_DECIMALS"
  | "NEGATIVE"
  | "TOO_LARGE"
  | "UNKNOWN_CURRENCY";

/** Raised when an amount or currency is not acceptable; `reason` is a stable machine code. */
export class MoneyInputError extends Error {
  readonly reason: MoneyInputReason;
  constructor(reason: MoneyInputReason, message: string) {
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

/** Number of digits after the decimal point that a value really carries (trailing zeros excluded). */
function decimalPlaces(value: Decimal): number {
  return Math.max(0, value.c.length - 1 - value.e);
}

/**
 * The grammar of an amount given as a string (docs/money-and-tax.md): an optional leading "-" (then
 * refused as negative), digits with at most one "." ("12", "12.5", ".5", "12."), an optional exponent
 * ("1.5e3", "1E-2"). Nothing else: no spaces around or inside, no "+", no separators.
 */
const DECIMAL_TEXT = /^-?(\d+(\.\d*)?|\.\d+)(e[+-]?\d+)?$/i;

/**
 * Parses an amount given as a JSON number or a decimal string into an exact decimal, for `currency`.
 * - A JSON number is read through its shortest round-trip decimal form (`String(n)`), so 0.1 is 0.1;
 *   one whose form has more than {@link MAX_NUMBER_DIGITS} significant digits (e.g. 0.1 + 0.2 =
 *   0.30000000000000004) cannot be what the caller meant and is rejected: send a decimal string.
 * - A string must match {@link DECIMAL_TEXT} as a whole (no spaces around it); it may use exponent
 *   notation ("1.5e3"), which is exact, and the decimal-places rule applies to
 *   the value it denotes ("1e-7" has 7 decimals). Trailing zeros do not count ("12.340" is 12.34).
 * - Negative zero is read as 0.
 * @throws MoneyInputError INVALID_NUMBER (NaN, Infinity, not a decimal), PRECISION_LOST, NEGATIVE,
 *   TOO_LARGE (above {@link MAX_AMOUNT}), TOO_MANY_DECIMALS (more places than the currency's minor
 *   units), UNKNOWN_CURRENCY
 */
export function parseAmount(input: number | string, currency: string): Decimal {
  const digits = minorUnitsOf(currency);
  let text: string;
  if (typeof input === "number") {
    if (!Number.isFinite(input)) {
      throw new MoneyInputError("INVALID_NUMBER", "Amount must be a finite number, not NaN or Infinity.");
    }
    text = String(input);
  } else {
    // The whole string is the amount (docs/money-and-tax.md's grammar): " 12.00" is refused, not trimmed.
    text = input;
  }
  if (!DECIMAL_TEXT.test(text)) {
    throw new MoneyInputError(
      "INVALID_NUMBER",
      `Amount ${JSON.stringify(text)} is not a decimal number (NaN, Infinity, spaces, separators and signs other than a leading "-" are not accepted).`,
    );
  }
  let value = new Decimal(text);
  if (typeof input === "number" && value.c.length > MAX_NUMBER_DIGITS) {
    throw new MoneyInputError(
      "PRECISION_LOST",
      `Amount ${text} has more significant digits than a JSON number holds exactly; send it as a decimal string.`,
    );
  }
  if (value.eq("0")) value = new Decimal("0");
  if (value.lt("0")) throw new MoneyInputError("NEGATIVE", "Amount must not be negative.");
  if (value.gt(MAX_AMOUNT)) {
    throw new MoneyInputError("TOO_LARGE", "Amount must be at most 1000000000000 (1e12).");
  }
  if (decimalPlaces(value) > digits) {
    throw new MoneyInputError(
      "TOO_MANY_DECIMALS",
      `Amount ${text} has more decimal places than ${currency} allows (${digits}).`,
    );
  }
  return value;
}

/**
 * An exact amount in one currency, as both a decimal string and integer minor units: the one schema of
 * money wherever it is stored or returned (quotes, the ledger, tool results, the HTTP contract).
 * - `amount`: decimal string with exactly the currency's minor-unit digits, e.g. "300.00"
 * - `minorUnits`: the same amount in minor units (pence, cents, yen), a safe integer (at most about
 *   2e15: 2e12 major units x 1000 for 3-decimal currencies)
 * - `currency`: ISO 4217 code
 */
export const MoneyValueSchema = z
  .object({
    amount: z
      .string()
      .regex(/^\d+(\.\d+)?$/)
      .describe('Exact decimal string in major units, e.g. "1500.00".'),
    minorUnits: z
      .number()
      .int()
      .nonnegative()
      .max(Number.MAX_SAFE_INTEGER)
      .describe("The same amount in integer minor units (pence, cents)."),
    currency: z
      .string()
      .regex(/^[A-Z]{3}$/)
      .describe("ISO 4217 code."),
  })
  .strict();

/** An exact amount, see {@link MoneyValueSchema}. */
export type MoneyValue = z.infer<typeof MoneyValueSchema>;

/**
 * Renders an exact decimal as a {@link MoneyValue}.
 * @throws Error when `value` has more decimals than the currency's minor units (a bug: round first)
 */
export function toMoneyValue(value: Decimal, currency: string): MoneyValue {
  const digits = minorUnitsOf(currency);
  if (decimalPlaces(value) > digits) {
    throw new Error(`${value.toString()} is not rounded to ${currency}'s ${digits} minor-unit digits.`);
  }
  const minor = value.times(new Decimal("10").pow(digits));
  return { amount: value.toFixed(digits), minorUnits: minor.toNumber(), currency };
}

/**
 * Rounding rules the tax rule table may name.
 * - HALF_UP_PER_INVOICE: tax = subtotal x rate, rounded once per invoice to the nearer minor unit,
 *   halves rounded up (away from zero; amounts are never negative).
 */
export const ROUNDING_RULES = ["HALF_UP_PER_INVOICE"] as const;
/** A rounding rule name, see {@link ROUNDING_RULES}. */
export type RoundingRule = (typeof ROUNDING_RULES)[number];

/** big.js rounding mode for each rule; a new rule must add its entry here. */
const ROUNDING_MODE: Record<RoundingRule, BigJs.RoundingMode> = {
  HALF_UP_PER_INVOICE: Decimal.roundHalfUp,
};

/**
 * The amounts of one tax calculation, each a {@link MoneyValue} in the same currency:
 * `subtotal` (before tax), `taxAmount`, `grossTotal` (= subtotal + taxAmount).
 */
export interface TaxAmounts {
  subtotal: MoneyValue;
  taxAmount: MoneyValue;
  grossTotal: MoneyValue;
}

/**
 * Computes tax on a subtotal exactly: tax = round(subtotal x rate) to the currency's minor units with
 * the rule's rounding (for GB, HALF_UP_PER_INVOICE is one of the methods HMRC VAT Notice 700
 * section 17.5 allows), gross = subtotal + tax.
 * @param subtotal a value from {@link parseAmount}
 * @param rate decimal string such as "0.20"
 * @throws MoneyInputError UNKNOWN_CURRENCY
 */
export function computeTax(
  subtotal: Decimal,
  rate: string,
  currency: string,
  rounding: RoundingRule,
): TaxAmounts {
  const digits = minorUnitsOf(currency);
  const tax = subtotal.times(new Decimal(rate)).round(digits, ROUNDING_MODE[rounding]);
  return {
    subtotal: toMoneyValue(subtotal, currency),
    taxAmount: toMoneyValue(tax, currency),
    grossTotal: toMoneyValue(subtotal.plus(tax), currency),
  };
}
