/**
 * A cost from the price table (docs/quotas.md): one schema wherever a cost is computed, stored or shown
 * (the engine's outcome, the run store's records and steps, the HTTP contract's `Cost`). Below every
 * layer that uses it, so the store can keep it without importing the engine.
 */
import * as z from "zod";

/**
 * A cost: `amount` a decimal string with exactly six decimal places (`"0.012345"`; micro-units, so not
 * the currency's minor units of ./money.ts `MoneyValueSchema`), `currency` an ISO 4217 code. Strict: an
 * object with a field it does not name fails the parse.
 */
export const CostSchema = z
  .object({ amount: z.string().regex(/^-?\d+\.\d{6}$/), currency: z.string().regex(/^[A-Z]{3}$/) })
  .strict();

/** A cost, see {@link CostSchema}. */
export type Cost = z.infer<typeof CostSchema>;
