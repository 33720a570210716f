import { parseEnv } from "node:util";
import { ConfigSchema } from "../shared/config.js";
import { LOCAL_ONLY_ENV_KEYS } from "./dynamo.js";
import { readUserFile } from "./user-path.js";

/** The construct id of the API function in infra/stack.ts, which SAM-style env files key by. */
export const FUNCTION_ID = "ApiFunction";

/** Variable values read from an env file, and the names no part of boundloop reads. */
export interface EnvVars {
  vars: Record<string, string>;
  /** Names that are neither in shared/config.ts's ConfigSchema nor a local-only variable. */
  unknown: string[];
}

/** Every variable name boundloop reads: the service's ConfigSchema keys plus the local-only ones. */
export function knownEnvKeys(): string[] {
  return [...Object.keys(ConfigSchema.shape), ...LOCAL_ONLY_ENV_KEYS];
}

type Scalar = string | number | boolean;
const isScalar = (value: unknown): value is Scalar =>
  typeof value === "string" || typeof value === "number" || typeof value === "boolean";

/**
 * Reads environment variables for a local invocation, like `sam local invoke --env-vars`:
 * - a `.json` file either flat (`{"MAX_CYCLES": 3}`) or SAM's shape (`{"Parameters": {...},
 *   "ApiFunction": {...}}`; the function's own entry, keyed by the construct id `ApiFunction` or a
 *   logical id starting with it, wins over `Parameters`); numbers and booleans become strings;
 * - any other file is read as a dotenv file (`KEY=value`, `#` comments), e.g. a copy of `.env.example`.
 * A relative `path` is from the directory npm was run in (local/user-path.ts).
 * @throws Error naming the file (and the resolved path when it cannot be read) or its wrong shape
 */
export async function readEnvVarsFile(path: string): Promise<EnvVars> {
  const text = await readUserFile(path);
  let vars: Record<string, string>;
  if (path.endsWith(".json")) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch (error) {
      throw new Error(`${path} is not valid JSON: ${(error as Error).message}`);
    }
    vars = fromJson(parsed, path);
  } else {
    vars = parseEnv(text) as Record<string, string>;
  }
  const known = new Set(knownEnvKeys());
  return { vars, unknown: Object.keys(vars).filter((key) => !known.has(key)) };
}

function fromJson(parsed: unknown, path: string): Record<string, string> {
  if (parsed === null || typeof parsed !== "object" || Array.isArray(parsed)) {
    throw new Error(`${path} must hold a JSON object.`);
  }
  const entries = Object.entries(parsed as Record<string, unknown>);
  if (entries.every(([, value]) => isScalar(value)))
    return stringify(entries as Array<[string, Scalar]>, path);
  const sections = [
    ...entries.filter(([key]) => key === "Parameters"),
    ...entries.filter(([key]) => key.startsWith(FUNCTION_ID)),
  ];
  if (sections.length === 0) {
    throw new Error(`${path}: expected flat variables, or a "Parameters" or "${FUNCTION_ID}" object.`);
  }
  const vars: Record<string, string> = {};
  for (const [key, section] of sections) {
    if (section === null || typeof section !== "object" || Array.isArray(section)) {
      throw new Error(`${path}: "${key}" must be an object of variables.`);
    }
    Object.assign(vars, stringify(Object.entries(section), path));
  }
  return vars;
}

function stringify(entries: Array<[string, unknown]>, path: string): Record<string, string> {
  return Object.fromEntries(
    entries.map(([key, value]) => {
      if (!isScalar(value)) throw new Error(`${path}: ${key} must be a string, number or boolean.`);
      return [key, String(value)];
    }),
  );
}
