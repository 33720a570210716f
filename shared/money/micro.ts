/**
 * The one place a cost is turned into the text the service shows (docs/quotas.md "Cost"): a run's,
 * step's and event's cost, a day's usage, a cost limit, a quota's refusal, the trace spans and the
 * console; and the one place such text (or a price) is read back into micro-units. No imports, so the
 * console's browser bundle can take it too.
 */

/** A non-negative decimal of at most six places, the form of every price, cost and cost limit. */
const AMOUNT = /^(\d+)(?:\.(\d{1,6}))?$/;

/**
 * `amount` × 10⁶ (micro-units), exactly: `"2.5"` → `2500000n`, `"0.000020"` → `20n`. Prices per million
 * tokens, cost limits and every cost the API shows have at most six decimal places (their schemas:
 * shared/config/quotas.ts), so the result is a whole number; integer arithmetic on the digits.
 * @throws RangeError for anything else (a sign, a seventh decimal place, an exponent): never rounded
 */
export function microOf(amount: string): bigint {
  const match = AMOUNT.exec(amount);
  if (!match) throw new RangeError(`not an amount of at most six decimal places: ${JSON.stringify(amount)}`);
  return BigInt(`${match[1]}${(match[2] ?? "").padEnd(6, "0")}`);
}

/**
 * `micro` micro-units (10⁻⁶ of the price table's currency; an integer) as a decimal string with six
 * places, the form of every cost and cost limit shown (`2500000` → `"2.500000"`, `20` → `"0.000020"`):
 * exact, integer arithmetic on the digits, never floating point.
 */
export function amountOfMicro(micro: number): string {
  const digits = String(Math.abs(Math.trunc(micro))).padStart(7, "0");
  return `${micro < 0 ? "-" : ""}${digits.slice(0, -6)}.${digits.slice(-6)}`;
}
