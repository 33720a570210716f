/**
 * Token usage, one shape for every layer (a model call's, a cycle's, a run's; the provider's `usage`,
 * zeros when it sent none): the schema, its zero and its sum. Below every layer (the store keeps it,
 * the engine counts it, the runs layer reports it), so it imports none of them.
 */
import * as z from "zod";

/** Token counts: `promptTokens`, `completionTokens`, `totalTokens` (non-negative integers). */
export const TokenUsageSchema = z.object({
  promptTokens: z.number().int().nonnegative(),
  completionTokens: z.number().int().nonnegative(),
  totalTokens: z.number().int().nonnegative(),
});

/** Token counts, see {@link TokenUsageSchema}. */
export type TokenUsage = z.infer<typeof TokenUsageSchema>;

/** A new zero usage (a fresh object: callers may add into it). */
export function zeroUsage(): TokenUsage {
  return { promptTokens: 0, completionTokens: 0, totalTokens: 0 };
}

/** Adds `more` into `into` (mutated) and returns it. */
export function addUsage(into: TokenUsage, more: TokenUsage): TokenUsage {
  into.promptTokens += more.promptTokens;
  into.completionTokens += more.completionTokens;
  into.totalTokens += more.totalTokens;
  return into;
}

/** The sum of `usages` as a new usage (zero for none). */
export function sumUsage(usages: Iterable<TokenUsage>): TokenUsage {
  const sum = zeroUsage();
  for (const usage of usages) addUsage(sum, usage);
  return sum;
}
