import type { ModelPrice } from "../config/quotas.js";
import { microOf } from "../money/micro.js";

/**
 * The cost of model calls from the price table (MODEL_PRICES, docs/quotas.md "Cost"), exactly. Every
 * amount is counted in **micro-units** of the table's currency (10⁻⁶: six decimal places), as an
 * integer: a price per million tokens times a token count *is* an amount in micro-units, so
 * `tokens × pricePerMillion` needs no division. A price has at most six decimal places (its schema), so
 * × 10⁶ it is a whole number: the products are exact integers (BigInt), rounded once at the end. They run
 * around every model call (its cost, what is left of its run's hold), where big.js would cost tens of µs a
 * call.
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

/** 10⁶: a price per million tokens (≤ 6 decimal places) times this is a whole number. */
const SCALE = 1_000_000n;

/** A price's per-million amounts × 10⁶, exact integers, parsed once per price table entry. */
const scaledByPrice = new WeakMap<ModelPrice, { input: bigint; output: bigint }>();

/** The price's amounts × 10⁶ (see {@link scaledByPrice}). */
function scaledOf(price: ModelPrice): { input: bigint; output: bigint } {
  let found = scaledByPrice.get(price);
  if (!found) {
    found = { input: microOf(price.inputPerMillion), output: microOf(price.outputPerMillion) };
    scaledByPrice.set(price, found);
  }
  return found;
}

/** `prompt × inputPerMillion + completion × outputPerMillion`: micro-units × 10⁶, exact. */
function exactOf(price: ModelPrice, promptTokens: number, completionTokens: number): bigint {
  const { input, output } = scaledOf(price);
  return BigInt(promptTokens) * input + BigInt(completionTokens) * output;
}

/**
 * One call's cost in micro-units: `promptTokens × inputPerMillion + completionTokens × outputPerMillion`,
 * exact, rounded half-up to a whole micro-unit.
 */
export function callCostMicro(
  price: ModelPrice,
  usage: { promptTokens: number; completionTokens: number },
): number {
  const exact = exactOf(price, usage.promptTokens, usage.completionTokens);
  return Number((exact + SCALE / 2n) / SCALE);
}

/**
 * The most a call can cost, in micro-units rounded up: the prompt's estimate at the input price plus
 * `maxTokens` completion tokens at the output price.
 */
export function worstCaseMicro(price: ModelPrice, promptTokens: number, maxTokens: number): number {
  return Number((exactOf(price, promptTokens, maxTokens) + SCALE - 1n) / SCALE);
}

/**
 * How many completion tokens `microLeft` pays for once a prompt of `promptTokens` is paid (the most a
 * call's `max_tokens` may be under a cost budget); 0 when not even the prompt is covered; infinite when
 * completions are free.
 */
export function affordableTokens(price: ModelPrice, microLeft: number, promptTokens: number): number {
  const left = BigInt(Math.floor(microLeft)) * SCALE - exactOf(price, promptTokens, 0);
  if (left <= 0n) return 0;
  const { output } = scaledOf(price);
  if (output === 0n) return Number.POSITIVE_INFINITY;
  return Number(left / output);
}
