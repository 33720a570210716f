/**
 * Configuration section: the model provider, its endpoint, model name and key, the completion limit and
 * the system prompt.
 * - MODEL_MAX_TOKENS (default 4096 tokens): `max_tokens` of every chat completion request, so the
 *   completion limit is ours, not the server's default (which may be as low as a few hundred tokens on
 *   local servers, or the whole context). An answer here is a few sentences and a turn's tool calls are
 *   a few hundred tokens: 4096 leaves ample room, and bounds what one runaway completion costs.
 * - MODEL_PROVIDER (default openai-compatible): which model the function calls. `openai-compatible`: the
 *   server at OPENAI_BASE_URL with OPENAI_MODEL and the key below (today's path). `bedrock`: Amazon
 *   Bedrock's OpenAI-compatible Chat Completions endpoint in AWS_REGION with BEDROCK_MODEL_ID, signed in
 *   with short-term Bedrock API keys the function makes from its own AWS credentials (no key to store;
 *   shared/model/bedrock.ts, docs/deploy.md "Use Bedrock").
 * - BEDROCK_MODEL_ID (default `openai.gpt-oss-120b-1:0`): a Bedrock model id or system inference profile id
 *   ({@link BEDROCK_MODEL_ID_PATTERN}) that the Chat Completions endpoint serves with tool calling.
 * - BEDROCK_BASE_URL: local and tests only: the Bedrock endpoint to call instead of the region's
 *   (local/bedrock-stand-in.ts). The stack never sets it: its IAM grant and the key's region are the region's.
 * - OPENAI_API_KEY_SECRET_NAME: in AWS, the Secrets Manager secret holding the OpenAI key (read
 *   lazily on the first model call, cached). Mutually exclusive with OPENAI_API_KEY.
 * - SYSTEM_PROMPT (default: the accounting assistant's, shared/agent/run-state.ts DEFAULT_SYSTEM_PROMPT):
 *   the system message of every run, for a deployment that replaces the accounting domain; at most
 *   {@link MAX_SYSTEM_PROMPT_CHARS} characters, leading and trailing white space trimmed.
 */
import * as z from "zod/mini";
import { dynamodbFields } from "./dynamodb.js";
import { envInt, optionalString, optionalUrl, positiveInt } from "./env.js";
import { configSection, type GivenEnv, isGiven, type SectionDocs } from "./section.js";

/**
 * A Bedrock model id (`provider.model-version`, e.g. `openai.gpt-oss-120b-1:0`, `qwen.qwen3-32b-v1:0`) or a
 * system-defined inference profile id (the same with a geography prefix, e.g. `us.deepseek.r1-v1:0`,
 * `global.…`), as the Bedrock model catalogue spells them
 * (https://docs.aws.amazon.com/bedrock/latest/userguide/models-supported.html). ARNs are not accepted:
 * the stack builds the ARNs it grants from the id and its own region.
 */
export const BEDROCK_MODEL_ID_PATTERN =
  /^(?:(?:us|eu|apac|jp|au|ca|us-gov|global)\.)?[a-z0-9][a-z0-9-]*\.[a-z0-9][a-z0-9._-]*(?::[a-z0-9]+){0,2}$/;

/** The message of a model id that does not match {@link BEDROCK_MODEL_ID_PATTERN}. */
export const BEDROCK_MODEL_ID_RULE =
  "must be a Bedrock model id or inference profile id, e.g. openai.gpt-oss-120b-1:0 or us.deepseek.r1-v1:0";

/**
 * The Bedrock model used when BEDROCK_MODEL_ID is unset: gpt-oss-120b, served by the Chat Completions
 * endpoint in every Region that has it, with function calling, and without an inference profile (so
 * the grant is one foundation-model ARN in the stack's Region). docs/deploy.md lists others.
 */
export const DEFAULT_BEDROCK_MODEL_ID = "openai.gpt-oss-120b-1:0";

/** The longest SYSTEM_PROMPT accepted, in characters (about 5 000 tokens: it is sent on every cycle). */
export const MAX_SYSTEM_PROMPT_CHARS = 20_000;

/**
 * Bedrock's OpenAI-compatible endpoint of a Region: bedrock-runtime's `/openai/v1` (chosen over
 * bedrock-mantle: see docs/deploy.md "Use Bedrock").
 */
export function bedrockBaseUrl(region: string): string {
  return `https://bedrock-runtime.${region}.amazonaws.com/openai/v1`;
}

/** The model section's variables, see the module comment. */
export const modelFields = {
  MODEL_PROVIDER: z._default(z.enum(["openai-compatible", "bedrock"]), "openai-compatible"),
  BEDROCK_MODEL_ID: z._default(
    z.string().check(z.regex(BEDROCK_MODEL_ID_PATTERN, BEDROCK_MODEL_ID_RULE)),
    DEFAULT_BEDROCK_MODEL_ID,
  ),
  BEDROCK_BASE_URL: optionalUrl,
  OPENAI_API_KEY: optionalString,
  OPENAI_BASE_URL: optionalUrl,
  OPENAI_MODEL: z._default(z.string().check(z.minLength(1)), "gpt-4o-mini"),
  SYSTEM_PROMPT: z.pipe(optionalString, z.optional(z.string().check(z.maxLength(MAX_SYSTEM_PROMPT_CHARS)))),
  MODEL_MAX_TOKENS: positiveInt(4_096, 1_000_000),
  OPENAI_API_KEY_SECRET_NAME: z.pipe(
    optionalString,
    z.optional(
      z
        .string()
        .check(z.regex(/^[A-Za-z0-9/_+=.@:-]{1,2048}$/, "must be a Secrets Manager secret name or ARN")),
    ),
  ),
  SECRET_CACHE_SECONDS: envInt(300, 0, 86_400),
};

/** MODEL_PROVIDER: `openai-compatible` (OPENAI_* settings) or `bedrock` (BEDROCK_* settings). */
export type ModelProvider = z.output<typeof modelFields.MODEL_PROVIDER>;

/**
 * The model variables each provider does not read. Set together with that MODEL_PROVIDER they would be
 * silently ignored (an OPENAI_BASE_URL that seems to choose the server but does not), so they are
 * refused, by the same rule at cold start (this section's problems) and at synth (infra/settings.ts,
 * which names the deploy settings). BEDROCK_BASE_URL is not here: only local runs and tests set it.
 */
export const IGNORED_BY_PROVIDER = {
  bedrock: [
    "OPENAI_BASE_URL",
    "OPENAI_MODEL",
    "OPENAI_API_KEY",
    "OPENAI_API_KEY_SECRET_NAME",
    "SECRET_CACHE_SECONDS",
  ],
  "openai-compatible": ["BEDROCK_MODEL_ID"],
} as const satisfies Record<ModelProvider, ReadonlyArray<keyof typeof modelFields>>;

/** The variables set in `given` (not blank) that `provider` does not read ({@link IGNORED_BY_PROVIDER}). */
export function ignoredByProvider(provider: ModelProvider, given: GivenEnv): string[] {
  return IGNORED_BY_PROVIDER[provider].filter((name) => isGiven(given, name));
}

/**
 * The sentence refusing `ignored` with `provider`, e.g. "OPENAI_BASE_URL: MODEL_PROVIDER is bedrock, which
 * does not read it (it calls Amazon Bedrock with BEDROCK_MODEL_ID, signed in with the function's AWS
 * credentials); unset it, or set MODEL_PROVIDER=openai-compatible."
 * @param names how to name the settings (synth names the deploy settings: `modelProvider`, `openaiBaseUrl`),
 *   and what to add after the provider (synth: "(the default of a personal deploy)")
 */
export function providerIgnoresMessage(
  provider: ModelProvider,
  ignored: readonly string[],
  names: { provider: string; ignored: readonly string[]; note?: string } = {
    provider: "MODEL_PROVIDER",
    ignored,
  },
): string {
  const uses =
    provider === "bedrock"
      ? "it calls Amazon Bedrock with BEDROCK_MODEL_ID, signed in with the function's AWS credentials"
      : "it calls the OpenAI-compatible server at OPENAI_BASE_URL with OPENAI_MODEL";
  const other = provider === "bedrock" ? "openai-compatible" : "bedrock";
  const them = ignored.length > 1 ? "them" : "it";
  const note = names.note ? ` ${names.note}` : "";
  return `${names.ignored.join(", ")}: ${names.provider} is ${provider}${note}, which does not read ${them} (${uses}); unset ${them}, or set ${names.provider}=${other}.`;
}

/**
 * Which provider (`provider`); for `openai-compatible` the endpoint, model name and key (`apiKey`
 * undefined means "no key configured"); for `bedrock` the model id, the endpoint (`bedrockBaseUrl(region)`
 * unless BEDROCK_BASE_URL overrides it) and the Region the keys are made for; `maxTokens`, the completion
 * limit (tokens) sent with every request, on either provider.
 */
export interface ModelConfig {
  provider: ModelProvider;
  bedrock: { modelId: string; baseURL: string; region: string };
  apiKey: string | undefined;
  apiKeySecretName: string | undefined;
  secretCacheSeconds: number;
  baseURL: string | undefined;
  name: string;
  maxTokens: number;
}

/** The model section: `model` and `prompts` (`system`, the runs' system prompt; undefined: the loop's default). */
export const modelSection = configSection({
  fields: modelFields,
  reads: { AWS_REGION: dynamodbFields.AWS_REGION },
  config: (env): { model: ModelConfig; prompts: { system: string | undefined } } => ({
    model: {
      provider: env.MODEL_PROVIDER,
      bedrock: {
        modelId: env.BEDROCK_MODEL_ID,
        baseURL: env.BEDROCK_BASE_URL ?? bedrockBaseUrl(env.AWS_REGION),
        region: env.AWS_REGION,
      },
      apiKey: env.OPENAI_API_KEY,
      apiKeySecretName: env.OPENAI_API_KEY_SECRET_NAME,
      secretCacheSeconds: env.SECRET_CACHE_SECONDS,
      baseURL: env.OPENAI_BASE_URL,
      name: env.OPENAI_MODEL,
      maxTokens: env.MODEL_MAX_TOKENS,
    },
    prompts: { system: env.SYSTEM_PROMPT },
  }),
  problems: (env, given) => {
    const ignored = ignoredByProvider(env.MODEL_PROVIDER, given);
    return [
      ...(env.OPENAI_API_KEY && env.OPENAI_API_KEY_SECRET_NAME
        ? ["Set OPENAI_API_KEY (local) or OPENAI_API_KEY_SECRET_NAME (AWS), not both."]
        : []),
      ...(ignored.length > 0 ? [providerIgnoresMessage(env.MODEL_PROVIDER, ignored)] : []),
    ];
  },
});

/** The prose of the model section's variables (docs/configuration.md). */
export const modelDocs: SectionDocs<typeof modelFields> = {
  MODEL_PROVIDER: {
    group: "Model",
    description:
      "`openai-compatible`: the server at `OPENAI_BASE_URL` with `OPENAI_MODEL` and its key. `bedrock`: Amazon Bedrock's OpenAI-compatible Chat Completions endpoint (bedrock-runtime `/openai/v1`) in `AWS_REGION` with `BEDROCK_MODEL_ID`, signed in with short-term Bedrock API keys made from the function's own AWS credentials: no key to store (docs/deploy.md \"Use Bedrock\"). Deploy setting `modelProvider`, `bedrock` by default on a personal deploy (`-c personal=true`). Locally, `bedrock` starts the Bedrock stand-in (`npm start -- --bedrock`). The other provider's variables are refused with it, at cold start and at synth, since it would ignore them (e.g. `OPENAI_BASE_URL` with `bedrock`).",
  },
  BEDROCK_MODEL_ID: {
    group: "Model",
    description:
      "With `MODEL_PROVIDER=bedrock`: the Bedrock model id or system inference profile id, served by the Chat Completions endpoint with tool calling (e.g. `openai.gpt-oss-20b-1:0`, `qwen.qwen3-32b-v1:0`). Deploy setting `bedrockModelId`; the role may invoke this model only.",
  },
  BEDROCK_BASE_URL: {
    group: "Model",
    description:
      "Local runs and tests only: the Bedrock endpoint to call instead of `https://bedrock-runtime.<AWS_REGION>.amazonaws.com/openai/v1` (the local stand-in sets it). The stack never sets it.",
  },
  OPENAI_API_KEY: {
    group: "Model",
    description:
      "API key of the model server. Unset in a local run (`npm start`, `invoke`, `dev`): the local deterministic planner (not an LLM) is started. Not together with `OPENAI_API_KEY_SECRET_NAME`.",
  },
  OPENAI_BASE_URL: {
    group: "Model",
    description:
      "Base URL of any OpenAI-compatible server (`…/v1`); unset: `https://api.openai.com/v1`. Setting it locally uses that server instead of the planner.",
  },
  OPENAI_MODEL: { group: "Model", description: "Model name sent with each chat completions request." },
  SYSTEM_PROMPT: {
    group: "Model",
    description:
      "The system message of every run (synchronous and durable), for a deployment that brings its own domain and tools. Unset: the accounting assistant's prompt. Trimmed; empty means unset. It counts against `MAX_TOTAL_TOKENS` on every cycle.",
  },
  MODEL_MAX_TOKENS: {
    group: "Model",
    unit: "tokens",
    description:
      "Completion limit sent as `max_tokens` with every chat completions request, so truncation is not left to the server's default. An answer is a few sentences and a turn's tool calls a few hundred tokens; a reply cut at the limit (`finish_reason: length`) ends the run `model_output_truncated`, nothing of it is used. Raise it for a reasoning model that spends tokens thinking.",
  },
  OPENAI_API_KEY_SECRET_NAME: {
    group: "Model",
    description:
      "AWS: name or ARN of the Secrets Manager secret holding the key (plain text, or JSON with an `OPENAI_API_KEY` member). Read on the first model call, not at cold start. Not together with `OPENAI_API_KEY`.",
  },
  SECRET_CACHE_SECONDS: {
    group: "Model",
    unit: "s",
    description: "How long the secret's value is cached after it was read.",
  },
};
