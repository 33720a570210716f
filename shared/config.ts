import { z } from "zod";

/** Turns an empty string (an unset variable in many shells and .env files) into undefined. */
const optionalString = z
  .string()
  .optional()
  .transform((value) => (value === undefined || value.trim() === "" ? undefined : value.trim()));

/** A positive integer read from an environment string, with a default. */
function positiveInt(defaultValue: number, max: number) {
  return z.coerce.number().int().positive().max(max).default(defaultValue);
}

/** A boolean read from an environment string: "true"/"1" or "false"/"0"; unset or empty gives the default. */
function envBoolean(defaultValue: boolean) {
  return optionalString
    .pipe(z.enum(["true", "false", "1", "0"]).optional())
    .transform((value) => (value === undefined ? defaultValue : value === "true" || value === "1"));
}

/**
 * The environment the service reads, once, at cold start. This schema is the single source of truth
 * for variable names, defaults and bounds; infra/ and `.env.example` take their names from it.
 *
 * Limits and where they come from:
 * - MAX_CYCLES (default 5): the design card's default cycle cap per run.
 * - RUN_TIMEOUT_MS (default 25000 ms): below API Gateway's 29 s integration timeout.
 * - DEADLINE_RESERVE_MS (default 1500 ms): time kept back from the Lambda's remaining time to persist
 *   the outcome and answer.
 * - IDEMPOTENCY_TTL_SECONDS (default 86400 s = 24 h): retention of an Idempotency-Key record (issue 4);
 *   written as the epoch-seconds `ttl` attribute, and checked by every condition because DynamoDB's TTL
 *   deletion lags (up to days).
 * - IDEMPOTENCY_KEY_REQUIRED (default false): when true, `POST /v1/runs` without an Idempotency-Key is a 400.
 */
export const ConfigSchema = z.object({
  OPENAI_API_KEY: optionalString,
  OPENAI_BASE_URL: optionalString.pipe(z.url().optional()),
  OPENAI_MODEL: z.string().min(1).default("gpt-4o-mini"),
  TABLE_NAME: z.string().min(3).max(255).default("boundloop"),
  DYNAMODB_ENDPOINT: optionalString.pipe(z.url().optional()),
  AWS_REGION: z.string().min(1).default("us-east-1"),
  MAX_CYCLES: positiveInt(5, 50),
  RUN_TIMEOUT_MS: positiveInt(25_000, 900_000),
  DEADLINE_RESERVE_MS: z.coerce.number().int().min(0).max(60_000).default(1_500),
  IDEMPOTENCY_TTL_SECONDS: positiveInt(86_400, 31_536_000),
  IDEMPOTENCY_KEY_REQUIRED: envBoolean(false),
});

/** The parsed environment, see {@link ConfigSchema}. */
export type RawConfig = z.infer<typeof ConfigSchema>;

/**
 * Service configuration in the shapes the code uses.
 * - `model`: OpenAI-compatible endpoint; `apiKey` undefined means "no key configured".
 * - `table`: DynamoDB table name and optional endpoint override (DynamoDB Local, dynalite).
 * - `limits`: server-side caps for a run; `runTimeoutMs` and `deadlineReserveMs` in ms.
 * - `idempotency`: `ttlSeconds` (record retention, s) and `keyRequired` (Idempotency-Key header mandatory).
 */
export interface Config {
  model: { apiKey: string | undefined; baseURL: string | undefined; name: string };
  table: { name: string; endpoint: string | undefined; region: string };
  limits: { maxCycles: number; runTimeoutMs: number; deadlineReserveMs: number };
  idempotency: { ttlSeconds: number; keyRequired: boolean };
}

/** Raised at cold start when the environment does not satisfy {@link ConfigSchema}. */
export class ConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = new.target.name;
  }
}

/**
 * Parses the environment into a {@link Config}.
 * @param env a process.env-like record (defaults to `process.env`)
 * @throws ConfigError naming every invalid variable and why
 * @example loadConfig({ TABLE_NAME: "boundloop-dev", MAX_CYCLES: "3" })
 */
export function loadConfig(env: Record<string, string | undefined> = process.env): Config {
  const parsed = ConfigSchema.safeParse(env);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((issue) => `${issue.path.join(".")}: ${issue.message}`);
    throw new ConfigError(`Invalid configuration: ${problems.join("; ")}`);
  }
  const raw = parsed.data;
  return {
    model: { apiKey: raw.OPENAI_API_KEY, baseURL: raw.OPENAI_BASE_URL, name: raw.OPENAI_MODEL },
    table: { name: raw.TABLE_NAME, endpoint: raw.DYNAMODB_ENDPOINT, region: raw.AWS_REGION },
    limits: {
      maxCycles: raw.MAX_CYCLES,
      runTimeoutMs: raw.RUN_TIMEOUT_MS,
      deadlineReserveMs: raw.DEADLINE_RESERVE_MS,
    },
    idempotency: { ttlSeconds: raw.IDEMPOTENCY_TTL_SECONDS, keyRequired: raw.IDEMPOTENCY_KEY_REQUIRED },
  };
}
