import type { ModelPrice } from "../config/quotas.js";
import type { TotalCondition } from "../store/counters.js";
import { type Hold, holdAmounts, type namesOf, sum, within } from "./item.js";
import { affordableTokens, worstCaseMicro } from "./prices.js";

/**
 * How much a run holds in one write (docs/quotas.md "Reservations"). A model call needs its worst case
 * held (the prompt's estimate + `max_tokens`); when the day's budget is ample a run holds more, its
 * remaining calls' worst case, so the calls after it are granted from the hold without a write and
 * settled once. A hold bigger than one call's is taken only while it is at most
 * 1/{@link RUN_HOLD_SHARE} of what the limits leave (a condition of the same write), so runs sharing a
 * tight budget fall back to one call's hold each and none holds what another could use.
 */

/** A run hold is at most 1/RUN_HOLD_SHARE of what each limit leaves (after the write's settle). */
export const RUN_HOLD_SHARE = 10;

/** A run's own bounds, from its limits: the most model calls it makes and the most tokens it spends. */
export interface RunBounds {
  maxCycles: number;
  maxTotalTokens: number;
}

/** One call before it is made: its cycle (1-based), prompt estimate and the `max_tokens` asked for. */
export interface HoldCall {
  cycle: number;
  promptTokens: number;
  maxTokens: number;
}

/** One call's worst case: the prompt's estimate plus `maxTokens`, and that at the price (micro-units, rounded up). */
export function callHold(price: ModelPrice | undefined, promptTokens: number, maxTokens: number): Hold {
  const costMicro = price ? worstCaseMicro(price, promptTokens, maxTokens) : 0;
  return { tokens: promptTokens + maxTokens, costMicro };
}

/**
 * The hold of a run's remaining calls: this call's worst case times the calls left (MAX_CYCLES from this
 * cycle on, one at least: a summary call), at most MAX_TOTAL_TOKENS; its cost every token at the dearer
 * of the two prices. Null when it is no bigger than the call's own hold (or the run's bounds are unknown).
 */
export function runHold(
  price: ModelPrice | undefined,
  call: HoldCall,
  bounds: RunBounds | undefined,
): Hold | null {
  if (!bounds) return null;
  const one = call.promptTokens + call.maxTokens;
  const callsLeft = Math.max(1, bounds.maxCycles - call.cycle + 1);
  const tokens = Math.min(bounds.maxTotalTokens, one * callsLeft);
  if (tokens <= one) return null;
  const costMicro = price ? Math.max(worstCaseMicro(price, tokens, 0), worstCaseMicro(price, 0, tokens)) : 0;
  return { tokens, costMicro };
}

/**
 * The conditions of a write adding `delta` that holds `hold`: every limited total stays within its limit,
 * and with `shared` the hold is at most 1/{@link RUN_HOLD_SHARE} of what the limit leaves before it.
 * @param limits a limited total's name → its limit
 */
export function holdConditions(
  names: ReturnType<typeof namesOf>,
  limits: Readonly<Record<string, number>>,
  delta: Readonly<Record<string, number>>,
  hold: Hold,
  shared: boolean,
): TotalCondition[] {
  if (!shared) return within(limits, delta);
  const extra = Object.fromEntries(
    Object.entries(holdAmounts(names, hold)).map(([total, amount]) => [total, amount * (RUN_HOLD_SHARE - 1)]),
  );
  return within(limits, sum(delta, extra));
}

/**
 * The most completion tokens a call of `promptTokens` may still spend from a hold its run's earlier calls
 * have spent `spent` of: what is left of its tokens and what is left of its cost pays for (none left:
 * ≤ 0). A hold without cost (no price) bounds tokens alone.
 */
export function tokensLeftIn(
  price: ModelPrice | undefined,
  hold: Hold,
  spent: Hold,
  promptTokens: number,
): number {
  const tokens = hold.tokens - spent.tokens - promptTokens;
  if (!price || hold.costMicro === 0) return tokens;
  return Math.min(tokens, affordableTokens(price, hold.costMicro - spent.costMicro, promptTokens));
}
