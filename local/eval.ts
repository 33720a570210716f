/**
 * `npm run eval [-- paths…] [options]`: runs the eval scenarios (default: every file under evals/) through
 * the real handler, DynamoDB Local and the dispatcher against the model the flags choose, prints the
 * report as a table, and exits 1 when a case falls below its pass rate, any disallowed effect happened,
 * or (with --compare) a case regressed. docs/evals.md has the format, the report and the hostile suite.
 */
import { readFile, stat, writeFile } from "node:fs/promises";
import { parseArgs } from "node:util";
import { ConfigError } from "../shared/config.js";
import type { ModelChoice } from "./eval/harness.js";
import {
  compareReports,
  formatChanges,
  formatMarkdown,
  formatTable,
  parseEarlierReport,
} from "./eval/report.js";
import { loadScenarios, ScenarioError } from "./eval/scenario.js";
import type { LocalModelServer } from "./model-server.js";
import { resolvedNote, userPath } from "./user-path.js";

const USAGE = `usage: npm run eval -- [paths…] [options]

  paths                 scenario files or folders (default: evals/)
  --model <m>           local (default): the local model server, playing each scenario's script or
                        attack, else the deterministic planner; planner: the planner for every scenario;
                        an http(s) URL: any OpenAI-compatible endpoint (OPENAI_API_KEY, OPENAI_MODEL
                        from the environment); scripts and attacks are then not played
  --bedrock             the model through the Bedrock provider (MODEL_PROVIDER=bedrock): the local
                        Bedrock stand-in, or BEDROCK_BASE_URL and your AWS credentials
  --repeat <n>          attempts per case (default: each scenario's repeat, else 1)
  --filter <text>       only scenarios whose name or a tag contains <text>
  --json <file>         write the report as JSON (what --compare reads)
  --markdown <file>     write the report as markdown, with every case's trajectory
  --compare <file>      compare with an earlier JSON report; a regression fails the run
  -h, --help            this text`;

class UsageError extends Error {}

function options(argv: string[]) {
  try {
    return parseArgs({
      args: argv,
      allowPositionals: true,
      options: {
        model: { type: "string", default: "local" },
        bedrock: { type: "boolean" },
        repeat: { type: "string" },
        filter: { type: "string" },
        json: { type: "string" },
        markdown: { type: "string" },
        compare: { type: "string" },
        help: { type: "boolean", short: "h" },
      },
    });
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
}

/** The model choice and the environment it needs, from --model and --bedrock. */
function modelOf(
  model: string,
  bedrock: boolean | undefined,
): { choice: ModelChoice; env: Record<string, string>; name: string } {
  if (bedrock)
    return {
      choice: "external",
      env: { MODEL_PROVIDER: "bedrock" },
      name: "Bedrock (MODEL_PROVIDER=bedrock)",
    };
  if (model === "local" || model === "planner") {
    return {
      choice: model,
      env: {},
      name: model === "local" ? "the local model server" : "the local planner",
    };
  }
  if (!/^https?:\/\//.test(model))
    throw new UsageError(`--model must be local, planner or an http(s) URL, not "${model}"`);
  return {
    choice: "external",
    env: { OPENAI_BASE_URL: model },
    name: `${model} (${process.env.OPENAI_MODEL ?? "gpt-4o-mini"})`,
  };
}

/**
 * The --compare report, read and checked before the suite runs: a file that cannot be read, is not JSON
 * or is not a report would otherwise fail the run only after every case had run, as if a case had.
 * @throws UsageError naming the file and what is wrong with it
 */
async function readEarlier(file: string): Promise<unknown> {
  try {
    const earlier = JSON.parse(await readFile(userPath(file), "utf8")) as unknown;
    parseEarlierReport(earlier);
    return earlier;
  } catch (error) {
    const reason =
      (error as NodeJS.ErrnoException).code === "ENOENT"
        ? `no such file${resolvedNote(file)}`
        : (error as Error).message;
    throw new UsageError(`--compare ${file}: ${reason}`);
  }
}

async function main(): Promise<number> {
  const { values, positionals } = options(process.argv.slice(2));
  if (values.help) {
    console.log(USAGE);
    return 0;
  }
  // Plain decimal digits, as every number setting (Number() would read "1e1" as 10 and " 2" as 2).
  const repeat =
    values.repeat === undefined
      ? undefined
      : /^\d+$/.test(values.repeat)
        ? Number(values.repeat)
        : Number.NaN;
  if (repeat !== undefined && !(Number.isInteger(repeat) && repeat >= 1 && repeat <= 100)) {
    throw new UsageError("--repeat must be an integer from 1 to 100");
  }
  const filter = values.filter;
  // A path that names nothing is a mistake on the command line (2), not a failed eval (1). The user's
  // paths are from the directory npm was run in (local/user-path.ts); the default is the repository's.
  for (const path of positionals) {
    if (!(await stat(userPath(path)).catch(() => undefined))) {
      throw new UsageError(`${path}: no such file or folder${resolvedNote(path)}`);
    }
  }
  const paths = positionals.length > 0 ? positionals.map((path) => userPath(path)) : ["evals"];
  const scenarios = (await loadScenarios(paths)).filter(
    (s) => !filter || s.name.includes(filter) || s.tags.some((tag) => tag.includes(filter)),
  );
  if (scenarios.length === 0) throw new UsageError("no scenario matched");
  const model = modelOf(values.model, values.bedrock);
  const earlier = values.compare ? await readEarlier(values.compare) : undefined;

  // Loaded once the command line and the scenarios are known good: a mistake in either answers at once.
  const [{ runSuite }, { startLocalStack }, { startModelServer }] = await Promise.all([
    import("./eval/suite.js"),
    import("./local-stack.js"),
    import("./model-server.js"),
  ]);
  let server: LocalModelServer | undefined;
  if (model.choice !== "external") server = await startModelServer();
  const env = { ...process.env, ...model.env, ...(server ? { OPENAI_BASE_URL: server.baseURL } : {}) };
  const stack = await startLocalStack(
    env,
    undefined,
    server ? { modelServer: { name: `${model.name} this command started`, baseURL: server.baseURL } } : {},
  );
  // The AWS SDK's default credential chain (Bedrock's keys) reads the process's environment.
  Object.assign(process.env, stack.env);
  try {
    const report = await runSuite(scenarios, {
      context: { env: { ...env, ...stack.env }, model: server, choice: model.choice },
      model: model.name,
      repeat,
      onCase: (result) => process.stderr.write(`eval: ${result.passed ? "pass" : "FAIL"} ${result.name}\n`),
    });
    console.log(formatTable(report));
    if (values.json) await writeFile(userPath(values.json), `${JSON.stringify(report, null, 2)}\n`);
    if (values.markdown) await writeFile(userPath(values.markdown), formatMarkdown(report));
    const changes = earlier === undefined ? [] : compareReports(earlier, report);
    if (earlier !== undefined) console.log(`\n${formatChanges(changes)}`);
    const regressed = changes.some((change) => change.kind === "regression");
    return report.totals.passed === report.totals.cases && report.totals.disallowed === 0 && !regressed
      ? 0
      : 1;
  } finally {
    await stack.stop();
    await server?.stop();
  }
}

// The report is the point: the function's JSON logs and EMF metrics stay off unless asked for.
process.env.POWERTOOLS_LOG_LEVEL ??= "ERROR";
process.env.POWERTOOLS_METRICS_DISABLED ??= "true";
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= "true";

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    if (error instanceof UsageError) {
      console.error(`eval: ${error.message}\n\n${USAGE}`);
      process.exit(2);
    }
    const known = error instanceof ScenarioError || error instanceof ConfigError;
    console.error(
      known
        ? `eval: ${(error as Error).message}`
        : error instanceof Error
          ? (error.stack ?? error.message)
          : String(error),
    );
    process.exit(1);
  },
);
