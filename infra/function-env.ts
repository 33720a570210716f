import type { RawConfig } from "../shared/config.js";

/**
 * Environment variables the stack may give the function. Config names come from `shared/config.ts`
 * (`keyof RawConfig`), so a misspelt or removed name fails `tsc`. Three are excluded on purpose:
 * - `OPENAI_API_KEY`: the key never enters the environment; the function reads the secret named by
 *   `OPENAI_API_KEY_SECRET_NAME` at run time.
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
