import * as z from "zod/mini";

/**
 * The quota and cost section of the environment (docs/quotas.md): the tenant's and each user's limits,
 * the model price table, and how a run waits for budget. Its variables join `ConfigSchema`
 * (shared/config.ts), so the functions parse them at cold start and the stack at synth with the same
 * schema; every limit is unset by default (no limit). zod/mini, as the rest of the cold-start schema.
 */

/**
 * A decimal amount in major units with at most 6 decimal places (the micro-unit every cost is counted
 * in), e.g. `"0.15"`, `"25"`, `"0.000150"`; no sign, no exponent, at most 12 integer digits.
 */
export const DECIMAL_AMOUNT = /^(?:0|[1-9]\d{0,11})(?:\.\d{1,6})?$/;

/** The message of a value that is not a {@link DECIMAL_AMOUNT}. */
const DECIMAL_RULE = 'must be a decimal string with at most 6 decimal places, e.g. "0.15" or "25.00"';

/** Turns an empty string (an unset variable in many shells and .env files) into undefined. */
const blank = z.transform((value: string | undefined) =>
  value === undefined || value.trim() === "" ? undefined : value.trim(),
);

/** An optional positive integer limit read from an environment string, at most `max`; unset: no limit. */
function optionalLimit(max: number) {
  return z.pipe(
    z.pipe(z.optional(z.string()), blank),
    z.optional(
      z.pipe(
        z.pipe(z.string().check(z.regex(/^\d+$/, "must be a whole number")), z.transform(Number)),
        z.number().check(z.int(), z.positive(), z.maximum(max)),
      ),
    ),
  );
}

/** An optional positive decimal limit ({@link DECIMAL_AMOUNT}); unset: no limit. */
const optionalCost = z.pipe(
  z.pipe(z.optional(z.string()), blank),
  z.optional(
    z.string().check(
      z.regex(DECIMAL_AMOUNT, DECIMAL_RULE),
      z.refine((value) => /[1-9]/.test(value), { message: "must be more than 0" }),
    ),
  ),
);

/** An integer read from an environment string, within [min, max], with a default. */
function envInt(defaultValue: number, min: number, max: number) {
  return z._default(z.coerce.number().check(z.int(), z.minimum(min), z.maximum(max)), defaultValue);
}

/** One model's prices: input and output tokens per million, decimal strings, and their currency. */
export const ModelPriceSchema = z.strictObject({
  inputPerMillion: z.string().check(z.regex(DECIMAL_AMOUNT, DECIMAL_RULE)),
  outputPerMillion: z.string().check(z.regex(DECIMAL_AMOUNT, DECIMAL_RULE)),
  currency: z.string().check(z.regex(/^[A-Z]{3}$/, "must be an ISO 4217 currency code, e.g. USD")),
});

/** One model's prices, see {@link ModelPriceSchema}. */
export type ModelPrice = z.infer<typeof ModelPriceSchema>;

/**
 * MODEL_PRICES: JSON object from a model name (as sent: OPENAI_MODEL, or BEDROCK_MODEL_ID) to its
 * {@link ModelPrice}; one currency for the whole table (cost limits and usage are sums in it). Unset or
 * empty: no prices (every run's cost is null, with a note naming the model).
 */
const ModelPrices = z.pipe(
  z.pipe(
    z.optional(z.string()),
    z.transform((value, ctx) => {
      if (value === undefined || value.trim() === "") return {};
      try {
        return JSON.parse(value) as unknown;
      } catch {
        ctx.issues.push({ code: "custom", message: "must be a JSON object", input: value });
        return z.NEVER;
      }
    }),
  ),
  z.record(z.string().check(z.minLength(1), z.maxLength(256)), ModelPriceSchema).check(
    z.refine((table) => new Set(Object.values(table).map((price) => price.currency)).size <= 1, {
      message: "every model's currency must be the same (cost limits and usage are sums in it)",
    }),
  ),
);

/**
 * The variables of the section, each with its schema (spread into `ConfigSchema`):
 * - USER_RUNS_PER_MINUTE, TENANT_RUNS_PER_MINUTE (runs started in one UTC minute), TENANT_CONCURRENT_RUNS
 *   (runs in flight): admission limits, checked at the door of `POST /v1/runs` and MCP `tools/call`
 * - USER_TOKENS_PER_DAY, TENANT_TOKENS_PER_DAY (tokens in one UTC day, prompt + completion),
 *   USER_COST_PER_DAY, TENANT_COST_PER_DAY (decimal, in the price table's currency): reserved before
 *   every model call
 * - MODEL_PRICES: the price table (see {@link ModelPrices})
 * - MIN_COMPLETION_TOKENS (default 256): a model call is made only when at least this many completion
 *   tokens are left after the prompt's estimate; 256 holds a turn's tool calls or a short answer
 * - QUOTA_WAIT_SECONDS (default 86 400 s): how long a durable run waits in all for budget before it ends
 *   `quota_exceeded`; a day covers any daily window's reset
 */
export const QUOTA_ENV = {
  USER_RUNS_PER_MINUTE: optionalLimit(1_000_000),
  TENANT_RUNS_PER_MINUTE: optionalLimit(1_000_000),
  TENANT_CONCURRENT_RUNS: optionalLimit(100_000),
  USER_TOKENS_PER_DAY: optionalLimit(1_000_000_000_000),
  TENANT_TOKENS_PER_DAY: optionalLimit(1_000_000_000_000),
  USER_COST_PER_DAY: optionalCost,
  TENANT_COST_PER_DAY: optionalCost,
  MODEL_PRICES: ModelPrices,
  MIN_COMPLETION_TOKENS: envInt(256, 1, 100_000),
  QUOTA_WAIT_SECONDS: envInt(86_400, 1, 31_536_000),
};

/** The section as parsed. */
type RawQuotas = z.output<ReturnType<typeof z.object<typeof QUOTA_ENV>>>;

/**
 * The limits of one tenant and of each of its users; null means no limit. Runs per UTC minute, runs in
 * flight, tokens per UTC day, and cost per UTC day (a decimal string in the price table's currency).
 */
export interface QuotaLimits {
  tenant: {
    runsPerMinute: number | null;
    concurrentRuns: number | null;
    tokensPerDay: number | null;
    costPerDay: string | null;
  };
  user: { runsPerMinute: number | null; tokensPerDay: number | null; costPerDay: string | null };
}

/**
 * The quota section of `Config`: `limits`, the deploy's defaults (a tenant's overrides replace them,
 * shared/quotas/limits.ts); `prices` by model name; `minCompletionTokens`; `waitSeconds`, how long a
 * durable run may wait for budget in all.
 */
export interface QuotaConfig {
  limits: QuotaLimits;
  prices: Readonly<Record<string, ModelPrice>>;
  minCompletionTokens: number;
  waitSeconds: number;
}

/** The section of a parsed environment in the shape of {@link QuotaConfig}. */
export function quotaConfigOf(raw: RawQuotas): QuotaConfig {
  return {
    limits: {
      tenant: {
        runsPerMinute: raw.TENANT_RUNS_PER_MINUTE ?? null,
        concurrentRuns: raw.TENANT_CONCURRENT_RUNS ?? null,
        tokensPerDay: raw.TENANT_TOKENS_PER_DAY ?? null,
        costPerDay: raw.TENANT_COST_PER_DAY ?? null,
      },
      user: {
        runsPerMinute: raw.USER_RUNS_PER_MINUTE ?? null,
        tokensPerDay: raw.USER_TOKENS_PER_DAY ?? null,
        costPerDay: raw.USER_COST_PER_DAY ?? null,
      },
    },
    prices: raw.MODEL_PRICES,
    minCompletionTokens: raw.MIN_COMPLETION_TOKENS,
    waitSeconds: raw.QUOTA_WAIT_SECONDS,
  };
}

/**
 * The section's rules between variables, one sentence per broken rule: a cost limit needs a price for
 * the model the functions call (`modelName`: OPENAI_MODEL, or BEDROCK_MODEL_ID on Bedrock), or no call
 * could be costed and every run would be refused; QUOTA_WAIT_SECONDS must be shorter than
 * RUN_TTL_SECONDS (`runTtlSeconds`), or a waiting run would outlive its record.
 */
export function quotaProblems(raw: RawQuotas, modelName: string, runTtlSeconds: number): string[] {
  const problems: string[] = [];
  const costLimits = (["USER_COST_PER_DAY", "TENANT_COST_PER_DAY"] as const).filter((name) => raw[name]);
  if (costLimits.length > 0 && !raw.MODEL_PRICES[modelName]) {
    problems.push(
      `${costLimits.join(" and ")} need a price for the model ${modelName} in MODEL_PRICES: without it no call can be costed, and every run would be refused.`,
    );
  }
  if (raw.QUOTA_WAIT_SECONDS >= runTtlSeconds) {
    problems.push(
      `QUOTA_WAIT_SECONDS (${raw.QUOTA_WAIT_SECONDS} s) must be less than RUN_TTL_SECONDS (${runTtlSeconds} s): a run waiting for budget would outlive its run record.`,
    );
  }
  return problems;
}
