import type { IConstruct } from "constructs";
import { z } from "zod";
import {
  BEDROCK_MODEL_ID_PATTERN,
  BEDROCK_MODEL_ID_RULE,
  DEFAULT_BEDROCK_MODEL_ID,
  type ModelProvider,
} from "../shared/config.js";

/**
 * Placeholder JWT issuer used when none is given, so `cdk synth` and the tests work without one.
 * The `.invalid` TLD is reserved (RFC 2606): no real token can ever come from it, so a stack deployed
 * with the placeholder rejects every authenticated request (401) instead of trusting anything.
 */
export const PLACEHOLDER_JWT_ISSUER = "https://issuer.invalid/placeholder";

/** Placeholder JWT audience, paired with {@link PLACEHOLDER_JWT_ISSUER}. */
export const PLACEHOLDER_JWT_AUDIENCE = "placeholder-audience";

/** Id of the synth warning raised when the JWT placeholders are in use (see `npm run deploy`). */
export const PLACEHOLDER_WARNING_ID = "boundloop:jwtPlaceholder";

/**
 * Deploy-time settings of the stack.
 * - `jwtIssuer`: HTTPS issuer URL whose `/.well-known/openid-configuration` API Gateway reads; for
 *   Cognito `https://cognito-idp.<region>.amazonaws.com/<userPoolId>`.
 * - `jwtAudience`: accepted `aud` (or, for Cognito access tokens, `client_id`) values; at least one.
 * - `personal`: true for a personal/sandbox account: table, secret and log groups are DESTROYed with
 *   the stack; false (the default) RETAINs them and turns on table deletion protection.
 * - `openaiModel`, `openaiBaseUrl`: optional; become OPENAI_MODEL / OPENAI_BASE_URL in the function.
 * - `openaiApiKeySecretName`: optional name of an existing Secrets Manager secret holding the OpenAI key;
 *   without it the stack creates an empty secret.
 * - `modelProvider`: `bedrock` (Amazon Bedrock through the function's role: no secret) or
 *   `openai-compatible` (the OpenAI settings above and a secret); default `bedrock` when `personal`, else
 *   `openai-compatible`. Becomes MODEL_PROVIDER.
 * - `bedrockModelId`: the Bedrock model id or inference profile id, checked at synth with the function's
 *   own pattern (shared/config.ts BEDROCK_MODEL_ID_PATTERN); the role may invoke only it. Becomes
 *   BEDROCK_MODEL_ID. Default {@link DEFAULT_BEDROCK_MODEL_ID}.
 * - `usesPlaceholders`: true when issuer or audience fell back to the placeholders.
 */
export interface DeploySettings {
  jwtIssuer: string;
  jwtAudience: string[];
  personal: boolean;
  openaiModel: string | undefined;
  openaiBaseUrl: string | undefined;
  openaiApiKeySecretName: string | undefined;
  modelProvider: ModelProvider;
  bedrockModelId: string;
  usesPlaceholders: boolean;
}

/** Settings passed as stack props; each one overrides the CDK context value of the same name. */
export type DeploySettingsInput = Partial<Omit<DeploySettings, "usesPlaceholders" | "jwtAudience">> & {
  jwtAudience?: string | string[];
};

/** The CDK context keys read by {@link readDeploySettings} (`cdk deploy -c key=value` or cdk.json). */
export const CONTEXT_KEYS = [
  "jwtIssuer",
  "jwtAudience",
  "personal",
  "openaiModel",
  "openaiBaseUrl",
  "openaiApiKeySecretName",
  "modelProvider",
  "bedrockModelId",
] as const;

/** An unset or blank value (the CLI passes `-c key=` as an empty string). */
const blankToUndefined = (value: unknown) =>
  value === null || (typeof value === "string" && value.trim() === "") ? undefined : value;

const optionalText = z.preprocess(blankToUndefined, z.string().trim().min(1).optional());

/** Context arrives as strings from the CLI (`-c personal=true`) or typed values from cdk.json/props. */
const SettingsSchema = z.object({
  jwtIssuer: z.preprocess(
    blankToUndefined,
    z
      .url({ protocol: /^https$/, error: "jwtIssuer must be an https:// URL (the token's iss claim)" })
      .optional(),
  ),
  jwtAudience: z.preprocess((value) => {
    const list = typeof value === "string" ? value.split(",") : value;
    if (!Array.isArray(list)) return blankToUndefined(list);
    const items = list.map((item) => (typeof item === "string" ? item.trim() : item)).filter((i) => i !== "");
    return items.length === 0 ? undefined : items;
  }, z.array(z.string().min(1)).min(1).optional()),
  personal: z.preprocess(
    blankToUndefined,
    z
      .union([z.boolean(), z.enum(["true", "false"]).transform((text) => text === "true")], {
        error: "personal must be true or false",
      })
      .default(false),
  ),
  openaiModel: optionalText,
  openaiBaseUrl: z.preprocess(blankToUndefined, z.url({ protocol: /^https?$/ }).optional()),
  openaiApiKeySecretName: z.preprocess(
    blankToUndefined,
    z
      .string()
      .regex(/^[A-Za-z0-9/_+=.@-]{1,512}$/, "openaiApiKeySecretName must be a Secrets Manager secret name")
      .optional(),
  ),
  modelProvider: z.preprocess(
    blankToUndefined,
    z
      .enum(["bedrock", "openai-compatible"], { error: "modelProvider must be bedrock or openai-compatible" })
      .optional(),
  ),
  bedrockModelId: z.preprocess(
    blankToUndefined,
    z.string().regex(BEDROCK_MODEL_ID_PATTERN, `bedrockModelId ${BEDROCK_MODEL_ID_RULE}`).optional(),
  ),
});

/** Raised at synth when a context value or prop is invalid; names every bad key. */
export class DeploySettingsError extends Error {
  constructor(message: string) {
    super(message);
    this.name = new.target.name;
  }
}

/**
 * Reads the deploy settings: each prop in `overrides` wins over the CDK context value of the same key
 * (no context lookups, nothing read from AWS). A missing issuer or audience falls back to
 * {@link PLACEHOLDER_JWT_ISSUER} / {@link PLACEHOLDER_JWT_AUDIENCE} with `usesPlaceholders: true`;
 * the stack turns that into a synth warning.
 * @throws DeploySettingsError when a value is present but invalid (e.g. an http:// issuer)
 */
export function readDeploySettings(scope: IConstruct, overrides: DeploySettingsInput = {}): DeploySettings {
  const raw: Record<string, unknown> = {};
  for (const key of CONTEXT_KEYS) {
    raw[key] = overrides[key] ?? scope.node.tryGetContext(key);
  }
  const parsed = SettingsSchema.safeParse(raw);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((issue) => `${issue.path.join(".")}: ${issue.message}`);
    throw new DeploySettingsError(`Invalid deploy settings: ${problems.join("; ")}`);
  }
  const settings = parsed.data;
  const modelProvider = settings.modelProvider ?? (settings.personal ? "bedrock" : "openai-compatible");
  const openaiOnly = (["openaiModel", "openaiBaseUrl", "openaiApiKeySecretName"] as const).filter(
    (key) => settings[key] !== undefined,
  );
  if (modelProvider === "bedrock" && openaiOnly.length > 0) {
    throw new DeploySettingsError(
      `Invalid deploy settings: ${openaiOnly.join(", ")}: modelProvider is bedrock (the default of a personal deploy), which uses bedrockModelId and reads no secret; leave ${openaiOnly.length > 1 ? "them" : "it"} out or set modelProvider=openai-compatible`,
    );
  }
  return {
    jwtIssuer: settings.jwtIssuer ?? PLACEHOLDER_JWT_ISSUER,
    jwtAudience: settings.jwtAudience ?? [PLACEHOLDER_JWT_AUDIENCE],
    personal: settings.personal,
    openaiModel: settings.openaiModel,
    openaiBaseUrl: settings.openaiBaseUrl,
    openaiApiKeySecretName: settings.openaiApiKeySecretName,
    modelProvider,
    bedrockModelId: settings.bedrockModelId ?? DEFAULT_BEDROCK_MODEL_ID,
    usesPlaceholders: settings.jwtIssuer === undefined || settings.jwtAudience === undefined,
  };
}
