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

/** A comma separated list of claim names ("tenant_id,custom:tenant_id"), trimmed, at least one. */
function claimList(defaultValue: string) {
  return optionalString
    .transform((value) =>
      (value ?? defaultValue)
        .split(",")
        .map((name) => name.trim())
        .filter((name) => name.length > 0),
    )
    .pipe(
      z.array(z.string().regex(/^[A-Za-z0-9:_.-]{1,128}$/, "claim names are A-Z a-z 0-9 : _ . -")).min(1),
    );
}

/**
 * IAM_PRINCIPAL_TENANTS: JSON object from an IAM principal ARN (a user ARN, or an assumed-role ARN
 * without its session name) to the tenant and permissions that principal acts with.
 */
const IamPrincipalTenants = z
  .string()
  .optional()
  .transform((value, ctx) => {
    if (value === undefined || value.trim() === "") return {};
    try {
      return JSON.parse(value) as unknown;
    } catch {
      ctx.addIssue({ code: "custom", message: "must be a JSON object" });
      return z.NEVER;
    }
  })
  .pipe(
    z.record(
      z.string().regex(/^arn:aws[a-z-]*:(iam|sts)::\d{12}:/, "keys must be IAM user or assumed-role ARNs"),
      z
        .object({
          tenantId: z.string().regex(/^[A-Za-z0-9_-]{1,64}$/),
          permissions: z.array(z.string().min(1).max(128)).default([]),
        })
        .strict(),
    ),
  );

/**
 * The environment the service reads, once, at cold start. This schema is the single source of truth
 * for variable names, defaults and bounds; infra/ and `.env.example` take their names from it.
 *
 * Limits and where they come from:
 * - MAX_CYCLES (default 5): the design card's default cycle cap per run.
 * - RUN_TIMEOUT_MS (default 25000 ms): below API Gateway's 29 s integration timeout.
 * - DEADLINE_RESERVE_MS (default 1500 ms): time kept back from the Lambda's remaining time to persist
 *   the outcome and answer.
 * - RUN_TTL_SECONDS (default 2592000 s = 30 days): how long run records and their audit steps live
 *   before DynamoDB TTL removes them. Long enough to answer a dispute or support ticket within a monthly
 *   billing cycle; short enough not to keep model-generated text (tool arguments, answers) for good.
 *   The ledger's invoices never expire: they are the business record, runs are the operational one.
 * - MAX_BODY_BYTES (default 65536): request body cap; a prompt of 8000 characters is at most 48 KB of
 *   JSON even with every character \u-escaped.
 * - DYNAMODB_REQUEST_TIMEOUT_MS (default 3000 ms): per-attempt socket timeout of DynamoDB calls, so an
 *   unreachable table answers 503 STORE_UNAVAILABLE instead of hanging until the Lambda times out.
 * - OPENAI_API_KEY_SECRET_NAME: in AWS, the Secrets Manager secret holding the OpenAI key (read
 *   lazily on the first model call, cached). Mutually exclusive with OPENAI_API_KEY.
 * - TENANT_CLAIMS / PERMISSION_CLAIMS: which authorizer claims carry the tenant (first present wins)
 *   and the permissions (all are merged).
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
  OPENAI_API_KEY_SECRET_NAME: optionalString.pipe(
    z
      .string()
      .regex(/^[A-Za-z0-9/_+=.@:-]{1,2048}$/, "must be a Secrets Manager secret name or ARN")
      .optional(),
  ),
  SECRET_CACHE_SECONDS: z.coerce.number().int().min(0).max(86_400).default(300),
  TENANT_CLAIMS: claimList("tenant_id,custom:tenant_id"),
  PERMISSION_CLAIMS: claimList("scope,permissions,cognito:groups"),
  IAM_PRINCIPAL_TENANTS: IamPrincipalTenants,
  RUN_TTL_SECONDS: z.coerce
    .number()
    .int()
    .min(3_600)
    .max(3_650 * 86_400)
    .default(30 * 86_400),
  MAX_BODY_BYTES: z.coerce
    .number()
    .int()
    .min(1_024)
    .max(6 * 1024 * 1024)
    .default(65_536),
  DYNAMODB_REQUEST_TIMEOUT_MS: positiveInt(3_000, 60_000),
  POWERTOOLS_SERVICE_NAME: z.string().min(1).max(255).default("boundloop"),
  POWERTOOLS_METRICS_NAMESPACE: z.string().min(1).max(255).default("boundloop"),
  POWERTOOLS_LOG_LEVEL: z
    .string()
    .default("INFO")
    .transform((value) => value.trim().toUpperCase())
    .pipe(z.enum(["TRACE", "DEBUG", "INFO", "WARN", "ERROR", "CRITICAL", "SILENT"])),
});

/** The parsed environment, see {@link ConfigSchema}. */
export type RawConfig = z.infer<typeof ConfigSchema>;

/**
 * Service configuration in the shapes the code uses.
 * - `model`: OpenAI-compatible endpoint; `apiKey` undefined means "no key configured".
 * - `table`: DynamoDB table name and optional endpoint override (DynamoDB Local, dynalite).
 * - `limits`: server-side caps for a run; `runTimeoutMs` and `deadlineReserveMs` in ms.
 * - `identity`: claim names and the IAM principal → tenant mapping (see shared/identity.ts).
 * - `runs`: audit trail retention (`ttlSeconds`).
 * - `http`: request body cap in bytes.
 * - `observability`: Powertools service name, metrics namespace, log level.
 */
export interface Config {
  model: {
    apiKey: string | undefined;
    apiKeySecretName: string | undefined;
    secretCacheSeconds: number;
    baseURL: string | undefined;
    name: string;
  };
  table: { name: string; endpoint: string | undefined; region: string; requestTimeoutMs: number };
  limits: { maxCycles: number; runTimeoutMs: number; deadlineReserveMs: number };
  identity: {
    tenantClaims: string[];
    permissionClaims: string[];
    iamPrincipals: Record<string, { tenantId: string; permissions: string[] }>;
  };
  runs: { ttlSeconds: number };
  http: { maxBodyBytes: number };
  observability: { serviceName: string; metricsNamespace: string; logLevel: ObservabilityLogLevel };
}

/** Log levels Powertools Logger accepts (POWERTOOLS_LOG_LEVEL). */
export type ObservabilityLogLevel = RawConfig["POWERTOOLS_LOG_LEVEL"];

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
  if (raw.OPENAI_API_KEY && raw.OPENAI_API_KEY_SECRET_NAME) {
    throw new ConfigError(
      "Invalid configuration: set OPENAI_API_KEY (local) or OPENAI_API_KEY_SECRET_NAME (AWS), not both.",
    );
  }
  return {
    model: {
      apiKey: raw.OPENAI_API_KEY,
      apiKeySecretName: raw.OPENAI_API_KEY_SECRET_NAME,
      secretCacheSeconds: raw.SECRET_CACHE_SECONDS,
      baseURL: raw.OPENAI_BASE_URL,
      name: raw.OPENAI_MODEL,
    },
    table: {
      name: raw.TABLE_NAME,
      endpoint: raw.DYNAMODB_ENDPOINT,
      region: raw.AWS_REGION,
      requestTimeoutMs: raw.DYNAMODB_REQUEST_TIMEOUT_MS,
    },
    limits: {
      maxCycles: raw.MAX_CYCLES,
      runTimeoutMs: raw.RUN_TIMEOUT_MS,
      deadlineReserveMs: raw.DEADLINE_RESERVE_MS,
    },
    identity: {
      tenantClaims: raw.TENANT_CLAIMS,
      permissionClaims: raw.PERMISSION_CLAIMS,
      iamPrincipals: raw.IAM_PRINCIPAL_TENANTS,
    },
    runs: { ttlSeconds: raw.RUN_TTL_SECONDS },
    http: { maxBodyBytes: raw.MAX_BODY_BYTES },
    observability: {
      serviceName: raw.POWERTOOLS_SERVICE_NAME,
      metricsNamespace: raw.POWERTOOLS_METRICS_NAMESPACE,
      logLevel: raw.POWERTOOLS_LOG_LEVEL,
    },
  };
}
