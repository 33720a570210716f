/**
 * The chat model the loop talks to, built from config: OpenAI chat completions over the real openai
 * client (shared/model-client.ts createModelClient, the SDK's own retries: 2 with backoff for 429 and
 * 5xx; every request carries the run's deadline signal and timeout) on any OpenAI-compatible server, or
 * with MODEL_PROVIDER=bedrock on Amazon Bedrock's Chat Completions endpoint. With
 * OPENAI_API_KEY_SECRET_NAME set, the key is fetched lazily before the first request (so a cold start
 * that serves /healthz never reads the secret) and cached; with Bedrock, no secret: a Bedrock API key is
 * made the same way.
 */
import { SecretsProvider } from "@aws-lambda-powertools/parameters/secrets";
import { defaultProvider } from "@aws-sdk/credential-provider-node";
import type { AwsCredentialIdentityProvider } from "@smithy/types";
import type { Model } from "../agent/model.js";
import type { Config } from "../config.js";
import { createModelClient } from "../model-client.js";
import { BedrockApiKeys, bedrockFetch, classifyBedrockFailure } from "./bedrock.js";
import { OpenAIChatModel } from "./openai-chat.js";

/** What the model may be given instead of its defaults (tests and scripts). */
export interface ChatModelOptions {
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
}

/** The chat model of MODEL_PROVIDER (openai-compatible or bedrock), see the module comment. */
export function createChatModel(config: Config, options: ChatModelOptions = {}): Model {
  return config.model.provider === "bedrock"
    ? bedrockModel(config.model, options)
    : openAICompatibleModel(config, options);
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
 * MODEL_PROVIDER=openai-compatible: the openai client on `config.model.baseURL` with the key
 * (OPENAI_API_KEY, or the secret OPENAI_API_KEY_SECRET_NAME read lazily before the first request, then
 * cached).
 */
function openAICompatibleModel(config: Config, options: ChatModelOptions): Model {
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
function bedrockModel(model: Config["model"], options: ChatModelOptions): Model {
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
    // A Bedrock deployment is Bedrock on its spans, also through a proxy or a stand-in's host.
    providerName: "aws.bedrock",
    translateFailure: (error) => classifyBedrockFailure(error, modelId, region),
  });
}
