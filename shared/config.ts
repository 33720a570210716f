/**
 * The service's configuration: the environment it reads, once, at cold start. Each concern is a section
 * in shared/config/ (its variables as zod schemas, its part of {@link Config}, the rules between its
 * variables, its prose); this module composes them in {@link CONFIG_SECTIONS}, and is the one entry the
 * rest of the code imports. Adding a section: one file in shared/config/ (see shared/config/section.ts)
 * and one line in {@link CONFIG_SECTIONS}.
 */
import * as z from "zod/mini";
import { answerGroundingSection } from "./config/answer-grounding.js";
import { approvalSection } from "./config/approval-rules.js";
import { durableRunsSection } from "./config/durable-runs.js";
import { dynamodbSection } from "./config/dynamodb.js";
import { eventStreamSection } from "./config/event-streams.js";
import { httpIdentitySection } from "./config/http-identity.js";
import { modelSection } from "./config/model-provider.js";
import { policySection } from "./config/policies.js";
import { quotaSection } from "./config/quotas.js";
import { retentionSection } from "./config/retention.js";
import { runLimitsSection } from "./config/run-limits.js";
import type { EnvFields, GivenEnv, ParsedEnv } from "./config/section.js";
import { telemetrySection } from "./config/telemetry.js";
import { tokenIssuerSection } from "./config/token-issuer.js";

export type { ApprovalRulesConfig } from "./config/approval-rules.js";
export { FUNCTION_TIMEOUT_SECONDS } from "./config/function-timeout.js";
export {
  BEDROCK_MODEL_ID_PATTERN,
  BEDROCK_MODEL_ID_RULE,
  bedrockBaseUrl,
  DEFAULT_BEDROCK_MODEL_ID,
  MAX_SYSTEM_PROMPT_CHARS,
  type ModelProvider,
} from "./config/model-provider.js";
export type { ObservabilityLogLevel, TracingMode } from "./config/telemetry.js";

/**
 * Every section of the configuration, in the order docs/configuration.md lists their variables within a
 * heading. A variable belongs to exactly one section; rules between variables are checked in this order.
 */
export const CONFIG_SECTIONS = [
  modelSection,
  dynamodbSection,
  runLimitsSection,
  retentionSection,
  httpIdentitySection,
  durableRunsSection,
  approvalSection,
  policySection,
  eventStreamSection,
  tokenIssuerSection,
  telemetrySection,
  answerGroundingSection,
  quotaSection,
] as const;

type Section = (typeof CONFIG_SECTIONS)[number];
/** The intersection of a union's members. */
type Intersection<U> = (U extends unknown ? (part: U) => void : never) extends (part: infer I) => void
  ? I
  : never;
/** Every section's variables in one object type. */
type AllFields = Intersection<Section["fields"]>;

/**
 * The environment the service reads, once, at cold start: the variables of every section of
 * {@link CONFIG_SECTIONS}. This schema is the single source of truth for variable names, defaults and
 * bounds; infra/ and `.env.example` take their names from it. Each section's module says where its
 * limits and defaults come from.
 */
export const ConfigSchema = z.object(
  Object.assign({}, ...CONFIG_SECTIONS.map((section) => section.fields)) as {
    [K in keyof AllFields]: AllFields[K];
  },
);

/** The parsed environment, see {@link ConfigSchema}. */
export type RawConfig = z.infer<typeof ConfigSchema>;

/**
 * Service configuration in the shapes the code uses: each member is one section's part (the section's
 * module documents it): `model`, `prompts` (config/model-provider.ts); `table` (config/dynamodb.ts);
 * `limits`, `history` (config/run-limits.ts); `quotes`, `idempotency`, `runs` (config/retention.ts);
 * `identity`, `http`, `console` (config/http-identity.ts); `durable` (config/durable-runs.ts);
 * `approvals` (config/approval-rules.ts); `stream` (config/event-streams.ts); `auth`, every bearer
 * token check (config/token-issuer.ts); `observability`, `tracing` (config/telemetry.ts); `grounding`
 * (config/answer-grounding.ts); `quotas` (config/quotas.ts).
 */
export interface Config extends Intersection<ReturnType<Section["config"]>> {}

/** Raised at cold start when the environment does not satisfy {@link ConfigSchema}. */
export class ConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = new.target.name;
  }
}

/** A section's mapping, called with the whole parsed environment (a superset of what it reads). */
type SectionFn<Out> = (env: ParsedEnv<EnvFields>) => Out;
/** A section's rules: the parsed environment and the environment as given. */
type SectionRules = (env: ParsedEnv<EnvFields>, given: GivenEnv) => string[];

/** The rules between settings that each pass on its own, one sentence per broken rule, section by section. */
function crossFieldProblems(raw: RawConfig, given: GivenEnv): string[] {
  return CONFIG_SECTIONS.flatMap((section) =>
    "problems" in section ? (section.problems as SectionRules)(raw, given) : [],
  );
}

/**
 * Parses the environment into a {@link Config}.
 * @param env a process.env-like record (defaults to `process.env`)
 * @throws ConfigError naming every invalid variable and why, or every rule between variables broken
 *   (each section's `problems`)
 * @example loadConfig({ TABLE_NAME: "boundloop-dev", MAX_CYCLES: "3" })
 */
export function loadConfig(env: Record<string, string | undefined> = process.env): Config {
  const parsed = ConfigSchema.safeParse(env);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((issue) => `${issue.path.join(".")}: ${issue.message}`);
    throw new ConfigError(`Invalid configuration: ${problems.join("; ")}`);
  }
  const raw = parsed.data;
  const conflicts = crossFieldProblems(raw, env);
  if (conflicts.length > 0) throw new ConfigError(`Invalid configuration: ${conflicts.join(" ")}`);
  return Object.assign(
    {},
    ...CONFIG_SECTIONS.map((section) => (section.config as SectionFn<object>)(raw)),
  ) as Config;
}

/**
 * The configuration of an empty environment: every default of {@link ConfigSchema}, in the shapes of
 * {@link Config}. Code that needs a default (the stack's Powertools names, identity without a Config)
 * reads it here, so each default is written once, in the schema.
 */
export const CONFIG_DEFAULTS: Config = loadConfig({});
