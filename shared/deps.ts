import type { Logger } from "@aws-lambda-powertools/logger";
import type { Metrics } from "@aws-lambda-powertools/metrics";
import { SecretsProvider } from "@aws-lambda-powertools/parameters/secrets";
import { defaultProvider } from "@aws-sdk/credential-provider-node";
import type { DynamoDBDocumentClient } from "@aws-sdk/lib-dynamodb";
import type { AwsCredentialIdentityProvider } from "@smithy/types";
import type { ToolRegistry } from "./agent/dispatcher.js";
import { halveHistory } from "./agent/history.js";
import type { Model } from "./agent/model.js";
import { type ApprovalEvents, eventBridgeApprovalEvents } from "./approval-events.js";
import type { Config } from "./config.js";
import type { DurableExecutions } from "./durable/executions.js";
import { onceUntilFailed } from "./lazy.js";
import { BedrockApiKeys, bedrockFetch, classifyBedrockFailure } from "./model/bedrock.js";
import { OpenAIChatModel } from "./model/openai-chat.js";
import { createModelClient } from "./model-client.js";
import { createObservability } from "./observability.js";
import { type FeedClock, SYSTEM_CLOCK } from "./runs/event-feed.js";
import { type RunEvent, RunEventHub, runEventObserver } from "./runs/events.js";
import type { RunObserver } from "./runs/lifecycle.js";
import type { AgentRunShapes } from "./runs/run-shapes.js";
import { ApprovalStore } from "./store/approvals.js";
import { createDocumentClient } from "./store/dynamo.js";
import { LedgerStore } from "./store/ledger.js";
import { QuoteStore } from "./store/quotes.js";
import { RunEventStore } from "./store/run-events.js";
import { RunStore } from "./store/runs.js";
import { accountingTools } from "./tools/registry.js";

export type { AgentRunShapes } from "./runs/run-shapes.js";

/**
 * What both functions use, built once per Lambda container and injectable in tests.
 * - `model`: the chat model the loop calls: OpenAI chat completions over the real openai client, on any
 *   OpenAI-compatible server (`config.model.baseURL`, model `config.model.name`), or with
 *   MODEL_PROVIDER=bedrock on Amazon Bedrock's Chat Completions endpoint (`config.model.bedrock`)
 * - `ddb`: DynamoDB document client; `ledger`: the invoice store; `quotes`: the tax quote store;
 *   `runs`: run records and audit steps; `approvals`: approvals of paused tool calls
 * - `logger`, `metrics`: Powertools Logger and Metrics (see shared/observability.ts)
 * - `runObservers`: observers of every run's lifecycle points (shared/runs/lifecycle.ts); by default the
 *   run events (shared/runs/events.ts)
 * - `runEvents`: the runs' event logs (`store`) and this container's live readers (`hub`); `clock`, the
 *   clock event streams wait with (heartbeats, time limits, polls; tests inject their own)
 */
export interface SharedDeps {
  config: Config;
  ddb: DynamoDBDocumentClient;
  model: Model;
  ledger: LedgerStore;
  quotes: QuoteStore;
  runs: RunStore<AgentRunShapes>;
  tools: ToolRegistry;
  logger: Logger;
  metrics: Metrics;
  approvals: ApprovalStore;
  runObservers?: readonly RunObserver[];
  runEvents: { store: RunEventStore<RunEvent>; hub: RunEventHub };
  clock: FeedClock;
}

/**
 * The API function's dependencies: {@link SharedDeps} and `executions`, where durable runs start, stop
 * and get their callbacks (shared/durable/executions.ts); absent when the deployment has no runner.
 */
export interface ApiDeps extends SharedDeps {
  executions?: DurableExecutions;
  /** Where an approval requested by an MCP tools/call is announced (the loop's are the runner's). */
  approvalEvents: ApprovalEvents;
}

/**
 * The durable runner's dependencies: {@link SharedDeps} and `approvalEvents`, where a new approval is
 * announced (docs/approvals.md).
 */
export interface RunnerDeps extends SharedDeps {
  approvalEvents: ApprovalEvents;
}

/** Optional parts of {@link createApiDeps} that tests and scripts may supply. */
export interface ApiDepsOptions {
  /** The clock of the event streams (default: the wall clock, shared/runs/event-feed.ts). */
  clock?: FeedClock;
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
  /**
   * Where durable runs (`Prefer: respond-async`) start; default: Lambda durable functions on
   * RUNNER_FUNCTION_ARN when it is set, else none (the preference is then ignored and runs are synchronous).
   */
  executions?: DurableExecutions;
  /** Where MCP approvals are announced; default: EventBridge's default bus (loaded on first use). */
  approvalEvents?: ApprovalEvents;
}

/** What both functions' model may be given: the OpenAI key's secret reader, or Bedrock's credentials and clock. */
export type ModelOptions = Pick<
  ApiDepsOptions,
  "secretsProvider" | "awsCredentials" | "now" | "bedrockKeyLifetimeSeconds"
>;

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
 * Builds the API function's dependencies from config ({@link sharedDeps}, and the Lambda durable
 * functions port on RUNNER_FUNCTION_ARN unless `options.executions` is given).
 */
export function createApiDeps(config: Config, options: ApiDepsOptions = {}): ApiDeps {
  const executions = options.executions ?? lambdaExecutions(config);
  const approvalEvents = options.approvalEvents ?? eventBridgeApprovalEvents(config.table.region);
  return { ...sharedDeps(config, options), approvalEvents, ...(executions ? { executions } : {}) };
}

/**
 * Builds the durable runner's dependencies from config ({@link sharedDeps}) and the port its approvals
 * are announced through (EventBridge in the deployed runner, a printer locally).
 */
export function createRunnerDeps(
  config: Config,
  options: ModelOptions & Pick<ApiDepsOptions, "clock"> & { approvalEvents: ApprovalEvents },
): RunnerDeps {
  return { ...sharedDeps(config, options), approvalEvents: options.approvalEvents };
}

/**
 * The clients and stores both functions build from config. The openai client (shared/model-client.ts
 * createModelClient) keeps the SDK's own retries (2, with backoff) for 429 and 5xx; every request also
 * carries the run's deadline signal and timeout. With OPENAI_API_KEY_SECRET_NAME set, the key is fetched
 * lazily by the openai client before its first request (so a cold start that serves /healthz never
 * reads the secret) and cached; with MODEL_PROVIDER=bedrock, no secret: a Bedrock API key is made the
 * same way, before the first request.
 */
function sharedDeps(config: Config, options: ModelOptions & Pick<ApiDepsOptions, "clock">): SharedDeps {
  const ddb = createDocumentClient(config.table);
  const ledger = new LedgerStore(ddb, config.table.name);
  const quotes = new QuoteStore(ddb, config.table.name);
  const tools = accountingTools({
    ledger,
    quotes,
    quoteTtlSeconds: config.quotes.ttlSeconds,
    approvalRules: config.approvals.rules,
  });
  const observability = createObservability(config.observability);
  const runEvents = { store: new RunEventStore<RunEvent>(ddb, config.table.name), hub: new RunEventHub() };
  const events = runEventObserver({
    ...runEvents,
    ttlSeconds: config.runs.ttlSeconds,
    onWriteError: (error) => observability.logger.warn("run events not written", { error: error as Error }),
  });
  return {
    config,
    ddb,
    model:
      config.model.provider === "bedrock"
        ? bedrockModel(config.model, options)
        : openAICompatibleModel(config, options),
    ledger,
    quotes,
    runs: new RunStore<AgentRunShapes>(ddb, config.table.name, config.runs.ttlSeconds, {
      shortenTranscript: halveHistory,
      promptExcerptChars: config.runs.promptExcerptChars,
    }),
    tools,
    ...observability,
    approvals: new ApprovalStore(ddb, config.table.name, config.runs.ttlSeconds),
    runObservers: [events],
    runEvents,
    clock: options.clock ?? SYSTEM_CLOCK,
  };
}

/**
 * MODEL_PROVIDER=openai-compatible: the openai client on `config.model.baseURL` with the key
 * (OPENAI_API_KEY, or the secret OPENAI_API_KEY_SECRET_NAME read lazily before the first request, then
 * cached).
 */
function openAICompatibleModel(config: Config, options: ModelOptions): Model {
  const secretName = config.model.apiKeySecretName;
  const apiKey = secretName
    ? secretApiKey(
        options.secretsProvider ?? new SecretsProvider({ clientConfig: { region: config.table.region } }),
        secretName,
        config.model.secretCacheSeconds,
      )
    : (config.model.apiKey ?? NO_API_KEY);
  const openai = createModelClient({ apiKey, baseURL: config.model.baseURL, maxRetries: 2 });
  return new OpenAIChatModel(openai, config.model.name, { maxTokens: config.model.maxTokens });
}

/**
 * MODEL_PROVIDER=bedrock: the same openai client and adapter on Bedrock's Chat Completions endpoint, its
 * `apiKey` a function the SDK calls before every attempt, answered from the {@link BedrockApiKeys} cache
 * (renewed before it expires). Bedrock's refusals become stable codes and fixed sentences
 * (classifyBedrockFailure); what Bedrock said is the failure's logged message, never the key (the SDK's
 * error messages carry the response body, never the request's headers).
 */
function bedrockModel(model: Config["model"], options: ModelOptions): Model {
  const { modelId, region, baseURL } = model.bedrock;
  const keys = new BedrockApiKeys({
    credentials: options.awsCredentials ?? defaultProvider(),
    region,
    ...(options.now ? { now: options.now } : {}),
    ...(options.bedrockKeyLifetimeSeconds ? { lifetimeSeconds: options.bedrockKeyLifetimeSeconds } : {}),
  });
  const openai = createModelClient({
    apiKey: () => keys.get(),
    baseURL,
    maxRetries: 2,
    wrapFetch: bedrockFetch,
  });
  return new OpenAIChatModel(openai, modelId, {
    maxTokens: model.maxTokens,
    translateFailure: (error) => classifyBedrockFailure(error, modelId, region),
  });
}

/** The module the Lambda durable functions port is built from, loaded on the first durable run. */
type LambdaPortModule = typeof import("./durable/lambda-executions.js");

/**
 * The Lambda durable functions port on RUNNER_FUNCTION_ARN (undefined when it is unset). The Lambda
 * client's code is loaded on the first durable run, not at cold start; a failed load is retried by the
 * next call ({@link onceUntilFailed}).
 * @param importModule loads the port's module (tests inject a failing one)
 * @param clientConfig extra Lambda client settings (tests: a stand-in endpoint)
 */
export function lambdaExecutions(
  config: Config,
  importModule: () => Promise<LambdaPortModule> = () => import("./durable/lambda-executions.js"),
  clientConfig?: Parameters<LambdaPortModule["createLambdaDurableExecutions"]>[1],
): DurableExecutions | undefined {
  const aliasArn = config.durable.runnerFunctionArn;
  if (!aliasArn) return undefined;
  const load = onceUntilFailed(async () =>
    (await importModule()).createLambdaDurableExecutions(aliasArn, clientConfig),
  );
  return {
    start: async (name, payload) => (await load()).start(name, payload),
    stop: async (name) => (await load()).stop(name),
    completeCallback: async (callback, result) => (await load()).completeCallback(callback, result),
  };
}
