/**
 * What a configuration section is. The service's configuration (shared/config.ts) is the sections listed
 * there, each one file of this folder holding, for one concern:
 * - its environment variables as zod schemas (`fields`: names, bounds, defaults; the source of truth);
 * - its part of {@link Config} (`config`: the parsed variables in the shapes the code uses);
 * - optionally the rules between variables (`problems`), and the variables of other sections it reads
 *   (`reads`, typed so a mapping can use them);
 * - the prose of each variable for docs/configuration.md (`…Docs`, read by shared/config-docs.ts only, so
 *   the deployed bundle, which tree-shakes it away, does not carry the text).
 *
 * Adding a setting to a concern is a field, a line of its mapping and its prose in that concern's file;
 * adding a concern is one new file here plus one line in shared/config.ts's `CONFIG_SECTIONS` (and one in
 * shared/config-docs.ts for its prose: `tsc` fails until it is there).
 *
 * {@link Config}: ../config.ts
 */
import type * as z from "zod/mini";

/** The zod schemas of some environment variables, by variable name. */
export type EnvFields = Record<string, z.ZodMiniType>;

/** The parsed values of the variables of `F`. */
export type ParsedEnv<F extends EnvFields> = { [K in keyof F]: z.output<F[K]> };

/**
 * One section of the configuration, see the module comment.
 * - `fields`: the variables this section owns (each variable belongs to exactly one section).
 * - `reads`: variables of other sections its `config` or `problems` read (the same schema objects).
 * - `config`: its part of the Config, from the parsed environment.
 * - `problems`: each rule between variables it breaks, one sentence each (checked at cold start and at
 *   synth); none when every rule holds. `given` is the environment as read, before defaults, for a rule
 *   about whether a variable was set at all ({@link isGiven}).
 */
export interface ConfigSection<F extends EnvFields, C extends object, R extends EnvFields> {
  readonly fields: F;
  readonly reads?: R;
  readonly config: (env: ParsedEnv<F & R>) => C;
  readonly problems?: (env: ParsedEnv<F & R>, given: GivenEnv) => string[];
}

/** The environment as read (a process.env-like record), before the schema's defaults. */
export type GivenEnv = Readonly<Record<string, string | undefined>>;

/** Whether `name` is set in `given`: present and not blank (a blank variable is unset, as the schema reads it). */
export function isGiven(given: GivenEnv, name: string): boolean {
  const value = given[name];
  return value !== undefined && value.trim() !== "";
}

/**
 * A section, with its types inferred from its fields, reads and mapping.
 * @example configSection({ fields: { QUOTA_WINDOW_S: positiveInt(60, 3600) }, config: (env) => ({ quotas: { windowS: env.QUOTA_WINDOW_S } }) })
 */
export function configSection<
  F extends EnvFields,
  C extends object,
  R extends EnvFields = Record<never, never>,
>(section: ConfigSection<F, C, R>): ConfigSection<F, C, R> {
  return section;
}

/** Section headings of the configuration reference (docs/configuration.md), in the order they are printed. */
export const CONFIG_GROUPS = [
  "Model",
  "DynamoDB",
  "Limits of a run",
  "Quotes, idempotency and audit",
  "HTTP and identity",
  "Durable runs",
  "Approvals",
  "Run event streams",
  "Bearer tokens",
  "Observability",
  "Grounded answers",
  "Quotas and cost",
] as const;

/** One section heading of the reference, see {@link CONFIG_GROUPS}. */
export type ConfigGroup = (typeof CONFIG_GROUPS)[number];

/**
 * The prose of one variable.
 * - `group`: the heading it is listed under.
 * - `unit`: the unit of a numeric value (`ms`, `s`, `bytes`, …), printed next to its bounds and default.
 * - `description`: what it sets or bounds, and where a default or limit comes from (Markdown, one line).
 */
export interface ConfigVariableDoc {
  group: ConfigGroup;
  unit?: string;
  description: string;
}

/** The prose of every variable of `F` (a missing or extra one fails `tsc`). */
export type SectionDocs<F extends EnvFields> = { readonly [K in keyof F]: ConfigVariableDoc };
