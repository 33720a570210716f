/**
 * `npm run docs:config`: writes docs/configuration.md, the reference of every environment variable, from
 * the config schema (shared/config.ts: names, types, bounds, defaults) and its prose
 * (shared/config-docs.ts). test/docs-config-reference.test.ts fails when the committed file differs
 * from what this renders, so the reference cannot drift from the schema.
 */
import { spawnSync } from "node:child_process";
import { writeFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";
import * as z from "zod/mini";
import { ConfigSchema } from "../shared/config.js";
import { CONFIG_DOCS, CONFIG_GROUPS, type ConfigVariableDoc } from "../shared/config-docs.js";
import type { LOCAL_ONLY_ENV_KEYS } from "./dynamo.js";

/** Where the reference is written, relative to the repository root. */
export const CONFIG_REFERENCE_PATH = "docs/configuration.md";

/** The command that regenerates {@link CONFIG_REFERENCE_PATH}. */
export const CONFIG_REFERENCE_COMMAND = "npm run docs:config";

/** A JSON Schema fragment as `z.toJSONSchema` returns it (only the members read here are typed). */
interface JsonSchema {
  type?: string;
  enum?: unknown[];
  format?: string;
  pattern?: string;
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: number;
  exclusiveMaximum?: number;
  minLength?: number;
  maxLength?: number;
  minItems?: number;
  items?: JsonSchema;
  anyOf?: JsonSchema[];
}

/** The stages of a schema: a pipe's sides in order, without transforms (which accept anything). */
function stages(schema: z.ZodMiniType): z.ZodMiniType[] {
  const def = schema._zod.def as { type: string; in?: z.ZodMiniType; out?: z.ZodMiniType };
  if (def.type === "pipe" && def.in && def.out) return [...stages(def.in), ...stages(def.out)];
  return def.type === "transform" ? [] : [schema];
}

/** `a–b`, `≥ a` or `≤ b` for inclusive bounds, or undefined when there are none. */
function range(min: number | undefined, max: number | undefined): string | undefined {
  if (min !== undefined && max !== undefined) return `${min}–${max}`;
  if (min !== undefined) return `≥ ${min}`;
  if (max !== undefined) return `≤ ${max}`;
  return undefined;
}

/**
 * One stage in words, or undefined when it says no more than "a string" (an unset-or-text stage that a
 * later stage narrows).
 */
function describeStage(schema: JsonSchema, unit: string | undefined): string | undefined {
  const suffix = unit ? ` ${unit}` : "";
  if (schema.enum)
    return `one of ${schema.enum.map((value) => (value === "" ? "empty" : `\`${String(value)}\``)).join(", ")}`;
  if (schema.type === "integer" || schema.type === "number") {
    const integer = schema.type === "integer";
    const min =
      schema.minimum ??
      (schema.exclusiveMinimum !== undefined ? schema.exclusiveMinimum + (integer ? 1 : 0) : undefined);
    const max =
      schema.maximum ??
      (schema.exclusiveMaximum !== undefined ? schema.exclusiveMaximum - (integer ? 1 : 0) : undefined);
    const bounds = range(min, max);
    return `${integer ? "integer" : "number"}${bounds ? `, ${bounds}${suffix}` : suffix}`;
  }
  if (schema.type === "boolean") return "`true` or `false`";
  if (schema.type === "array") {
    const item = schema.items ? describeStage(schema.items, undefined) : undefined;
    const count = schema.minItems ? `, at least ${schema.minItems}` : "";
    return `list${item ? ` of ${item}` : ""}${count}`;
  }
  if (schema.type === "object" || schema.anyOf?.every((member) => member.type === "object")) {
    return "JSON object";
  }
  if (schema.type === "string") {
    if (schema.format === "uri") return "URL";
    if (schema.pattern) return `string matching \`${schema.pattern}\``;
    if (schema.minLength === 1 && schema.maxLength === undefined) return "non-empty string";
    const length = range(schema.minLength, schema.maxLength);
    return length ? `string, ${length} characters` : undefined;
  }
  return undefined;
}

/**
 * The accepted values of one variable in words, from its schema: the last stage that says more than "a
 * string" (e.g. the enum after a trim, the list after a comma split), else "string".
 */
export function describeAccepted(schema: z.ZodMiniType, unit?: string): string {
  let described: string | undefined;
  for (const stage of stages(schema)) {
    const json = z.toJSONSchema(stage, { io: "input", unrepresentable: "any" }) as JsonSchema;
    described = describeStage(json, unit) ?? described;
  }
  return described ?? "string";
}

/**
 * The value a variable takes when it is unset, written as it would be set (lists comma separated,
 * objects as JSON), or `unset` when it stays undefined; `required` when unset is rejected; `none` for an
 * empty list and `empty` for empty text (an empty code span does not render in Markdown).
 */
export function describeDefault(schema: z.ZodMiniType, unit?: string): string {
  const parsed = schema.safeParse(undefined);
  if (!parsed.success) return "required";
  const value: unknown = parsed.data;
  if (value === undefined) return "unset";
  if (typeof value === "number") return withUnit(value, unit);
  if (Array.isArray(value)) return value.length === 0 ? "none" : `\`${value.join(",")}\``;
  if (typeof value === "object") return `\`${JSON.stringify(value)}\``;
  return value === "" ? "empty" : `\`${String(value)}\``;
}

/** Durations that read better in a larger unit: `86400 s (24 h)`, `25000 ms (25 s)`. */
const LARGER_UNITS: Record<string, [number, string][]> = {
  s: [
    [86_400, "days"],
    [3_600, "h"],
    [60, "min"],
  ],
  ms: [[1_000, "s"]],
};

/** A number with its unit, and for whole durations the same in the largest unit that divides it. */
function withUnit(value: number, unit: string | undefined): string {
  if (!unit) return String(value);
  const larger = LARGER_UNITS[unit]?.find(([factor]) => value >= factor && value % factor === 0);
  if (!larger) return `${value} ${unit}`;
  const [factor, name] = larger;
  const amount = value / factor;
  return `${value} ${unit} (${amount} ${amount === 1 && name === "days" ? "day" : name})`;
}

/** A table cell: pipes escaped, line breaks flattened, so a cell cannot break the Markdown table. */
function cell(text: string): string {
  return text.replaceAll("|", "\\|").replaceAll(/\s*\n\s*/g, " ");
}

/** A Markdown table from a header row and body rows. */
function table(header: string[], rows: string[][]): string {
  const line = (cells: string[]) => `| ${cells.map(cell).join(" | ")} |`;
  return [line(header), line(header.map(() => "---")), ...rows.map(line)].join("\n");
}

/** Variables only the local tools read (never the deployed function), with their prose. */
const LOCAL_ONLY_DOCS: Record<
  (typeof LOCAL_ONLY_ENV_KEYS)[number],
  { accepted: string; description: string }
> = {
  BOUNDLOOP_DYNAMO_BACKEND: {
    accepted: "one of `dynamodb-local`, `dynalite`",
    description:
      "Local DynamoDB for `npm start`, `invoke`, `dev` and the tests. Unset: DynamoDB Local (AWS's jar, needs Java 17+) when Java 17+ is found, else dynalite (pure JS) with a notice. Read by local/dynamo.ts.",
  },
  BOUNDLOOP_CLASS_DATA: {
    accepted: "one of `auto`, `use`, `off`",
    description:
      "DynamoDB Local's class-data archive (AppCDS), which makes its JVM start in about half the time. `auto` (unset): use it, or have the first `npm start` / `npm run invoke` without one write it after its output (once, a few seconds); `use`: use an existing one, never write one (the test suite); `off`: never. Read by local/dynamo-class-data.ts.",
  },
  BOUNDLOOP_CACHE_DIR: {
    accepted: "a directory",
    description:
      "Where the local tools keep the class-data archive and the Java version they found. Unset: `node_modules/.cache/boundloop` (gone with `node_modules`). Read by local/dynamo-class-data.ts.",
  },
};

/**
 * Renders the configuration reference (Markdown) for `schema` and its prose `docs`: one table per group
 * of {@link CONFIG_GROUPS} with each variable's accepted values and bounds, default and description,
 * then the variables only local tools read.
 * @param schema an object schema of environment variables (default: the service's {@link ConfigSchema})
 * @param docs the prose of every key of `schema` (default: {@link CONFIG_DOCS})
 * @throws Error naming a key of `schema` that has no entry in `docs`
 */
export function renderConfigReference(
  schema: z.ZodMiniObject = ConfigSchema,
  docs: Readonly<Record<string, ConfigVariableDoc>> = CONFIG_DOCS,
): string {
  const shape = schema.shape as Record<string, z.ZodMiniType>;
  const missing = Object.keys(shape).filter((name) => docs[name] === undefined);
  if (missing.length > 0)
    throw new Error(`No description in shared/config-docs.ts for ${missing.join(", ")}`);
  const sections = CONFIG_GROUPS.flatMap((group) => {
    const rows = Object.entries(shape)
      .filter(([name]) => docs[name]?.group === group)
      .map(([name, variable]) => {
        const doc = docs[name] as ConfigVariableDoc;
        return [
          `\`${name}\``,
          describeAccepted(variable, doc.unit),
          describeDefault(variable, doc.unit),
          doc.description,
        ];
      });
    if (rows.length === 0) return [];
    return [`## ${group}`, table(["variable", "accepts", "default", "what it sets or bounds"], rows)];
  });
  const local = Object.entries(LOCAL_ONLY_DOCS).map(([name, doc]) => [
    `\`${name}\``,
    doc.accepted,
    "auto",
    doc.description,
  ]);
  return [
    `<!-- Generated by \`${CONFIG_REFERENCE_COMMAND}\` (local/gen-config-docs.ts) from shared/config.ts and shared/config-docs.ts. Do not edit by hand. -->`,
    "# Configuration",
    [
      "The service reads these environment variables once, at cold start, through `ConfigSchema` in",
      "`shared/config.ts` (zod). An invalid value fails the start with a message naming each invalid variable;",
      "an empty value counts as unset. A number is plain decimal digits (`300`, not `0x12c`, `3e2`, `+300`, `300.0`",
      "or ` 300`), refused otherwise at cold start and at synth alike, naming the variable. A URL is an",
      "`http://` or `https://` URL (`file:`, `ftp:` or a bare `host:port` is refused: nothing could be reached).",
      "`JWT_ISSUER` without `JWT_JWKS_URL` or `JWT_JWKS` must be an http(s) URL (its keys are read from it).",
      "`OPENAI_API_KEY` and `OPENAI_API_KEY_SECRET_NAME` cannot both be set.",
      "A model variable the chosen `MODEL_PROVIDER` does not read is refused rather than ignored: with `bedrock`,",
      "`OPENAI_BASE_URL`, `OPENAI_MODEL`, `OPENAI_API_KEY`, `OPENAI_API_KEY_SECRET_NAME` and `SECRET_CACHE_SECONDS`;",
      "with `openai-compatible` (the default), `BEDROCK_MODEL_ID`. The deploy settings follow the same rule at synth.",
      "`.env.example` lists them for a local `.env` (see [local workflow](local-workflow.md)); on AWS the stack",
      "sets them ([deploy](deploy.md)).",
    ].join("\n"),
    ...sections,
    "## Local tools only",
    "Read by `npm start`, `npm run invoke`, `npm run dev` and the tests, never by the deployed function.",
    table(["variable", "accepts", "default", "what it sets"], local),
  ].join("\n\n");
}

/**
 * `markdown` as the project's formatter (Biome, which `npm run lint` also applies to docs/) writes it:
 * tables padded, so the generated file passes `biome check` unchanged.
 * @throws Error with Biome's message when it cannot format the text
 */
export function formatMarkdown(markdown: string, path: string = CONFIG_REFERENCE_PATH): string {
  const biome = createRequire(import.meta.url).resolve("@biomejs/biome/bin/biome");
  const run = spawnSync(process.execPath, [biome, "format", `--stdin-file-path=${path}`], {
    input: markdown,
    encoding: "utf8",
  });
  if (run.status !== 0) throw new Error(`biome format failed: ${run.stderr || run.error?.message}`);
  return run.stdout;
}

/** The file {@link CONFIG_REFERENCE_PATH} should hold: the reference, formatted. */
export function configReferenceFile(): string {
  return formatMarkdown(`${renderConfigReference()}\n`);
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const target = new URL(`../${CONFIG_REFERENCE_PATH}`, import.meta.url);
  await writeFile(target, configReferenceFile());
  console.log(`Wrote ${CONFIG_REFERENCE_PATH}`);
}
