/**
 * Configuration section: quotas, budgets and the price table (docs/quotas.md): the tenant's and each
 * user's limits, the model prices, and how a run waits for budget. Every limit is unset by default (no
 * limit); a tenant's own limits (`PUT /v1/limits`) replace these for it. The functions parse these at
 * cold start and the stack at synth with the same schemas (shared/config.ts `ConfigSchema`).
 */
import * as z from "zod/mini";
import { envInt, jsonEnv, optionalPositiveInt, optionalString } from "./env.js";
import { modelFields } from "./model-provider.js";
import { retentionFields } from "./retention.js";
import { runLimitsFields } from "./run-limits.js";
import { configSection, type SectionDocs } from "./section.js";

/**
 * A decimal amount in major units with at most 6 decimal places (the micro-unit every cost is counted
 * in), e.g. `"0.15"`, `"25"`, `"0.000150"`; no sign, no exponent, at most 12 integer digits.
 */
export const DECIMAL_AMOUNT = /^(?:0|[1-9]\d{0,11})(?:\.\d{1,6})?$/;

/** The message of a value that is not a {@link DECIMAL_AMOUNT}. */
const DECIMAL_RULE = 'must be a decimal string with at most 6 decimal places, e.g. "0.15" or "25.00"';

/**
 * A cost limit: a {@link DECIMAL_AMOUNT} of at most 9 integer digits. Limits are held and compared in
 * micro-units as JavaScript numbers (shared/quotas/prices.ts), exact only up to 2⁵³ (about 9.007 × 10⁹
 * currency units); 999 999 999.999999 is the largest limit whose every digit is kept.
 */
export const COST_LIMIT_AMOUNT = /^(?:0|[1-9]\d{0,8})(?:\.\d{1,6})?$/;

/** The rule of a {@link COST_LIMIT_AMOUNT}, phrased after "must be" (the API's messages leave that out). */
export const COST_LIMIT_RULE =
  'a decimal string of at most 9 integer digits and 6 decimal places, e.g. "25.00"';

/**
 * The largest value of each count limit (runs per UTC minute, runs in flight, tokens per UTC day), the
 * same for the deploy's variables here and a tenant's own limits (shared/quotas/limits.ts).
 */
export const COUNT_LIMIT_MAX = {
  runsPerMinute: 1_000_000,
  concurrentRuns: 100_000,
  tokensPerDay: 1_000_000_000_000,
} as const;

/** An optional positive integer limit read from an environment string, at most `max`; unset: no limit. */
const optionalLimit = optionalPositiveInt;

/** An optional positive decimal limit ({@link COST_LIMIT_AMOUNT}); unset: no limit. */
const optionalCost = z.pipe(
  optionalString,
  z.optional(
    z.string().check(
      z.regex(COST_LIMIT_AMOUNT, `must be ${COST_LIMIT_RULE}`),
      z.refine((value) => /[1-9]/.test(value), { message: "must be more than 0" }),
    ),
  ),
);

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
  jsonEnv,
  z.record(z.string().check(z.minLength(1), z.maxLength(256)), ModelPriceSchema).check(
    z.refine((table) => new Set(Object.values(table).map((price) => price.currency)).size <= 1, {
      message: "every model's currency must be the same (cost limits and usage are sums in it)",
    }),
  ),
);

/**
 * The quota section's variables, each with its schema:
 * - USER_RUNS_PER_MINUTE, TENANT_RUNS_PER_MINUTE (runs started in one UTC minute), TENANT_CONCURRENT_RUNS
 *   (runs in flight): admission limits, checked at the door of `POST /v1/runs` and MCP `tools/call`
 * - USER_TOKENS_PER_DAY, TENANT_TOKENS_PER_DAY (tokens in one UTC day, prompt + completion),
 *   USER_COST_PER_DAY, TENANT_COST_PER_DAY (decimal, in the price table's currency): held before every
 *   model call (a hold may cover a run's remaining calls), settled to the usage
 * - MODEL_PRICES: the price table (see {@link ModelPrices})
 * - MIN_COMPLETION_TOKENS (default 256): a model call is made only when at least this many completion
 *   tokens are left after the prompt's estimate; 256 holds a turn's tool calls or a short answer
 * - QUOTA_WAIT_SECONDS (default 86 400 s): how long a durable run waits in all for budget before it ends
 *   `quota_exceeded`; a day covers any daily window's reset
 */
export const quotaFields = {
  USER_RUNS_PER_MINUTE: optionalLimit(COUNT_LIMIT_MAX.runsPerMinute),
  TENANT_RUNS_PER_MINUTE: optionalLimit(COUNT_LIMIT_MAX.runsPerMinute),
  TENANT_CONCURRENT_RUNS: optionalLimit(COUNT_LIMIT_MAX.concurrentRuns),
  USER_TOKENS_PER_DAY: optionalLimit(COUNT_LIMIT_MAX.tokensPerDay),
  TENANT_TOKENS_PER_DAY: optionalLimit(COUNT_LIMIT_MAX.tokensPerDay),
  USER_COST_PER_DAY: optionalCost,
  TENANT_COST_PER_DAY: optionalCost,
  MODEL_PRICES: ModelPrices,
  MIN_COMPLETION_TOKENS: envInt(256, 1, 100_000),
  QUOTA_WAIT_SECONDS: envInt(86_400, 1, 31_536_000),
};

/** The section as parsed. */
type RawQuotas = z.output<ReturnType<typeof z.object<typeof quotaFields>>>;

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
 * could be costed and every run would be refused; MIN_COMPLETION_TOKENS must be at most each cap on a
 * call's `max_tokens` (`callCaps`: MODEL_MAX_TOKENS, and MAX_TOTAL_TOKENS, the run's whole budget), or
 * no call would ever be made and every run would end before its first; QUOTA_WAIT_SECONDS must be
 * shorter than RUN_TTL_SECONDS (`runTtlSeconds`), or a waiting run would outlive its record.
 */
export function quotaProblems(
  raw: RawQuotas,
  modelName: string,
  runTtlSeconds: number,
  callCaps: { MODEL_MAX_TOKENS: number; MAX_TOTAL_TOKENS: number },
): string[] {
  const problems: string[] = [];
  const costLimits = (["USER_COST_PER_DAY", "TENANT_COST_PER_DAY"] as const).filter((name) => raw[name]);
  if (costLimits.length > 0 && !raw.MODEL_PRICES[modelName]) {
    problems.push(
      `${costLimits.join(" and ")} ${costLimits.length > 1 ? "need" : "needs"} a price for the model ${modelName} in MODEL_PRICES: without it no call can be costed, and every run would be refused.`,
    );
  }
  for (const [name, cap] of Object.entries(callCaps)) {
    if (raw.MIN_COMPLETION_TOKENS > cap) {
      problems.push(
        `MIN_COMPLETION_TOKENS (${raw.MIN_COMPLETION_TOKENS} tokens) must be at most ${name} (${cap} tokens): every call's max_tokens is at most ${name}, so no model call would ever be made.`,
      );
    }
  }
  if (raw.QUOTA_WAIT_SECONDS >= runTtlSeconds) {
    problems.push(
      `QUOTA_WAIT_SECONDS (${raw.QUOTA_WAIT_SECONDS} s) must be less than RUN_TTL_SECONDS (${runTtlSeconds} s): a run waiting for budget would outlive its run record.`,
    );
  }
  return problems;
}

/**
 * The quota section: `quotas` ({@link QuotaConfig}); its rules read the model name calls are priced by
 * (OPENAI_MODEL, or BEDROCK_MODEL_ID on Bedrock) and RUN_TTL_SECONDS.
 */
export const quotaSection = configSection({
  fields: quotaFields,
  reads: {
    MODEL_PROVIDER: modelFields.MODEL_PROVIDER,
    OPENAI_MODEL: modelFields.OPENAI_MODEL,
    BEDROCK_MODEL_ID: modelFields.BEDROCK_MODEL_ID,
    RUN_TTL_SECONDS: retentionFields.RUN_TTL_SECONDS,
    MODEL_MAX_TOKENS: modelFields.MODEL_MAX_TOKENS,
    MAX_TOTAL_TOKENS: runLimitsFields.MAX_TOTAL_TOKENS,
  },
  config: (env): { quotas: QuotaConfig } => ({ quotas: quotaConfigOf(env) }),
  problems: (env) =>
    quotaProblems(
      env,
      env.MODEL_PROVIDER === "bedrock" ? env.BEDROCK_MODEL_ID : env.OPENAI_MODEL,
      env.RUN_TTL_SECONDS,
      { MODEL_MAX_TOKENS: env.MODEL_MAX_TOKENS, MAX_TOTAL_TOKENS: env.MAX_TOTAL_TOKENS },
    ),
});

/** The prose of the quota section's variables (docs/configuration.md). */
export const quotaDocs: SectionDocs<typeof quotaFields> = {
  USER_RUNS_PER_MINUTE: {
    group: "Quotas and cost",
    unit: "runs",
    description:
      "Runs (and MCP tool calls) one user may start in one UTC minute; over it `POST /v1/runs` answers 429 `RATE_LIMITED` with `Retry-After` and the `RateLimit` fields, MCP a tool error (docs/quotas.md). Unset: no limit. A tenant's own limits (`PUT /v1/limits`, `npm run tenant`) replace it. Deploy setting `userRunsPerMinute`.",
  },
  TENANT_RUNS_PER_MINUTE: {
    group: "Quotas and cost",
    unit: "runs",
    description:
      "Runs (and MCP tool calls) all of a tenant's users may start in one UTC minute, as USER_RUNS_PER_MINUTE. Deploy setting `tenantRunsPerMinute`.",
  },
  TENANT_CONCURRENT_RUNS: {
    group: "Quotas and cost",
    unit: "runs",
    description:
      "Runs of a tenant in flight at once (synchronous, durable ones until they end, waits included, and MCP tool calls while they run); over it 429 `RATE_LIMITED`. Deploy setting `tenantConcurrentRuns`.",
  },
  USER_TOKENS_PER_DAY: {
    group: "Quotas and cost",
    unit: "tokens",
    description:
      "Tokens (prompt + completion) one user's runs may use in one UTC day. No model call is made without a hold covering its worst case (the prompt's estimate + its `max_tokens`; while the day's budget is ample, one hold covers the run's remaining calls: docs/quotas.md \"Reservations\"), settled to the reported usage; a call that cannot be covered is not made: a synchronous run ends `quota_exceeded`, a durable one waits (`awaiting_quota`). Deploy setting `userTokensPerDay`.",
  },
  TENANT_TOKENS_PER_DAY: {
    group: "Quotas and cost",
    unit: "tokens",
    description:
      "Tokens all of a tenant's runs may use in one UTC day, as USER_TOKENS_PER_DAY. Deploy setting `tenantTokensPerDay`.",
  },
  USER_COST_PER_DAY: {
    group: "Quotas and cost",
    description:
      "Model cost one user's runs may reach in one UTC day: a decimal string in the price table's currency (`\"5.00\"`), reserved and settled with the tokens. Needs a price for the configured model in MODEL_PRICES. Deploy setting `userCostPerDay`.",
  },
  TENANT_COST_PER_DAY: {
    group: "Quotas and cost",
    description:
      "Model cost all of a tenant's runs may reach in one UTC day, as USER_COST_PER_DAY. Deploy setting `tenantCostPerDay`.",
  },
  MODEL_PRICES: {
    group: "Quotas and cost",
    description:
      'The price table: JSON from a model name (as sent: OPENAI_MODEL, or BEDROCK_MODEL_ID) to `{"inputPerMillion": "0.15", "outputPerMillion": "0.60", "currency": "USD"}` (decimal strings per million tokens, one currency for the table). Each model call\'s cost is exact (integer arithmetic), rounded half-up to 6 decimal places; a run\'s and a day\'s are their sums. A model without a price: `cost: null` and a `costNote`. Deploy setting `modelPrices`.',
  },
  MIN_COMPLETION_TOKENS: {
    group: "Quotas and cost",
    unit: "tokens",
    description:
      "Every model call sets `max_tokens` to the smallest of MODEL_MAX_TOKENS and what the run's and the quotas' budgets leave after the prompt's estimate; below this many the call is not made (`budget_exceeded` for the run's own budget, `quota_exceeded` for a quota). 256 holds a turn's tool calls or a short answer. At most MODEL_MAX_TOKENS and MAX_TOTAL_TOKENS (checked at cold start and at synth), or no call could ever be made. Deploy setting `minCompletionTokens`.",
  },
  QUOTA_WAIT_SECONDS: {
    group: "Quotas and cost",
    unit: "s",
    description:
      "How long a durable run waits for budget, in all, before it ends `quota_exceeded`; it resumes by itself when the window resets or a tenant's limit is raised (a durable wait, no polling). A day covers any daily window. Counts into the runner's durable execution timeout. Deploy setting `quotaWaitSeconds`.",
  },
};
