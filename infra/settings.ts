import type { IConstruct } from "constructs";
import { z } from "zod";
import { loadConfig } from "../shared/config.js";

/**
 * Deploy-time settings of the stack.
 * - `jwtIssuer`: HTTPS issuer URL whose `/.well-known/openid-configuration` API Gateway reads (your
 *   own issuer); with it, `jwtAudience` is required and the stack creates no user pool.
 * - `jwtAudience`: accepted `aud` (or, for Cognito access tokens, `client_id`) values; at least one.
 *   Neither given: the stack creates its built-in Cognito user pool (infra/user-pool.ts) and the API
 *   trusts that (`builtInUserPool: true`).
 * - `consoleCallbackUrls`: where the built-in pool's app client may send an authorization code
 *   (OAuth 2.0 code grant with PKCE, for a browser console); https, or http on localhost.
 * - `personal`: true for a personal/sandbox account: table, secret and log groups are DESTROYed with
 *   the stack; false (the default) RETAINs them and turns on table deletion protection.
 * - `openaiModel`, `openaiBaseUrl`: optional; become OPENAI_MODEL / OPENAI_BASE_URL in the function.
 * - `openaiApiKeySecretName`: optional name of an existing Secrets Manager secret holding the OpenAI key;
 *   without it the stack creates an empty secret.
 * - `tracing`: OpenTelemetry traces of both functions (docs/tracing.md): "off" (default), or the
 *   OTLP/HTTP endpoint (http(s) URL, e.g. a collector, or the ADOT collector extension's
 *   http://localhost:4318) the in-bundle SDK sends each invocation's spans to before it returns
 *   (TRACING=otlp, OTEL_EXPORTER_OTLP_ENDPOINT); checked by the functions' own ConfigSchema.
 */
export interface DeploySettings {
  jwtIssuer: string | undefined;
  jwtAudience: string[] | undefined;
  builtInUserPool: boolean;
  consoleCallbackUrls: string[];
  personal: boolean;
  openaiModel: string | undefined;
  openaiBaseUrl: string | undefined;
  openaiApiKeySecretName: string | undefined;
  tracing: string;
}

/** Settings passed as stack props; each one overrides the CDK context value of the same name. */
export type DeploySettingsInput = Partial<
  Omit<DeploySettings, "builtInUserPool" | "jwtAudience" | "consoleCallbackUrls">
> & {
  jwtAudience?: string | string[];
  consoleCallbackUrls?: string | string[];
};

/** The CDK context keys read by {@link readDeploySettings} (`cdk deploy -c key=value` or cdk.json). */
export const CONTEXT_KEYS = [
  "jwtIssuer",
  "jwtAudience",
  "consoleCallbackUrls",
  "personal",
  "openaiModel",
  "openaiBaseUrl",
  "openaiApiKeySecretName",
  "tracing",
] as const;

/** An unset or blank value (the CLI passes `-c key=` as an empty string). */
const blankToUndefined = (value: unknown) =>
  value === null || (typeof value === "string" && value.trim() === "") ? undefined : value;

const optionalText = z.preprocess(blankToUndefined, z.string().trim().min(1).optional());

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
  tracing: z.preprocess(blankToUndefined, z.string().trim().default("off")),
});

/** `tracing` after {@link tracingEnvironment} accepted it. */
function checkedTracing(tracing: string): string {
  tracingEnvironment(tracing);
  return tracing;
}

/**
 * The functions' environment for the `tracing` setting, checked by their own ConfigSchema (loadConfig):
 * none for "off", else TRACING=otlp and the endpoint.
 * @throws DeploySettingsError when the value is neither "off" nor an http(s) URL
 */
export function tracingEnvironment(tracing: string): {
  TRACING?: string;
  OTEL_EXPORTER_OTLP_ENDPOINT?: string;
} {
  if (tracing === "off") return {};
  const env = { TRACING: "otlp", OTEL_EXPORTER_OTLP_ENDPOINT: tracing };
  try {
    loadConfig(env);
  } catch (error) {
    throw new DeploySettingsError(
      `Invalid deploy settings: tracing must be "off" or an http(s) OTLP endpoint URL (${(error as Error).message})`,
    );
  }
  return env;
}

/** Raised at synth when a context value or prop is invalid; names every bad key. */
export class DeploySettingsError extends Error {
  constructor(message: string) {
    super(message);
    this.name = new.target.name;
  }
}

/**
 * Reads the deploy settings: each prop in `overrides` wins over the CDK context value of the same key
 * (no context lookups, nothing read from AWS). Neither issuer nor audience given means the built-in
 * user pool (`builtInUserPool: true`).
 * @throws DeploySettingsError when a value is present but invalid (e.g. an http:// issuer), or only
 *   one of jwtIssuer and jwtAudience is given
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
  if ((settings.jwtIssuer === undefined) !== (settings.jwtAudience === undefined)) {
    throw new DeploySettingsError(
      "Invalid deploy settings: jwtIssuer and jwtAudience go together (your own issuer); give both, or neither for the built-in user pool.",
    );
  }
  return {
    jwtIssuer: settings.jwtIssuer,
    jwtAudience: settings.jwtAudience,
    builtInUserPool: settings.jwtIssuer === undefined,
    consoleCallbackUrls: settings.consoleCallbackUrls ?? DEFAULT_CONSOLE_CALLBACK_URLS,
    personal: settings.personal,
    openaiModel: settings.openaiModel,
    openaiBaseUrl: settings.openaiBaseUrl,
    openaiApiKeySecretName: settings.openaiApiKeySecretName,
    tracing: checkedTracing(settings.tracing),
  };
}
