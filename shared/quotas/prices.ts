import type { ModelPrice } from "../config/quotas.js";
import { Decimal } from "../money/money.js";

/**
 * The cost of model calls from the price table (MODEL_PRICES, docs/quotas.md "Cost"), in exact decimals
 * (big.js through the money code's strict `Decimal`). Every amount is counted in **micro-units** of the
 * table's currency (10⁻⁶: six decimal places), as an integer: a price per million tokens times a token
 * count *is* an amount in micro-units, so `tokens × pricePerMillion` needs no division.
 * - a call's cost is exact, then rounded half-up to the micro-unit; a run's and a day's costs are the
 *   sums of their calls' (so the calls' events add up to the run, and the runs to the day)
 * - a reservation is the call's worst case rounded *up* (never under-reserved)
 */

/** The price of `model` in the table, undefined when it has none. */
export function priceOf(prices: Readonly<Record<string, ModelPrice>>, model: string): ModelPrice | undefined {
  return Object.hasOwn(prices, model) ? prices[model] : undefined;
}

/** The sentence a run or call without a cost carries (`costNote`), naming the model. */
export function noPriceNote(model: string): string {
  return `No price for the model ${model} in MODEL_PRICES; its cost is unknown.`;
}

/** `tokens × pricePerMillion`: an exact amount in micro-units (not rounded). */
function microOf(tokens: number, pricePerMillion: string): Decimal {
  return new Decimal(String(tokens)).times(new Decimal(pricePerMillion));
}

/**
 * One call's cost in micro-units: `promptTokens × inputPerMillion + completionTokens × outputPerMillion`,
 * exact, rounded half-up to a whole micro-unit.
 */
export function callCostMicro(
  price: ModelPrice,
  usage: { promptTokens: number; completionTokens: number },
): number {
  const exact = microOf(usage.promptTokens, price.inputPerMillion).plus(
    microOf(usage.completionTokens, price.outputPerMillion),
  );
  return Number(exact.round(0, Decimal.roundHalfUp).toFixed(0));
}

/**
 * The most a call can cost, in micro-units rounded up: the prompt's estimate at the input price plus
 * `maxTokens` completion tokens at the output price.
 */
export function worstCaseMicro(price: ModelPrice, promptTokens: number, maxTokens: number): number {
  const exact = microOf(promptTokens, price.inputPerMillion).plus(microOf(maxTokens, price.outputPerMillion));
  return Number(exact.round(0, Decimal.roundUp).toFixed(0));
}

/**
 * How many completion tokens `microLeft` pays for once a prompt of `promptTokens` is paid (the most a
 * call's `max_tokens` may be under a cost budget); 0 when not even the prompt is covered; infinite when
 * completions are free.
 */
export function affordableTokens(price: ModelPrice, microLeft: number, promptTokens: number): number {
  const left = new Decimal(String(microLeft)).minus(microOf(promptTokens, price.inputPerMillion));
  if (left.lte(0)) return 0;
  const output = new Decimal(price.outputPerMillion);
  if (output.eq(0)) return Number.POSITIVE_INFINITY;
  return Number(left.div(output).round(0, Decimal.roundDown).toFixed(0));
}

/** A decimal string of at most six decimal places (a cost limit) in micro-units. */
export function microOfAmount(amount: string): number {
  return Number(new Decimal(amount).times(new Decimal("1000000")).round(0, Decimal.roundDown).toFixed(0));
}
