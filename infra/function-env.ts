import type { RawConfig } from "../shared/config.js";
import { type DeploySettings, RUNTIME_SETTINGS } from "./settings.js";

/**
 * Environment variables the stack may give the function. Config names come from `shared/config.ts`
 * (`keyof RawConfig`), so a misspelt or removed name fails `tsc`. Three are excluded on purpose:
 * - `OPENAI_API_KEY`: the key never enters the environment; the function reads the secret named by
 *   `OPENAI_API_KEY_SECRET_NAME` at run time.
 * - `BEDROCK_BASE_URL`: the local Bedrock stand-in's address (local runs and tests); a deployed function
 *   calls its own Region's Bedrock endpoint.
 * - `AWS_REGION`: reserved; Lambda sets it.
 *
 * The others are Powertools' own settings
 * (https://docs.powertools.aws.dev/lambda/typescript/latest/environment-variables/) and Node's
 * `NODE_OPTIONS` (for `--enable-source-maps`).
 */
export type FunctionEnvName =
  | Exclude<keyof RawConfig, "OPENAI_API_KEY" | "BEDROCK_BASE_URL" | "AWS_REGION">
  | "POWERTOOLS_SERVICE_NAME"
  | "POWERTOOLS_METRICS_NAMESPACE"
  | "NODE_OPTIONS";

/** A function environment keyed by {@link FunctionEnvName}; `undefined` values are left out. */
export type FunctionEnvironment = Partial<Record<FunctionEnvName, string | undefined>>;

/**
 * Builds the Lambda `environment` map from typed names, dropping unset (`undefined`) values so an
 * optional setting is absent rather than an empty string.
 * @example functionEnvironment({ TABLE_NAME: table.tableName, OPENAI_MODEL: undefined }) // { TABLE_NAME: ... }
 */
export function functionEnvironment(env: FunctionEnvironment): Record<string, string> {
  const result: Record<string, string> = {};
  for (const [name, value] of Object.entries(env)) {
    if (value !== undefined) result[name] = value;
  }
  return result;
}

/**
 * The stack's functions that read runtime settings: the API function (functions/api/handler.ts) and the
 * durable runner. The streaming function (functions/stream/) serves the API's app and gets what "api" gets.
 */
export type DeployedFunction = "api" | "runner";

/**
 * The runtime settings a deployment gave (infra/settings.ts RUNTIME_SETTINGS) that `fn` reads, as
 * environment variables; a setting not given is left out, so the function applies the config default.
 * @example runtimeEnvironment(settings, "runner") // { APPROVAL_RULES: "{...}", OPENAI_MODEL: "..." }
 */
export function runtimeEnvironment(settings: DeploySettings, fn: DeployedFunction): FunctionEnvironment {
  const env: FunctionEnvironment = {};
  for (const setting of RUNTIME_SETTINGS) {
    if ((setting.functions as readonly DeployedFunction[]).includes(fn)) {
      env[setting.env] = settings.runtime[setting.env];
    }
  }
  return env;
}
