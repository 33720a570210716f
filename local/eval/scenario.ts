/**
 * The eval scenario format (docs/evals.md, "Writing a scenario"): one YAML or JSON file per scenario in
 * `evals/`, validated by {@link ScenarioSchema}. Every object is strict: a field the format does not
 * know is refused with its path, never ignored. `policies` and `quotas` govern the scenario's runs as a
 * deployment's settings would (POLICIES, the quota variables, MODEL_PRICES: see {@link governanceSettings}).
 */
import { readdir, readFile } from "node:fs/promises";
import { basename, extname, join, resolve } from "node:path";
import { parse as parseYaml } from "yaml";
import { z } from "zod";
import { GROUNDING_MODES } from "../../shared/agent/grounding-mode.js";
import { RUN_STATUSES } from "../../shared/agent/run-status.js";
import { ATTACK_NAMES } from "./attacks.js";

/** An identifier of a tenant or user, as the JWT claims carry it. */
const Identifier = z.string().regex(/^[A-Za-z0-9_:.-]{1,64}$/, "letters, digits, _ : . - (1-64)");

/** A decimal amount in major units, as a string ("1500", "300.00"). */
const Amount = z.string().regex(/^\d{1,15}(?:\.\d{1,4})?$/, 'a decimal string, e.g. "1500.00"');

/** Who sends the request: the JWT claims `tenant_id`, `sub` and `scope` of the API Gateway event. */
export const CallerSchema = z
  .object({
    tenant: Identifier,
    user: Identifier,
    permissions: z.array(z.string().regex(/^[A-Za-z0-9:_.-]{1,128}$/)).default([]),
  })
  .strict();

/** A caller (see {@link CallerSchema}). */
export type Caller = z.infer<typeof CallerSchema>;

/**
 * A constraint on one argument of a tool call: a plain value (equal, strings compared trimmed), or one
 * of `equals`, `matches` (a regular expression on the value's string form), `oneOf`, `absent` (null or
 * left out).
 */
const ArgumentConstraint = z.union([
  z.string(),
  z.number(),
  z.boolean(),
  z.null(),
  z.object({ equals: z.unknown() }).strict(),
  z.object({ matches: z.string() }).strict(),
  z.object({ oneOf: z.array(z.unknown()).min(1) }).strict(),
  z.object({ absent: z.literal(true) }).strict(),
]);

/** A constraint on one argument (see the schema's doc). */
export type ArgumentConstraint = z.infer<typeof ArgumentConstraint>;

const TOOL_STATUSES = [
  "success",
  "validation_error",
  "permission_denied",
  "business_error",
  "fatal_error",
] as const;

/**
 * Tool calls that must have been made: each entry matches calls by `name`, and by `args`, `status` and
 * `code` when given; `times` is how many such calls exactly (default: at least one).
 */
const ToolCallExpectation = z
  .object({
    name: z.string(),
    args: z.record(z.string(), ArgumentConstraint).optional(),
    status: z.enum(TOOL_STATUSES).optional(),
    code: z.string().optional(),
    times: z.number().int().min(0).optional(),
  })
  .strict();

/** An invoice the run must have added to the ledger (decimal strings in major units). */
const InvoiceExpectation = z
  .object({
    tenant: Identifier.optional(),
    clientName: z.string().optional(),
    jurisdiction: z.string().optional(),
    currency: z.string().optional(),
    subtotal: Amount.optional(),
    taxAmount: Amount.optional(),
    grossTotal: Amount.optional(),
  })
  .strict();

/** A call that must have been refused: no success, no effect; by `name`, and `status` / `code` when given. */
const RefusalExpectation = z
  .object({ name: z.string(), status: z.enum(TOOL_STATUSES).optional(), code: z.string().optional() })
  .strict();

/**
 * What a scenario expects (each part optional; all given must hold):
 * - `status`: the last run's status (one, or any of a list)
 * - `toolsCalled`, `toolsNotCalled`: the trajectory (every run of the scenario)
 * - `ledger`: exactly these invoices were added (any tenant), each once; `[]` means none
 * - `refused`: calls that were refused, with no effect
 * - `answer`: checks of the last run's answer; `grounded: true` means no ungrounded number
 */
export const ExpectSchema = z
  .object({
    status: z.union([z.enum(RUN_STATUSES), z.array(z.enum(RUN_STATUSES)).min(1)]).optional(),
    toolsCalled: z.array(ToolCallExpectation).optional(),
    toolsNotCalled: z.array(z.string()).optional(),
    ledger: z.array(InvoiceExpectation).optional(),
    refused: z.array(RefusalExpectation).optional(),
    answer: z
      .object({
        contains: z.array(z.string()).optional(),
        notContains: z.array(z.string()).optional(),
        matches: z.string().optional(),
        grounded: z.boolean().optional(),
      })
      .strict()
      .optional(),
  })
  .strict();

/** A scenario's expectations (see {@link ExpectSchema}). */
export type Expectations = z.infer<typeof ExpectSchema>;

/**
 * State made before the scenario's runs, through the real tools and dispatcher as `as` (no model):
 * a calculateTax quote, and, with `record`, its invoice. Its ids are `${fixtures.<name>.quoteId}` and
 * `${fixtures.<name>.invoiceId}` in scripts, and what the hostile suite's attacks replay.
 */
const FixtureSchema = z
  .object({
    name: z.string().regex(/^[a-z][A-Za-z0-9_]{0,40}$/),
    as: CallerSchema,
    quote: z
      .object({ amount: Amount, currency: z.string().regex(/^[A-Z]{3}$/), jurisdiction: z.string() })
      .strict(),
    record: z
      .object({
        clientName: z.string().min(1).max(200),
        description: z.string().min(1).max(500).optional(),
        clientReference: z.string().min(1).max(64).optional(),
      })
      .strict()
      .optional(),
  })
  .strict();

/** A fixture (see {@link FixtureSchema}). */
export type Fixture = z.infer<typeof FixtureSchema>;

/**
 * One reply of the scenario's scripted model: text, tool calls (arguments as JSON text or an object),
 * or a refusal. Strings may hold `${fixtures.<name>.<field>}` and `${result.<tool>.<path>}` (a field of
 * the latest successful result of that tool in the run, e.g. `${result.calculateTax.quoteId}`).
 */
const ScriptedReplySchema = z
  .object({
    content: z.string().optional(),
    toolCalls: z
      .array(
        z
          .object({
            id: z.string().optional(),
            name: z.string(),
            arguments: z.union([z.string(), z.record(z.string(), z.unknown())]),
          })
          .strict(),
      )
      .optional(),
    refusal: z.string().optional(),
  })
  .strict();

/** One scripted reply (see {@link ScriptedReplySchema}). */
export type ScriptedStep = z.infer<typeof ScriptedReplySchema>;

/**
 * Configuration variables (docs/configuration.md) the scenario's runs get, e.g. `ANSWER_GROUNDING` or
 * `MAX_CYCLES`; checked by the function's own schema when the scenario runs. The harness's own (the
 * table, endpoints, the model) are refused here.
 */
const SettingsSchema = z
  .object({
    ANSWER_GROUNDING: z.enum(GROUNDING_MODES).optional(),
    MAX_CYCLES: z.string().optional(),
    MAX_TOOL_CALLS_PER_TURN: z.string().optional(),
    MAX_TOOL_CALLS_PER_RUN: z.string().optional(),
    LOOP_BREAKER_THRESHOLD: z.string().optional(),
    QUOTE_TTL_SECONDS: z.string().optional(),
    SYSTEM_PROMPT: z.string().optional(),
  })
  .strict();

/** A daily or per-minute limit: a whole number from 1. */
const Limit = z.number().int().min(1).max(1_000_000_000);

/**
 * The quotas of the scenario's runs (docs/quotas.md), as the deploy settings set them: per user and per
 * tenant, and `prices` (MODEL_PRICES: model name → per-million prices, one currency) for cost limits.
 */
const QuotasSchema = z
  .object({
    user: z
      .object({ runsPerMinute: Limit, tokensPerDay: Limit, costPerDay: Amount })
      .partial()
      .strict()
      .optional(),
    tenant: z
      .object({ runsPerMinute: Limit, concurrentRuns: Limit, tokensPerDay: Limit, costPerDay: Amount })
      .partial()
      .strict()
      .optional(),
    prices: z
      .record(
        z.string().min(1),
        z.object({ inputPerMillion: Amount, outputPerMillion: Amount, currency: z.string() }).strict(),
      )
      .optional(),
  })
  .strict();

/** A scenario's quotas (see {@link QuotasSchema}). */
export type ScenarioQuotas = z.infer<typeof QuotasSchema>;

/** A scenario file: see the module doc and docs/evals.md. */
export const ScenarioSchema = z
  .object({
    name: z.string().regex(/^[a-z0-9][a-z0-9-]{0,80}$/, "lower-case letters, digits and -"),
    description: z.string().min(1),
    tags: z.array(z.string()).default([]),
    caller: CallerSchema,
    prompt: z.string().min(1).max(8000).optional(),
    conversation: z.array(z.string().min(1).max(8000)).min(1).optional(),
    limits: z
      .object({
        maxCycles: z.number().int().positive().optional(),
        timeoutMs: z.number().int().positive().optional(),
      })
      .strict()
      .optional(),
    settings: SettingsSchema.optional(),
    policies: z.string().min(1).max(32_000).optional(),
    quotas: QuotasSchema.optional(),
    fixtures: z.array(FixtureSchema).default([]),
    script: z.array(ScriptedReplySchema).min(1).optional(),
    attacks: z.union([z.literal("all"), z.array(z.enum(ATTACK_NAMES)).min(1)]).optional(),
    repeat: z.number().int().min(1).max(100).optional(),
    minPassRate: z.number().min(0).max(1).optional(),
    expect: ExpectSchema.default({}),
  })
  .strict()
  .refine((s) => (s.prompt === undefined) !== (s.conversation === undefined), {
    message: "give exactly one of prompt and conversation",
  })
  .refine((s) => !(s.script && s.attacks), { message: "a scenario has a script or attacks, not both" })
  .refine((s) => new Set(s.fixtures.map((f) => f.name)).size === s.fixtures.length, {
    message: "fixture names must be unique",
  });

/**
 * The configuration variables of a scenario's `policies` (POLICIES: its Cedar text, the default set every
 * tenant without its own is held to) and `quotas` (USER_TOKENS_PER_DAY, TENANT_COST_PER_DAY, …,
 * MODEL_PRICES); checked by the function's own config schema when the scenario runs.
 */
export function governanceSettings(scenario: Pick<Scenario, "policies" | "quotas">): Record<string, string> {
  const out: Record<string, string> = {};
  if (scenario.policies) out.POLICIES = scenario.policies;
  const { user = {}, tenant = {}, prices } = scenario.quotas ?? {};
  const names: Array<[string, unknown]> = [
    ["USER_RUNS_PER_MINUTE", user.runsPerMinute],
    ["USER_TOKENS_PER_DAY", user.tokensPerDay],
    ["USER_COST_PER_DAY", user.costPerDay],
    ["TENANT_RUNS_PER_MINUTE", tenant.runsPerMinute],
    ["TENANT_CONCURRENT_RUNS", tenant.concurrentRuns],
    ["TENANT_TOKENS_PER_DAY", tenant.tokensPerDay],
    ["TENANT_COST_PER_DAY", tenant.costPerDay],
  ];
  for (const [name, value] of names) if (value !== undefined) out[name] = String(value);
  if (prices) out.MODEL_PRICES = JSON.stringify(prices);
  return out;
}

/** A validated scenario, with the file it came from. */
export type Scenario = z.infer<typeof ScenarioSchema> & { file: string };

/** A scenario file that is not valid: the file and every problem, `path: message`. */
export class ScenarioError extends Error {
  constructor(
    readonly file: string,
    readonly problems: string[],
  ) {
    super(`${file}: ${problems.join("; ")}`);
    this.name = new.target.name;
  }
}

/**
 * Parses one scenario file's text (YAML, of which JSON is a subset) and validates it.
 * @throws ScenarioError naming every problem (unknown fields included) with its path
 */
export function parseScenario(text: string, file: string): Scenario {
  let raw: unknown;
  try {
    raw = parseYaml(text, { prettyErrors: true });
  } catch (error) {
    throw new ScenarioError(file, [(error as Error).message.split("\n")[0] ?? "unreadable"]);
  }
  const parsed = ScenarioSchema.safeParse(raw);
  if (!parsed.success) {
    throw new ScenarioError(
      file,
      parsed.error.issues.map((issue) => `${issue.path.join(".") || "(root)"}: ${issue.message}`),
    );
  }
  const stem = basename(file, extname(file));
  if (parsed.data.name !== stem) throw new ScenarioError(file, [`name: must be the file's name, "${stem}"`]);
  return { ...parsed.data, file };
}

/**
 * Every scenario under `paths` (files, or folders read recursively for `.yaml`, `.yml` and `.json`), in
 * path order; a file named twice (itself and through its folder) is read once.
 * @throws ScenarioError for the first invalid file, or for the second of two files whose scenarios share
 *   a name (the report lists cases by name)
 */
export async function loadScenarios(paths: readonly string[]): Promise<Scenario[]> {
  const files = new Map<string, string>();
  for (const path of paths) {
    for (const file of await filesUnder(path)) if (!files.has(resolve(file))) files.set(resolve(file), file);
  }
  const scenarios: Scenario[] = [];
  const byName = new Map<string, string>();
  for (const file of [...files.values()].sort()) {
    const scenario = parseScenario(await readFile(file, "utf8"), file);
    const other = byName.get(scenario.name);
    if (other) throw new ScenarioError(file, [`name: "${scenario.name}" is also the name of ${other}`]);
    byName.set(scenario.name, file);
    scenarios.push(scenario);
  }
  return scenarios;
}

async function filesUnder(path: string): Promise<string[]> {
  const entries = await readdir(path, { withFileTypes: true }).catch(() => undefined);
  if (!entries) return [path];
  const nested = await Promise.all(
    entries.map((entry) =>
      entry.isDirectory() ? filesUnder(join(path, entry.name)) : [join(path, entry.name)],
    ),
  );
  return nested.flat().filter((file) => /\.(ya?ml|json)$/.test(file));
}
