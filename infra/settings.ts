import type { IConstruct } from "constructs";
import { z } from "zod";
import { ignoredByProvider, providerIgnoresMessage } from "../shared/config/model-provider.js";
import {
  ConfigError,
  ConfigSchema,
  DEFAULT_BEDROCK_MODEL_ID,
  loadConfig,
  type ModelProvider,
  type RawConfig,
} from "../shared/config.js";
import { describeIssues, policyIssuesSync } from "../shared/policies/check.js";
import { EXECUTION_TIMEOUT_SOURCE, runnerExecutionTimeoutSeconds } from "./execution-timeout.js";
import type { DeployedFunction, FunctionEnvName } from "./function-env.js";
import { unknownSettingIssues } from "./unknown-settings.js";

/** Id of the synth warning raised when `runTimeoutMs` is above what the API function's timeout allows. */
export const RUN_TIMEOUT_CAPPED_WARNING_ID = "boundloop:runTimeoutCapped";

/** Id of the synth warning raised when `tracing` is `adot`: the stack attaches no layer itself. */
export const TRACING_ADOT_WARNING_ID = "boundloop:tracingAdotLayerNotAttached";

/** A variable of shared/config.ts a deploy setting may set: any the functions read but the stack's own. */
export type RuntimeEnvName = Exclude<
  FunctionEnvName,
  | "TABLE_NAME"
  | "DYNAMODB_ENDPOINT"
  | "RUNNER_FUNCTION_ARN"
  | "DURABLE_EXECUTION_TIMEOUT_SECONDS"
  | "JWT_ISSUER"
  | "JWT_AUDIENCE"
  | "OPENAI_API_KEY_SECRET_NAME"
  | "POWERTOOLS_SERVICE_NAME"
  | "POWERTOOLS_METRICS_NAMESPACE"
  | "NODE_OPTIONS"
>;

/**
 * A runtime setting a deployment may change: the CDK context key (`-c key=value`, cdk.json `context`, or
 * the stack prop of the same name), the config variable it becomes, and the deployed functions that read
 * that variable (and so get it). The value is validated at synth by that variable's own schema in
 * shared/config.ts `ConfigSchema`, the one the functions parse at cold start, and the whole set by
 * `loadConfig` (its cross-field checks included). Adding a setting is one entry here.
 */
export interface RuntimeSetting {
  context: string;
  env: RuntimeEnvName;
  functions: readonly DeployedFunction[];
}

/**
 * Read by the API function only (synchronous runs, the HTTP edge; durable runs get these in their input)
 * and by the streaming function, which serves the same app (infra/stack.ts).
 */
const API = ["api"] as const;
/** Read by both: the API function's synchronous runs and the durable runner's runs. */
const BOTH = ["api", "runner"] as const;

/**
 * Every runtime setting a user may want on AWS (docs/deploy.md, "Runtime settings"; the variables'
 * bounds and defaults are in docs/configuration.md). Not here, on purpose: the table, the runner's ARN and
 * the durable execution timeout (the stack's own: the timeout follows `asyncRunTimeoutMs` and
 * `approvalTimeoutSeconds`), the key's secret (`openaiApiKeySecretName`), DynamoDB endpoint and region,
 * the Bedrock endpoint (the stack's Region's), and IAM_PRINCIPAL_TENANTS (the stack has no function URL).
 * `mcpResourceUrl` is optional: without it the stack gives `/mcp` its HTTP API's own URL + `/mcp`
 * (infra/stack.ts); give it when a custom domain or a proxy fronts the API. `jwtJwksUrl` (own issuer only):
 * where `/mcp` and the streaming function read the keys, when not at `<jwtIssuer>/.well-known/jwks.json`.
 * `modelProvider` defaults to `bedrock` on a personal deploy ({@link readDeploySettings}); with
 * `bedrock`, `bedrockModelId` is also the one model the roles may invoke (infra/bedrock-access.ts).
 */
export const RUNTIME_SETTINGS = [
  { context: "modelProvider", env: "MODEL_PROVIDER", functions: BOTH },
  { context: "bedrockModelId", env: "BEDROCK_MODEL_ID", functions: BOTH },
  { context: "openaiModel", env: "OPENAI_MODEL", functions: BOTH },
  { context: "openaiBaseUrl", env: "OPENAI_BASE_URL", functions: BOTH },
  { context: "modelMaxTokens", env: "MODEL_MAX_TOKENS", functions: BOTH },
  { context: "systemPrompt", env: "SYSTEM_PROMPT", functions: BOTH },
  { context: "secretCacheSeconds", env: "SECRET_CACHE_SECONDS", functions: BOTH },
  { context: "approvalRules", env: "APPROVAL_RULES", functions: BOTH },
  { context: "policies", env: "POLICIES", functions: BOTH },
  { context: "approvalTimeoutSeconds", env: "APPROVAL_TIMEOUT_SECONDS", functions: BOTH },
  { context: "maxCycles", env: "MAX_CYCLES", functions: API },
  { context: "runTimeoutMs", env: "RUN_TIMEOUT_MS", functions: API },
  { context: "asyncRunTimeoutMs", env: "ASYNC_RUN_TIMEOUT_MS", functions: API },
  { context: "deadlineReserveMs", env: "DEADLINE_RESERVE_MS", functions: API },
  { context: "maxTotalTokens", env: "MAX_TOTAL_TOKENS", functions: API },
  { context: "maxToolCallsPerTurn", env: "MAX_TOOL_CALLS_PER_TURN", functions: API },
  { context: "maxToolCallsPerRun", env: "MAX_TOOL_CALLS_PER_RUN", functions: API },
  { context: "maxParallelToolCalls", env: "MAX_PARALLEL_TOOL_CALLS", functions: API },
  { context: "maxToolResultBytes", env: "MAX_TOOL_RESULT_BYTES", functions: API },
  { context: "loopBreakerThreshold", env: "LOOP_BREAKER_THRESHOLD", functions: API },
  { context: "summarizeOnMaxCycles", env: "SUMMARIZE_ON_MAX_CYCLES", functions: API },
  { context: "historyMaxTokens", env: "HISTORY_MAX_TOKENS", functions: API },
  { context: "quoteTtlSeconds", env: "QUOTE_TTL_SECONDS", functions: BOTH },
  { context: "idempotencyTtlSeconds", env: "IDEMPOTENCY_TTL_SECONDS", functions: API },
  { context: "idempotencyKeyRequired", env: "IDEMPOTENCY_KEY_REQUIRED", functions: API },
  { context: "runTtlSeconds", env: "RUN_TTL_SECONDS", functions: BOTH },
  { context: "maxBodyBytes", env: "MAX_BODY_BYTES", functions: API },
  { context: "tenantClaims", env: "TENANT_CLAIMS", functions: API },
  { context: "permissionClaims", env: "PERMISSION_CLAIMS", functions: API },
  { context: "permissionListClaims", env: "PERMISSION_LIST_CLAIMS", functions: API },
  { context: "jwtAlgorithms", env: "JWT_ALGORITHMS", functions: API },
  { context: "mcpResourceUrl", env: "MCP_RESOURCE_URL", functions: API },
  { context: "jwtJwksUrl", env: "JWT_JWKS_URL", functions: API },
  { context: "dynamodbRequestTimeoutMs", env: "DYNAMODB_REQUEST_TIMEOUT_MS", functions: BOTH },
  { context: "logLevel", env: "POWERTOOLS_LOG_LEVEL", functions: BOTH },
  { context: "tracing", env: "TRACING", functions: BOTH },
  { context: "otlpEndpoint", env: "OTEL_EXPORTER_OTLP_ENDPOINT", functions: BOTH },
  { context: "traceContent", env: "TRACE_CONTENT", functions: BOTH },
  { context: "streamHeartbeatSeconds", env: "STREAM_HEARTBEAT_SECONDS", functions: API },
  { context: "streamMaxSeconds", env: "STREAM_MAX_SECONDS", functions: API },
  { context: "streamRetryMs", env: "STREAM_RETRY_MS", functions: API },
  { context: "streamRunTimeoutMs", env: "STREAM_RUN_TIMEOUT_MS", functions: API },
  { context: "eventsPollMs", env: "EVENTS_POLL_MS", functions: API },
  { context: "promptExcerptChars", env: "PROMPT_EXCERPT_CHARS", functions: API },
  { context: "answerGrounding", env: "ANSWER_GROUNDING", functions: BOTH },
  { context: "userRunsPerMinute", env: "USER_RUNS_PER_MINUTE", functions: API },
  { context: "tenantRunsPerMinute", env: "TENANT_RUNS_PER_MINUTE", functions: API },
  { context: "tenantConcurrentRuns", env: "TENANT_CONCURRENT_RUNS", functions: API },
  { context: "userTokensPerDay", env: "USER_TOKENS_PER_DAY", functions: BOTH },
  { context: "tenantTokensPerDay", env: "TENANT_TOKENS_PER_DAY", functions: BOTH },
  { context: "userCostPerDay", env: "USER_COST_PER_DAY", functions: BOTH },
  { context: "tenantCostPerDay", env: "TENANT_COST_PER_DAY", functions: BOTH },
  { context: "modelPrices", env: "MODEL_PRICES", functions: BOTH },
  { context: "minCompletionTokens", env: "MIN_COMPLETION_TOKENS", functions: BOTH },
  { context: "quotaWaitSeconds", env: "QUOTA_WAIT_SECONDS", functions: BOTH },
] as const satisfies readonly RuntimeSetting[];

/** The context key of a runtime setting, see {@link RUNTIME_SETTINGS}. */
export type RuntimeContextKey = (typeof RUNTIME_SETTINGS)[number]["context"];

/**
 * Deploy-time settings of the stack.
 * - `jwtIssuer`: HTTPS issuer URL whose `/.well-known/openid-configuration` API Gateway reads (your
 *   own issuer); with it, `jwtAudience` is required and the stack creates no user pool.
 * - `jwtAudience`: accepted `aud` (or, for Cognito access tokens, `client_id`) values; at least one.
 *   Neither given: the stack creates its built-in Cognito user pool (infra/user-pool.ts) and the API
 *   trusts that (`builtInUserPool: true`).
 * - `consoleCallbackUrls`: where the built-in pool's app client may send an authorization code
 *   (OAuth 2.0 code grant with PKCE, for a browser console); https, or http on localhost.
 * - `consoleClientId`: the OAuth client id the operator console (/console) signs in with (code + PKCE)
 *   at your own issuer (the built-in pool's is its app client); unset: the console takes a pasted token.
 * - `personal`: true for a personal/sandbox account: table, secret and log groups are DESTROYed with
 *   the stack; false (the default) RETAINs them and turns on table deletion protection.
 * - `openaiModel`, `openaiBaseUrl`: the runtime settings of those names (OPENAI_MODEL, OPENAI_BASE_URL).
 * - `openaiApiKeySecretName`: optional name of an existing Secrets Manager secret holding the OpenAI key;
 *   without it the stack creates an empty secret (`openai-compatible` only: a Bedrock deploy has none).
 * - `modelProvider`: MODEL_PROVIDER as deployed: `bedrock` (Amazon Bedrock through the functions' roles,
 *   no secret) or `openai-compatible` (the OpenAI settings and a secret); `bedrock` by default when
 *   `personal`, else `openai-compatible`.
 * - `bedrockModelId`: BEDROCK_MODEL_ID as deployed (with `bedrock`, the only model the roles may invoke).
 * - `runtime`: the runtime settings given (config variable → its value as the environment holds it).
 * - `config`: the functions' configuration with those settings, parsed by `ConfigSchema` (the defaults
 *   for what was not given, and DURABLE_EXECUTION_TIMEOUT_SECONDS as the stack sets it), e.g.
 *   `config.APPROVAL_TIMEOUT_SECONDS` for the runner's execution timeout.
 */
export interface DeploySettings {
  jwtIssuer: string | undefined;
  jwtAudience: string[] | undefined;
  builtInUserPool: boolean;
  consoleCallbackUrls: string[];
  consoleClientId: string | undefined;
  personal: boolean;
  openaiModel: string | undefined;
  openaiBaseUrl: string | undefined;
  openaiApiKeySecretName: string | undefined;
  modelProvider: ModelProvider;
  bedrockModelId: string;
  runtime: Partial<Record<RuntimeEnvName, string>>;
  config: RawConfig;
}

/** A context value as cdk.json or a prop may hold it (the CLI's `-c` always gives a string). */
export type ContextValue = string | number | boolean | readonly string[] | Record<string, unknown>;

/** Settings passed as stack props; each one overrides the CDK context value of the same name. */
export type DeploySettingsInput = Partial<
  Pick<DeploySettings, "jwtIssuer" | "consoleClientId" | "personal" | "openaiApiKeySecretName">
> & {
  jwtAudience?: string | string[];
  consoleCallbackUrls?: string | string[];
} & Partial<Record<RuntimeContextKey, ContextValue | undefined>>;

/** The CDK context keys read by {@link readDeploySettings} (`cdk deploy -c key=value` or cdk.json). */
export const CONTEXT_KEYS = [
  "jwtIssuer",
  "jwtAudience",
  "consoleCallbackUrls",
  "consoleClientId",
  "personal",
  "openaiApiKeySecretName",
  ...RUNTIME_SETTINGS.map((setting) => setting.context),
] as const;
/** An unset or blank value (the CLI passes `-c key=` as an empty string). */
const blankToUndefined = (value: unknown) =>
  value === null || (typeof value === "string" && value.trim() === "") ? undefined : value;

/** A comma separated list (CLI) or an array (cdk.json, props), trimmed, blanks dropped; empty is unset. */
const listOf = (value: unknown) => {
  const list = typeof value === "string" ? value.split(",") : value;
  if (!Array.isArray(list)) return blankToUndefined(list);
  const items = list.map((item) => (typeof item === "string" ? item.trim() : item)).filter((i) => i !== "");
  return items.length === 0 ? undefined : items;
};

/** The default of `consoleCallbackUrls`: a console served by `npm run dev` on its default port. */
export const DEFAULT_CONSOLE_CALLBACK_URLS = ["http://localhost:3000/callback"];

/** Context arrives as strings from the CLI (`-c personal=true`) or typed values from cdk.json/props. */
const SettingsSchema = z.object({
  jwtIssuer: z.preprocess(
    blankToUndefined,
    z
      .url({ protocol: /^https$/, error: "jwtIssuer must be an https:// URL (the token's iss claim)" })
      .optional(),
  ),
  jwtAudience: z.preprocess(listOf, z.array(z.string().min(1)).min(1).optional()),
  // Cognito accepts http only for localhost callback URLs.
  consoleCallbackUrls: z.preprocess(
    listOf,
    z
      .array(
        z.url({
          protocol: /^https?$/,
          error: "consoleCallbackUrls must be URLs (https, or http on localhost)",
        }),
      )
      .refine(
        (urls) => urls.every((url) => url.startsWith("https://") || /^http:\/\/localhost[:/]/.test(url)),
        {
          error: "consoleCallbackUrls must be https, or http on localhost",
        },
      )
      .optional(),
  ),
  consoleClientId: z.preprocess(
    blankToUndefined,
    z
      .string()
      .regex(/^[\x21-\x7e]{1,256}$/, "consoleClientId must be an OAuth client id (printable, no spaces)")
      .optional(),
  ),
  personal: z.preprocess(
    blankToUndefined,
    z
      .union([z.boolean(), z.enum(["true", "false"]).transform((text) => text === "true")], {
        error: "personal must be true or false",
      })
      .default(false),
  ),
  openaiApiKeySecretName: z.preprocess(
    blankToUndefined,
    z
      .string()
      .regex(/^[A-Za-z0-9/_+=.@-]{1,512}$/, "must be the secret's name in this Region, not its ARN")
      .optional(),
  ),
});

/**
 * Raised at synth when a context value or prop is invalid; names every bad key. `issues` holds one
 * line per problem (e.g. "maxCycles (MAX_CYCLES): Too big: expected number to be <=50"), which
 * infra/app.ts prints without a stack trace; the message is "Invalid deploy settings: " and the issues
 * joined by "; ".
 */
export class DeploySettingsError extends Error {
  /** One human-readable line per invalid setting or combination, without the "Invalid deploy settings" prefix. */
  readonly issues: readonly string[];

  constructor(issues: string | readonly string[]) {
    const list = typeof issues === "string" ? [issues] : [...issues];
    super(`Invalid deploy settings: ${list.join("; ")}`);
    this.name = new.target.name;
    this.issues = list;
  }
}

/**
 * Reads the deploy settings: each prop in `overrides` wins over the CDK context value of the same key
 * (no context lookups, nothing read from AWS). Neither issuer nor audience given means the built-in
 * user pool (`builtInUserPool: true`).
 * @throws DeploySettingsError when a value is present but invalid (e.g. an http:// issuer), a context
 *   key shaped like a setting is none (infra/unknown-settings.ts), or only one of jwtIssuer and
 *   jwtAudience is given
 */
export function readDeploySettings(scope: IConstruct, overrides: DeploySettingsInput = {}): DeploySettings {
  const raw: Record<string, unknown> = {};
  for (const key of CONTEXT_KEYS) {
    raw[key] = overrides[key] ?? scope.node.tryGetContext(key);
  }
  const parsed = SettingsSchema.safeParse(raw);
  const problems = [
    ...unknownSettingIssues(scope.node.getAllContext(), CONTEXT_KEYS, RUNTIME_SETTINGS),
    ...(parsed.success
      ? []
      : parsed.error.issues.map((issue) => `${issue.path.join(".")}: ${issue.message}`)),
  ];
  const runtime = readRuntimeSettings(raw, problems);
  if (!parsed.success || problems.length > 0) {
    throw new DeploySettingsError(problems);
  }
  const settings = parsed.data;
  const config = runtimeConfig(withModelProvider(runtime, settings));
  if ((settings.jwtIssuer === undefined) !== (settings.jwtAudience === undefined)) {
    throw new DeploySettingsError(
      "jwtIssuer and jwtAudience go together (your own issuer); give both, or neither for the built-in user pool.",
    );
  }
  // The built-in pool decides these: its trigger writes the claims the API reads (shared/user-roles.ts),
  // Cognito serves its keys, its app client is the console's. Another value would be ignored, or trust a
  // claim the pool never vouches for.
  const poolKeys = RUNTIME_SETTINGS.filter((setting) =>
    (["TENANT_CLAIMS", "PERMISSION_CLAIMS", "PERMISSION_LIST_CLAIMS", "JWT_JWKS_URL"] as string[]).includes(
      setting.env,
    ),
  )
    .filter((setting) => runtime[setting.env] !== undefined)
    .map((setting): string => setting.context)
    .concat(settings.consoleClientId === undefined ? [] : ["consoleClientId"]);
  if (settings.jwtIssuer === undefined && poolKeys.length > 0) {
    throw new DeploySettingsError(
      `${poolKeys.join(", ")}: the built-in user pool decides the claims, the keys and the console's client; give jwtIssuer and jwtAudience to choose your own.`,
    );
  }
  return {
    jwtIssuer: settings.jwtIssuer,
    jwtAudience: settings.jwtAudience,
    builtInUserPool: settings.jwtIssuer === undefined,
    consoleCallbackUrls: settings.consoleCallbackUrls ?? DEFAULT_CONSOLE_CALLBACK_URLS,
    consoleClientId: settings.consoleClientId,
    personal: settings.personal,
    openaiModel: runtime.OPENAI_MODEL,
    openaiBaseUrl: runtime.OPENAI_BASE_URL,
    openaiApiKeySecretName: settings.openaiApiKeySecretName,
    modelProvider: config.MODEL_PROVIDER,
    bedrockModelId: config.BEDROCK_MODEL_ID,
    runtime,
    config,
  };
}

/**
 * Settles MODEL_PROVIDER in `runtime` (in place, so the functions get it): as given, else `bedrock` for a
 * personal deploy (its account has Bedrock, and no key to create), else the config default. A Bedrock
 * deploy also gets BEDROCK_MODEL_ID written out (the default when not given): the same value its roles
 * are granted. A setting the chosen provider would ignore is refused, not dropped silently: the rule the
 * functions apply at cold start (shared/config/model-provider.ts `IGNORED_BY_PROVIDER`), naming the
 * deploy settings, with the stack's own `openaiApiKeySecretName` as the OPENAI_API_KEY_SECRET_NAME it sets.
 * @throws DeploySettingsError naming the settings the provider would ignore
 */
function withModelProvider(
  runtime: Partial<Record<RuntimeEnvName, string>>,
  settings: { personal: boolean; openaiApiKeySecretName?: string | undefined },
): Partial<Record<RuntimeEnvName, string>> {
  const personalDefault = runtime.MODEL_PROVIDER === undefined && settings.personal;
  if (personalDefault) runtime.MODEL_PROVIDER = "bedrock";
  const provider = ConfigSchema.shape.MODEL_PROVIDER.parse(runtime.MODEL_PROVIDER);
  const given = { ...runtime, OPENAI_API_KEY_SECRET_NAME: settings.openaiApiKeySecretName };
  const ignored = ignoredByProvider(provider, given);
  if (ignored.length > 0) {
    const contextKey = (env: string) =>
      env === "OPENAI_API_KEY_SECRET_NAME"
        ? "openaiApiKeySecretName"
        : (RUNTIME_SETTINGS.find((setting) => setting.env === env)?.context ?? env);
    throw new DeploySettingsError(
      providerIgnoresMessage(provider, ignored, {
        provider: "modelProvider",
        ignored: ignored.map(contextKey),
        ...(personalDefault ? { note: "(the default of a personal deploy)" } : {}),
      }),
    );
  }
  if (provider === "bedrock") runtime.BEDROCK_MODEL_ID ??= DEFAULT_BEDROCK_MODEL_ID;
  return runtime;
}

/**
 * A context value as the environment variable holds it: strings as given (the CLI's form), a list
 * (cdk.json `["a","b"]`) comma separated as the claim lists read it, an object as JSON, numbers and
 * booleans as their text. Unset and blank values are left out.
 */
function environmentValue(value: unknown): string | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value === "string") return value.trim() === "" ? undefined : value;
  if (Array.isArray(value)) return value.join(",");
  if (typeof value === "object") return JSON.stringify(value);
  return String(value);
}

/**
 * The runtime settings present in `raw` (context key → value), each checked by its variable's schema in
 * `ConfigSchema`; a failure is pushed to `problems` as "<context key> (<VARIABLE>): <message>".
 */
function readRuntimeSettings(
  raw: Record<string, unknown>,
  problems: string[],
): Partial<Record<RuntimeEnvName, string>> {
  const runtime: Partial<Record<RuntimeEnvName, string>> = {};
  for (const setting of RUNTIME_SETTINGS) {
    const value = environmentValue(raw[setting.context]);
    if (value === undefined) continue;
    const checked = ConfigSchema.shape[setting.env].safeParse(value);
    if (!checked.success) {
      const messages = checked.error.issues.map((issue) =>
        issue.path.length > 0 ? `${issue.path.join(".")}: ${issue.message}` : issue.message,
      );
      problems.push(`${setting.context} (${setting.env}): ${messages.join(", ")}`);
      continue;
    }
    runtime[setting.env] = value;
  }
  return runtime;
}

/**
 * The functions' configuration with these settings, through `loadConfig` (so the cross-field checks the
 * functions make at cold start fail the synth instead) and `ConfigSchema`; POLICIES is validated by the
 * Cedar engine against the schema generated from the tool registry, so a set that does not validate fails
 * the synth naming the policy and line. Checked and returned with the stack's DURABLE_EXECUTION_TIMEOUT_SECONDS.
 * @throws DeploySettingsError naming the variables when `loadConfig` refuses the combination
 */
function runtimeConfig(runtime: Partial<Record<RuntimeEnvName, string>>): RawConfig {
  const executionTimeout = String(runnerExecutionTimeoutSeconds(ConfigSchema.parse(runtime)));
  const deployed = { ...runtime, DURABLE_EXECUTION_TIMEOUT_SECONDS: executionTimeout };
  try {
    loadConfig(deployed);
  } catch (error) {
    if (error instanceof ConfigError) {
      throw new DeploySettingsError(`${error.message} (${contextNames(error.message)})`);
    }
    throw error;
  }
  if (runtime.POLICIES) {
    const issues = policyIssuesSync(runtime.POLICIES);
    if (issues.length > 0) {
      throw new DeploySettingsError(
        `policies (POLICIES) is not a valid policy set: ${describeIssues(issues)} (docs/policies.md)`,
      );
    }
  }
  return ConfigSchema.parse(deployed);
}

/** "set with -c key" for each config variable a message names, so the user finds the context key. */
function contextNames(message: string): string {
  const named = RUNTIME_SETTINGS.filter((setting) => message.includes(setting.env));
  const names = named.map((setting) => `${setting.env} is -c ${setting.context}`);
  if (message.includes("DURABLE_EXECUTION_TIMEOUT_SECONDS")) names.push(EXECUTION_TIMEOUT_SOURCE);
  return names.join(", ") || "see docs/deploy.md";
}
