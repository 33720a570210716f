import type { LogFormatter, Logger } from "@aws-lambda-powertools/logger";
import type { Metrics } from "@aws-lambda-powertools/metrics";
import { SecretsProvider } from "@aws-lambda-powertools/parameters/secrets";
import { defaultProvider } from "@aws-sdk/credential-provider-node";
import type { DynamoDBDocumentClient } from "@aws-sdk/lib-dynamodb";
import type { AwsCredentialIdentityProvider } from "@smithy/types";
import type { ToolRegistry } from "./agent/dispatcher.js";
import { type HistoryMessage, halveHistory } from "./agent/history.js";
import type { Model } from "./agent/model.js";
import type { ToolResult } from "./agent/result.js";
import type { RunStatus } from "./agent/types.js";
import type { ApprovalEvents } from "./approval-events.js";
import type { Config } from "./config.js";
import type { DurableExecutions } from "./durable/executions.js";
import { BedrockApiKeys, bedrockFetch, classifyBedrockFailure } from "./model/bedrock.js";
import { OpenAIChatModel } from "./model/openai-chat.js";
import { createModelClient } from "./model-client.js";
import { createObservability } from "./observability.js";
import { ApprovalStore } from "./store/approvals.js";
import { createDocumentClient } from "./store/dynamo.js";
import { LedgerStore } from "./store/ledger.js";
import { QuoteStore } from "./store/quotes.js";
import { RunStore } from "./store/runs.js";
import { accountingTools } from "./tools/registry.js";

/**
 * The agent's types the run store persists (the store itself does not import the agent layer): run
 * statuses, tool results, and the messages of stored transcripts.
 */
export type AgentRunShapes = { status: RunStatus; toolResult: ToolResult; message: HistoryMessage };

/**
 * Everything a request handler needs, built once per Lambda container and injectable in tests.
 * - `model`: the chat model the loop calls: OpenAI chat completions over the real openai client, on any
 *   OpenAI-compatible server (`config.model.baseURL`, model `config.model.name`), or with
 *   MODEL_PROVIDER=bedrock on Amazon Bedrock's Chat Completions endpoint (`config.model.bedrock`)
 * - `ddb`: DynamoDB document client; `ledger`: the invoice store; `quotes`: the tax quote store;
 *   `runs`: run records and audit steps
 * - `logger`, `metrics`: Powertools Logger and Metrics (see shared/observability.ts)
 * - `executions`: where durable runs start, stop and are read (shared/durable/executions.ts); absent
 *   when the deployment has no runner
 * - `approvals`: approvals of paused tool calls; `approvalEvents`: where a new approval is announced
 *   (docs/approvals.md)
 */
export interface AppDeps {
  config: Config;
  ddb: DynamoDBDocumentClient;
  model: Model;
  ledger: LedgerStore;
  quotes: QuoteStore;
  runs: RunStore<AgentRunShapes>;
  tools: ToolRegistry;
  logger: Logger;
  metrics: Metrics;
  executions?: DurableExecutions;
  approvals: ApprovalStore;
  approvalEvents: ApprovalEvents;
}

/** Optional parts of {@link createDeps} that tests and scripts may supply. */
export interface DepsOptions {
  /** Reads OPENAI_API_KEY_SECRET_NAME; default: a Powertools SecretsProvider in `config.table.region`. */
  secretsProvider?: Pick<SecretsProvider, "get">;
  /**
   * The AWS credentials Bedrock API keys are made from (MODEL_PROVIDER=bedrock); default: the AWS SDK's
   * default chain (on Lambda, and in the bundle, the role's credentials in the environment).
   */
  awsCredentials?: AwsCredentialIdentityProvider;
  /** The clock of the Bedrock key cache (epoch ms); default Date.now. */
  now?: () => number;
  /** How long each Bedrock API key is made for, in s; default BEDROCK_KEY_LIFETIME_SECONDS (900). */
  bedrockKeyLifetimeSeconds?: number;
  /** A Powertools LogFormatter replacing the default JSON formatter. */
  logFormatter?: LogFormatter;
  /**
   * Where durable runs (`Prefer: respond-async`) start; default: Lambda durable functions on
   * RUNNER_FUNCTION_ARN when it is set, else none (the preference is then ignored and runs are synchronous).
   */
  executions?: DurableExecutions;
  /**
   * Where approvals are announced: the runner passes EventBridge (functions/runner/handler.ts), local
   * scripts a printer. Default: none (the API function never announces; a runner without one logs a
   * warning per approval and goes on), so the API bundle carries no EventBridge client.
   */
  approvalEvents?: ApprovalEvents;
}

/**
 * Placeholder key sent when none is configured: OpenAI rejects it, local OpenAI-compatible servers
 * ignore it.
 */
export const NO_API_KEY = "no-key-configured";

/**
 * Returns a function giving the OpenAI key stored in Secrets Manager under `secretName`, read with
 * Powertools Parameters on first use and cached for `maxAgeSeconds` (config SECRET_CACHE_SECONDS).
 * The secret is the key as plain text, or a JSON object with an `OPENAI_API_KEY` or `apiKey` member.
 * @throws Error (from the returned function) when the secret cannot be read or holds no usable key;
 *   the message names the secret, never its value
 */
export function secretApiKey(
  provider: Pick<SecretsProvider, "get">,
  secretName: string,
  maxAgeSeconds: number,
): () => Promise<string> {
  return async () => {
    let value: unknown;
    try {
      value = await provider.get(secretName, { maxAge: maxAgeSeconds });
    } catch (error) {
      const cause = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
      throw new Error(`Could not read the secret ${secretName} (${cause}).`, { cause: error });
    }
    const text = typeof value === "string" ? value.trim() : "";
    let key = text;
    if (text.startsWith("{")) {
      try {
        const parsed = JSON.parse(text) as Record<string, unknown>;
        key = String(parsed.OPENAI_API_KEY ?? parsed.apiKey ?? "");
      } catch {
        key = "";
      }
    }
    if (!key) throw new Error(`The secret ${secretName} holds no OpenAI API key.`);
    return key;
  };
}

/**
 * Builds the dependencies from config. The openai client (shared/model-client.ts createModelClient) keeps
 * the SDK's own retries (2, with backoff) for 429 and 5xx; every request also carries the run's deadline
 * signal and timeout. With
 * OPENAI_API_KEY_SECRET_NAME set, the key is fetched lazily by the openai client before its first
 * request (so a cold start that serves /healthz never reads the secret) and cached.
 */
export function createDeps(config: Config, options: DepsOptions = {}): AppDeps {
  const ddb = createDocumentClient(config.table);
  const { logger, metrics } = createObservability(config.observability, {
    ...(options.logFormatter ? { logFormatter: options.logFormatter } : {}),
  });
  const model =
    config.model.provider === "bedrock"
      ? bedrockModel(config.model.bedrock, logger, options)
      : openAICompatibleModel(config.model, options);
  const ledger = new LedgerStore(ddb, config.table.name);
  const quotes = new QuoteStore(ddb, config.table.name);
  const runs = new RunStore<AgentRunShapes>(ddb, config.table.name, config.runs.ttlSeconds, {
    shortenTranscript: halveHistory,
  });
  const tools = accountingTools({
    ledger,
    quotes,
    quoteTtlSeconds: config.quotes.ttlSeconds,
    approvalRules: config.approvals.rules,
  });
  const executions = options.executions ?? lambdaExecutions(config);
  const approvals = new ApprovalStore(ddb, config.table.name, config.runs.ttlSeconds);
  const approvalEvents: ApprovalEvents = options.approvalEvents ?? {
    requested: async () => {
      throw new Error("No approval event port is configured in this function.");
    },
  };
  return {
    config,
    ddb,
    model,
    ledger,
    quotes,
    runs,
    tools,
    logger,
    metrics,
    approvals,
    approvalEvents,
    ...(executions ? { executions } : {}),
  };
}

/**
 * MODEL_PROVIDER=openai-compatible: the openai client on `model.baseURL` with the key (OPENAI_API_KEY, or
 * the secret OPENAI_API_KEY_SECRET_NAME read lazily before the first request, then cached).
 */
function openAICompatibleModel(model: Config["model"], options: DepsOptions): Model {
  const secretName = model.apiKeySecretName;
  const apiKey = secretName
    ? secretApiKey(
        options.secretsProvider ?? new SecretsProvider({ clientConfig: { region: model.bedrock.region } }),
        secretName,
        model.secretCacheSeconds,
      )
    : (model.apiKey ?? NO_API_KEY);
  const openai = createModelClient({ apiKey, baseURL: model.baseURL, maxRetries: 2 });
  return new OpenAIChatModel(openai, model.name);
}

/**
 * MODEL_PROVIDER=bedrock: the same openai client and adapter on Bedrock's Chat Completions endpoint, its
 * `apiKey` a function the SDK calls before every attempt, answered from the {@link BedrockApiKeys} cache
 * (renewed before it expires). Bedrock's refusals become stable codes and fixed sentences
 * (classifyBedrockFailure); what Bedrock said is logged at warn, without the key (the SDK's error
 * messages carry the response body, never the request's headers).
 */
function bedrockModel(bedrock: Config["model"]["bedrock"], logger: Logger, options: DepsOptions): Model {
  const keys = new BedrockApiKeys({
    credentials: options.awsCredentials ?? defaultProvider(),
    region: bedrock.region,
    ...(options.now ? { now: options.now } : {}),
    ...(options.bedrockKeyLifetimeSeconds ? { lifetimeSeconds: options.bedrockKeyLifetimeSeconds } : {}),
  });
  const openai = createModelClient({
    apiKey: () => keys.get(),
    baseURL: bedrock.baseURL,
    maxRetries: 2,
    wrapFetch: bedrockFetch,
  });
  return new OpenAIChatModel(openai, bedrock.modelId, (error) => {
    const failure = classifyBedrockFailure(error, bedrock.modelId, bedrock.region);
    if (failure) {
      logger.warn("Amazon Bedrock refused a model call", {
        modelErrorCode: failure.code,
        bedrockModelId: bedrock.modelId,
        detail: failure.detail,
      });
    }
    return failure;
  });
}

/**
 * The Lambda durable functions port on RUNNER_FUNCTION_ARN (undefined when it is unset). The Lambda
 * client's code is loaded on the first durable run, not at cold start.
 */
function lambdaExecutions(config: Config): DurableExecutions | undefined {
  const aliasArn = config.durable.runnerFunctionArn;
  if (!aliasArn) return undefined;
  let loading: Promise<DurableExecutions> | undefined;
  const load = () => {
    loading ??= Promise.all([
      import("@aws-sdk/client-lambda"),
      import("./durable/lambda-executions.js"),
    ]).then(
      ([{ LambdaClient }, { LambdaDurableExecutions }]) =>
        new LambdaDurableExecutions(new LambdaClient({ region: aliasArn.split(":")[3] }), aliasArn),
    );
    return loading;
  };
  return {
    start: async (name, payload) => (await load()).start(name, payload),
    stop: async (name) => (await load()).stop(name),
    describe: async (name) => (await load()).describe(name),
    completeCallback: async (callback, result) => (await load()).completeCallback(callback, result),
  };
}
