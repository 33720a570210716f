/**
 * `npm run tenant -- limits <tenant> [show] [options]`: an operator sets a tenant's own limits
 * (docs/quotas.md "Per-tenant overrides"), the same change as `PUT /v1/limits` through the same use case
 * (shared/quotas/api.ts limitsChange, the LimitsChangeSchema body), written by an operator instead of a
 * caller holding `limits:admin`; `show` reads them through `GET /v1/limits`' use case (limitsView).
 *
 *   --tenant-runs-per-minute N   --tenant-concurrent-runs N   --tenant-tokens-per-day N
 *   --tenant-cost-per-day D      --user-runs-per-minute N     --user-tokens-per-day N
 *   --user-cost-per-day D        each N|D may be `null` (back to the deploy setting)
 *   --clear <field>              the same as `null`: tenant.costPerDay, tenant-cost-per-day, or all
 *
 * Where: `--endpoint` (or DYNAMODB_ENDPOINT) is a local DynamoDB (`npm run dev`'s, DynamoDB Local), the
 * table `--table`, TABLE_NAME or boundloop. When a running `npm run dev` uses that table (the same
 * endpoint and table name in its issuer file), the change goes through its `PUT /v1/limits`, which
 * stores it once with the dev server's settings and wakes the tenant's runs waiting for budget there
 * (their durable waits live in its process: local/tenant-wake.ts); otherwise, or when the dev server
 * answers an error other than refusing the change, it is stored here with this shell's settings
 * (MODEL_PRICES, the model) and the waiting runs are counted, with a note saying why none was woken.
 * Otherwise the deployed stack `--stack-name` (default Boundloop), with the shell's AWS credentials and
 * region: its table from the TableName output (CloudFormation DescribeStacks) or `--table`, and the API
 * function's own settings (ApiFunctionName output, Lambda GetFunctionConfiguration: MODEL_PRICES, the
 * model, RUNNER_FUNCTION_ARN), so a cost limit is checked against the prices the functions use and the
 * tenant's runs waiting for budget are woken through the runner, as PUT /v1/limits does.
 */
import { userInfo } from "node:os";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { Logger } from "@aws-lambda-powertools/logger";
import { CloudFormationClient, DescribeStacksCommand } from "@aws-sdk/client-cloudformation";
import { GetFunctionConfigurationCommand, LambdaClient } from "@aws-sdk/client-lambda";
import { loadConfig } from "../shared/config.js";
import { quotasOf } from "../shared/deps.js";
import { DomainError } from "../shared/domain-errors.js";
import type { DurableExecutions } from "../shared/durable/executions.js";
import { createLambdaDurableExecutions } from "../shared/durable/lambda-executions.js";
import {
  LIMITS_ADMIN,
  type LimitsView,
  limitsChange,
  limitsView,
  wakeWaiting,
} from "../shared/quotas/api.js";
import { type LimitsChange, LimitsChangeSchema } from "../shared/quotas/limits.js";
import { createDocumentClient } from "../shared/store/dynamo.js";
import { TENANT_ID_PATTERN } from "../shared/user-roles.js";
import { readIssuerFile, runningIssuerFiles } from "./dev-auth.js";
import {
  changeThroughDevServer,
  type DevServerAnswer,
  devServerOnTable,
  LOCAL_WAKE_NOTE,
} from "./tenant-wake.js";

/** The flags that set one limit: flag name → [section, field] of {@link LimitsChange}. */
const LIMIT_FLAGS = {
  "tenant-runs-per-minute": ["tenant", "runsPerMinute"],
  "tenant-concurrent-runs": ["tenant", "concurrentRuns"],
  "tenant-tokens-per-day": ["tenant", "tokensPerDay"],
  "tenant-cost-per-day": ["tenant", "costPerDay"],
  "user-runs-per-minute": ["user", "runsPerMinute"],
  "user-tokens-per-day": ["user", "tokensPerDay"],
  "user-cost-per-day": ["user", "costPerDay"],
} as const;

type LimitFlag = keyof typeof LIMIT_FLAGS;

const USAGE = `usage: npm run tenant -- limits <tenant> [show] [options]

  ${Object.keys(LIMIT_FLAGS)
    .map((flag) => `--${flag} <${flag.endsWith("cost-per-day") ? "decimal" : "n"}|null>`)
    .join("\n  ")}
  --clear <field>        back to the deploy setting: tenant.tokensPerDay, tenant-tokens-per-day, … or all

  --endpoint <url>       a local DynamoDB (default $DYNAMODB_ENDPOINT); table --table, $TABLE_NAME or boundloop
  --stack-name <name>    otherwise the deployed stack whose TableName output names the table (default Boundloop)
  --table <name>         the table, instead of the stack's output`;

/** An operator's mistake: printed with the usage line, exit code 2, nothing written. */
export class UsageError extends Error {
  override name = "UsageError";
}

/** A parsed `limits` command: the tenant, `show` or the change to make, where the table is. */
export interface LimitsCommand {
  tenantId: string;
  change: LimitsChange | "show";
  target: { endpoint: string; table: string } | { stackName: string; table: string | undefined };
}

/** A flag's value as the schema takes it: `null`, a number for a count, the text for a cost. */
function flagValue(flag: LimitFlag, raw: string): number | string | null {
  if (raw === "null") return null;
  if (flag.endsWith("cost-per-day")) return raw;
  return /^-?\d+(\.\d+)?(e\d+)?$/i.test(raw.trim()) ? Number(raw) : raw;
}

/** The flag of a `--clear` field (`tenant.costPerDay` or `tenant-cost-per-day`). */
function clearedFlag(field: string): LimitFlag {
  const flag = Object.entries(LIMIT_FLAGS).find(
    ([name, [section, key]]) => field === name || field === `${section}.${key}`,
  )?.[0];
  if (!flag)
    throw new UsageError(
      `--clear ${field}: not a limit (one of ${Object.keys(LIMIT_FLAGS).join(", ")}, all).`,
    );
  return flag as LimitFlag;
}

/**
 * The change the flags ask for, validated by {@link LimitsChangeSchema} (the body of PUT /v1/limits).
 * @throws UsageError naming the flag and the bound it breaks
 */
export function changeOf(values: Partial<Record<LimitFlag, string>>, clear: readonly string[]): LimitsChange {
  const body: { tenant?: Record<string, unknown>; user?: Record<string, unknown> } = {};
  const set = (flag: LimitFlag, value: number | string | null) => {
    const [section, field] = LIMIT_FLAGS[flag];
    body[section] = { ...body[section], [field]: value };
  };
  for (const field of clear) {
    for (const flag of field === "all" ? (Object.keys(LIMIT_FLAGS) as LimitFlag[]) : [clearedFlag(field)])
      set(flag, null);
  }
  for (const flag of Object.keys(LIMIT_FLAGS) as LimitFlag[]) {
    const raw = values[flag];
    if (raw === undefined) continue;
    if (clear.length > 0 && (clear.includes("all") || clear.map(clearedFlag).includes(flag)))
      throw new UsageError(`--${flag} and --clear of the same limit: choose one.`);
    set(flag, flagValue(flag, raw));
  }
  if (!body.tenant && !body.user)
    throw new UsageError("No limit given: pass a --tenant-…/--user-… flag, --clear, or show.");
  const parsed = LimitsChangeSchema.safeParse(body);
  if (parsed.success) return parsed.data;
  const problems = parsed.error.issues.map((issue) => {
    const flag = Object.entries(LIMIT_FLAGS).find(
      ([, [section, key]]) => issue.path[0] === section && issue.path[1] === key,
    )?.[0];
    return `--${flag ?? issue.path.join(".")} ${JSON.stringify(values[flag as LimitFlag] ?? null)}: ${issue.message}`;
  });
  throw new UsageError(problems.join("\n"));
}

/**
 * Parses `limits <tenant> [show] [options]` (the arguments after `npm run tenant --`).
 * @throws UsageError for an unknown command or flag, a bad tenant id or a limit out of bounds
 */
export function parseLimitsCommand(argv: readonly string[], env: NodeJS.ProcessEnv): LimitsCommand {
  const [command, tenantId, ...rest] = argv;
  if (command !== "limits") throw new UsageError(`Unknown command ${command ?? "(none)"}: only limits.`);
  if (!tenantId || !TENANT_ID_PATTERN.test(tenantId))
    throw new UsageError(
      `<tenant> must be 1-64 characters of A-Z a-z 0-9 _ -, not ${JSON.stringify(tenantId ?? "")}.`,
    );
  const flags = Object.fromEntries(
    Object.keys(LIMIT_FLAGS).map((flag) => [flag, { type: "string" as const }]),
  );
  let parsed: ReturnType<typeof parseArgs>;
  try {
    parsed = parseArgs({
      args: [...rest],
      allowPositionals: true,
      options: {
        ...flags,
        clear: { type: "string", multiple: true },
        endpoint: { type: "string" },
        table: { type: "string" },
        "stack-name": { type: "string" },
      },
    });
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
  const { values, positionals } = parsed as {
    values: Record<string, string | string[] | undefined>;
    positionals: string[];
  };
  const show = positionals[0] === "show";
  if (positionals.length > (show ? 1 : 0))
    throw new UsageError(`Unexpected ${positionals.join(" ")}: only show.`);
  const limits = values as Partial<Record<LimitFlag, string>>;
  const clear = (values.clear as string[] | undefined) ?? [];
  const given = Object.keys(LIMIT_FLAGS).some((flag) => limits[flag as LimitFlag] !== undefined);
  if (show && (given || clear.length > 0))
    throw new UsageError("show changes nothing: leave out the limit flags.");
  const change = show ? ("show" as const) : changeOf(limits, clear);
  const endpoint = (values.endpoint as string | undefined) ?? env.DYNAMODB_ENDPOINT;
  const table = values.table as string | undefined;
  const target = endpoint
    ? { endpoint, table: table ?? env.TABLE_NAME ?? "boundloop" }
    : { stackName: (values["stack-name"] as string | undefined) ?? "Boundloop", table };
  return { tenantId, change, target };
}

/** The outputs of a deployed stack that the command reads: its table and its API function's name. */
async function stackOutputs(stackName: string): Promise<{ table: string; apiFunctionName: string }> {
  const cloudformation = new CloudFormationClient({});
  try {
    const { Stacks } = await cloudformation.send(new DescribeStacksCommand({ StackName: stackName }));
    const output = (key: string) => {
      const value = Stacks?.[0]?.Outputs?.find((entry) => entry.OutputKey === key)?.OutputValue;
      if (!value) throw new Error(`Stack ${stackName} has no ${key} output (deploy this version first).`);
      return value;
    };
    return { table: output("TableName"), apiFunctionName: output("ApiFunctionName") };
  } finally {
    cloudformation.destroy();
  }
}

/** The environment a deployed function runs with (its configured settings). */
async function functionEnvironment(functionName: string): Promise<Record<string, string>> {
  const lambda = new LambdaClient({});
  try {
    const found = await lambda.send(new GetFunctionConfigurationCommand({ FunctionName: functionName }));
    return found.Environment?.Variables ?? {};
  } finally {
    lambda.destroy();
  }
}

/**
 * The flags that point the command at a running `npm run dev`'s table (from its issuer file), or where to
 * find them: a reader who ran the examples after `npm run dev` and reached the stack path by omission.
 */
async function localTableHint(env: NodeJS.ProcessEnv, directory: string | undefined): Promise<string> {
  for (const { port, path } of await runningIssuerFiles(directory)) {
    const table = (await readIssuerFile(path).catch(() => undefined))?.table;
    if (!table?.endpoint) continue;
    const named = table.name === (env.TABLE_NAME ?? "boundloop") ? "" : ` --table ${table.name}`;
    return `for the table of \`npm run dev\` on port ${port}, pass --endpoint ${table.endpoint}${named}`;
  }
  return "for a local table, pass --endpoint <url> (the URL on the `dynamodb:` line `npm run dev` prints)";
}

/**
 * The settings and the durable runner of the command's target: for a local DynamoDB, this shell's
 * environment and no runner; for a deployed stack, the API function's environment (its TableName output
 * or `--table`) and its runner (RUNNER_FUNCTION_ARN) with the shell's credentials.
 * @param devServers where running dev servers' issuer files are (default the repo's `.boundloop/`)
 * @throws Error when the stack cannot be read (no region or credentials, no such stack), saying what was
 *   asked and how to reach a local table instead
 */
export async function targetOf(
  target: LimitsCommand["target"],
  env: NodeJS.ProcessEnv,
  devServers?: string,
): Promise<{ env: NodeJS.ProcessEnv; executions: DurableExecutions | undefined }> {
  if ("endpoint" in target) {
    return {
      env: { ...env, TABLE_NAME: target.table, DYNAMODB_ENDPOINT: target.endpoint },
      executions: undefined,
    };
  }
  let outputs: Awaited<ReturnType<typeof stackOutputs>>;
  try {
    outputs = await stackOutputs(target.stackName);
  } catch (error) {
    const said = error instanceof Error ? error.message : String(error);
    throw new Error(
      `No local table given (--endpoint or DYNAMODB_ENDPOINT), so the deployed stack ${target.stackName} was asked, and that failed: ${said}. For a stack, set AWS_REGION and credentials (--stack-name to name it); ${await localTableHint(env, devServers)}.`,
    );
  }
  const deployed = await functionEnvironment(outputs.apiFunctionName);
  const runner = deployed.RUNNER_FUNCTION_ARN;
  return {
    env: { ...deployed, TABLE_NAME: target.table ?? outputs.table, DYNAMODB_ENDPOINT: undefined },
    executions: runner ? createLambdaDurableExecutions(runner) : undefined,
  };
}

/**
 * What the command did to the tenant's runs waiting for budget: how many waited (when the change was
 * made), how many it woke itself (absent when a dev server was asked to wake them: it does not say how
 * many it woke), and where it woke none itself, a note saying who was asked, or why none was woken and
 * when they wake instead.
 */
export interface WakeReport {
  waiting: number;
  woken?: number;
  note?: string;
}

/** Where the command looks for running dev servers (tests give their own directory). */
export interface LimitsCommandOptions {
  /** The directory of the dev servers' issuer files (default the repo's `.boundloop/`). */
  devServers?: string;
}

/**
 * Runs a parsed command against its table: sets the limits (limitsChange, as `PUT /v1/limits`) and wakes
 * the tenant's runs waiting for budget where it can (on a local table, through the dev server that uses
 * it), or reads them (limitsView, as `GET /v1/limits`); answers as those routes do, the limits in force,
 * what the tenant has set, who set it and when (and, for a change, {@link WakeReport}). The limits in
 * force are by the settings of whoever stored the change or read them: the dev server the change went
 * through, else this shell's for a local table, the API function's for a deployed stack. A wake that fails never fails the command: the limits are stored, the note says why.
 * @throws DomainError INVALID_REQUEST for a cost limit while MODEL has no price (the dev server's, when
 *   the change goes through it); the store's errors
 */
export async function runLimitsCommand(
  command: LimitsCommand,
  env: NodeJS.ProcessEnv,
  options: LimitsCommandOptions = {},
): Promise<LimitsView & { wake?: WakeReport }> {
  const target = await targetOf(command.target, env, options.devServers);
  const config = loadConfig(target.env);
  const ddb = createDocumentClient(config.table);
  try {
    const quotas = quotasOf(config, ddb);
    const security = {
      tenantId: command.tenantId,
      userId: `operator:${userInfo().username}`,
      permissions: [LIMITS_ADMIN],
    };
    const logger = new Logger({ serviceName: "tenant", logLevel: "WARN" });
    if (command.change === "show") return await limitsView({ quotas, logger }, security);
    const change = command.change;
    const store = () => limitsChange({ quotas, logger }, security, change);
    if ("endpoint" in command.target) {
      // Counted before the change: the dev server's wake removes the waits it completes. Read here, not
      // through wakeWaiting (which logs a failed read and counts none): a local table that cannot be read
      // fails the command below, as the change would.
      const waiting = (await quotas.waits.list(command.tenantId)).length;
      const server = await devServerOnTable(command.target, options.devServers);
      const sent: DevServerAnswer =
        "note" in server ? server : await changeThroughDevServer(server, security, change);
      if (sent.view) return { ...sent.view, wake: { waiting, note: sent.note } };
      return { ...(await store()), wake: { waiting, woken: 0, note: sent.note } };
    }
    const view = await store();
    const { executions } = target;
    const wake = await wakeWaiting(quotas, { quotas, logger, executions }, command.tenantId);
    return { ...view, wake: executions ? wake : { ...wake, note: LOCAL_WAKE_NOTE } };
  } catch (error) {
    throw missingLocalTable(error, config.table) ?? error;
  } finally {
    ddb.destroy();
  }
}

/**
 * The error to print when `error` is DynamoDB's ResourceNotFoundException from a local endpoint: the SDK's
 * sentence ("Cannot do operations on a non-existent table") names neither the table nor the endpoint.
 */
function missingLocalTable(error: unknown, table: { name: string; endpoint?: string | undefined }) {
  if (!(error instanceof Error) || error.name !== "ResourceNotFoundException" || !table.endpoint) return;
  return new Error(
    `there is no table ${table.name} at ${table.endpoint}: give the table that DynamoDB holds (--table or TABLE_NAME; npm run dev's is boundloop unless its TABLE_NAME says otherwise).`,
  );
}

/**
 * The command line: prints the tenant's limits as JSON on stdout (GET /v1/limits' body with `tenantId`,
 * and `wake` for a change). A refusal of the domain is printed as the API states it, `tenant: <code>:
 * <sentence>` on stderr: exit 2 for a refused input (INVALID_REQUEST, like a bad flag), else 1.
 * @throws what is not the domain's refusal (the caller prints it and exits 1)
 */
export async function main(
  argv: readonly string[],
  env: NodeJS.ProcessEnv = process.env,
  options: LimitsCommandOptions = {},
): Promise<number> {
  if (argv.includes("--help") || argv.includes("-h")) {
    process.stderr.write(`${USAGE}\n`);
    return 0;
  }
  let command: LimitsCommand;
  try {
    command = parseLimitsCommand(argv, env);
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    process.stderr.write(`tenant: ${error.message}\n${USAGE}\n`);
    return 2;
  }
  let view: Awaited<ReturnType<typeof runLimitsCommand>>;
  try {
    view = await runLimitsCommand(command, env, options);
  } catch (error) {
    if (!(error instanceof DomainError)) throw error;
    process.stderr.write(`tenant: ${error.code}: ${error.message}\n`);
    return error.code === "INVALID_REQUEST" ? 2 : 1;
  }
  process.stdout.write(`${JSON.stringify({ tenantId: command.tenantId, ...view }, null, 2)}\n`);
  return 0;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  // The AWS SDK's "Node 20 support ends" notice is noise for a command-line tool.
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= "true";
  main(process.argv.slice(2)).then(
    (code) => process.exit(code),
    (error: unknown) => {
      const name = error instanceof Error && error.name !== "Error" ? `${error.name}: ` : "";
      process.stderr.write(`tenant: ${name}${error instanceof Error ? error.message : String(error)}\n`);
      process.exit(1);
    },
  );
}
