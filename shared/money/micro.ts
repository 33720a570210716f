/**
 * The one place a cost is turned into the text the service shows (docs/quotas.md "Cost"): a run's,
 * step's and event's cost, a day's usage, a cost limit, a quota's refusal, the trace spans and the
 * console. No imports, so the console's browser bundle can take it too.
 */

/**
 * `micro` micro-units (10⁻⁶ of the price table's currency; an integer) as a decimal string with six
 * places, the form of every cost and cost limit shown (`2500000` → `"2.500000"`, `20` → `"0.000020"`):
 * exact, integer arithmetic on the digits, never floating point.
 */
export function amountOfMicro(micro: number): string {
  const digits = String(Math.abs(Math.trunc(micro))).padStart(7, "0");
  return `${micro < 0 ? "-" : ""}${digits.slice(0, -6)}.${digits.slice(-6)}`;
}
