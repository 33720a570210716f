/**
 * `npm run invoke -- events/<file>.json [more.json …] [--env-vars env.json] [--timeout 29]`: the
 * counterpart of `sam local invoke`. Loads the events (files, or `-` for stdin) and the variables
 * (`--env-vars`, else each event's `<event>.env.json` when it exists), starts the local dependencies the
 * environment does not provide (local/local-stack.ts), builds a Lambda context whose
 * getRemainingTimeInMillis counts down from the timeout (`--timeout`, else the deployed 29 s raised to
 * fit RUN_TIMEOUT_MS, local/function-timeout.ts), invokes the handler the stack deploys
 * (functions/api/handler.ts `handler`) with each event in order, in one process (so one table: an
 * event sent twice is a retry), and prints for each:
 * - on stderr: progress lines, then `START`, the handler's own log lines (its stdout and stderr, as
 *   structured JSON lines when the handler logs JSON), `END` and `REPORT` like the Lambda runtime;
 * - on stdout: `HTTP <status>`, the response headers, a blank line and the body (pretty JSON).
 *
 * Exit status (the worst of the events'): 0 when the response status is below 400; 1 when the response is an HTTP error
 * (4xx/5xx); 2 when the invocation itself failed (bad arguments, unreadable event, invalid config,
 * the handler threw or timed out); 128 + n when stopped by signal n (SIGINT → 130). Whatever the exit,
 * the dependencies it started are stopped first.
 */
import { performance } from "node:perf_hooks";
import { parseArgs } from "node:util";
import type { Context } from "aws-lambda";
import type { ApiEvent } from "../functions/api/handler.js";
import { FUNCTION_TIMEOUT_SECONDS } from "../shared/config/function-timeout.js";
import type { ProxyResult } from "./dev-event.js";
import { type LocalDynamo, startDynamoEarly } from "./dynamo.js";
import { localFunctionTimeout, MAX_FUNCTION_TIMEOUT_SECONDS } from "./function-timeout.js";
import { createLambdaContext, setLambdaRuntimeEnv } from "./lambda-context.js";
import type { LocalStack } from "./local-stack.js";
import { onShutdownSignal } from "./shutdown.js";
import { readUserFile, userPath } from "./user-path.js";

// Only the command line's own modules and local/dynamo.ts load before the arguments are read: a usage
// error answers at once, and DynamoDB Local's JVM starts before the configuration's schema, the stack's
// modules and the handler's load, so the two overlap (docs/local-workflow.md).

/** The function timeout as deployed (s), and so the default here. */
const DEFAULT_TIMEOUT_S = FUNCTION_TIMEOUT_SECONDS;
/** Lambda's largest timeout (s). */
const MAX_TIMEOUT_S = MAX_FUNCTION_TIMEOUT_SECONDS;

/** Exit statuses of `npm run invoke`. */
const INVOKE_EXIT = { ok: 0, httpError: 1, invocationFailed: 2 } as const;

const USAGE = `usage: npm run invoke -- <event.json | -> [more events…] [--env-vars <env.json | .env>] [--timeout <seconds>]

  <event.json>   an API Gateway / function URL event, e.g. events/seed-scenario.json; - reads stdin.
                 Several events are invoked in order in one process, on the same tables: the same
                 event twice is a retry (events/replay-idempotency-key.json replays)
  --env-vars     variables for the function: flat JSON, SAM's {"Parameters": {...}, "ApiFunction": {...}},
                 or a dotenv file (see .env.example); default: the event's own <event>.env.json if any
  --timeout      function timeout in seconds (default ${DEFAULT_TIMEOUT_S}, as deployed, or more when
                 RUN_TIMEOUT_MS needs it); the context's getRemainingTimeInMillis counts down from it`;

const log = (line: string) => process.stderr.write(`${line}\n`);

class UsageError extends Error {}
/** `--help`: print the usage and exit 0. */
class HelpRequested extends Error {}

interface Options {
  eventPaths: string[];
  envVarsPath: string | undefined;
  /** `--timeout` (s); undefined: follow RUN_TIMEOUT_MS (local/function-timeout.ts). */
  timeoutSeconds: number | undefined;
}

function parseOptions(argv: string[]): Options {
  const { values, positionals } = parseArgs({
    args: argv,
    options: {
      event: { type: "string", short: "e" },
      "env-vars": { type: "string", short: "n" },
      timeout: { type: "string", short: "t" },
      help: { type: "boolean", short: "h" },
    },
    allowPositionals: true,
  });
  if (values.help) throw new HelpRequested();
  const eventPaths = [...(values.event ? [values.event] : []), ...positionals];
  if (eventPaths.length === 0) throw new UsageError("give an event file.");
  if (eventPaths.filter((path) => path === "-").length > 1)
    throw new UsageError("stdin (-) can be read once.");
  const timeout = values.timeout === undefined ? undefined : Number(values.timeout);
  if (timeout !== undefined && (!Number.isFinite(timeout) || timeout <= 0 || timeout > MAX_TIMEOUT_S)) {
    throw new UsageError(`--timeout must be a number of seconds in (0, ${MAX_TIMEOUT_S}].`);
  }
  return { eventPaths, envVarsPath: values["env-vars"], timeoutSeconds: timeout };
}

async function readEvent(path: string): Promise<Record<string, unknown>> {
  let text: string;
  if (path === "-") {
    const chunks: Buffer[] = [];
    for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
    text = Buffer.concat(chunks).toString("utf8");
  } else {
    // Relative to where the user ran npm (INIT_CWD), not the repository root npm runs the script in.
    text = await readUserFile(path);
  }
  const event: unknown = JSON.parse(text);
  if (event === null || typeof event !== "object" || Array.isArray(event)) {
    throw new Error(`${path} must hold a JSON object (a Lambda event).`);
  }
  return event as Record<string, unknown>;
}

/** Sends everything the handler writes to stdout to stderr instead, so stdout holds only the result. */
function redirectStdout(): () => void {
  const original = process.stdout.write;
  process.stdout.write = process.stderr.write.bind(process.stderr) as typeof process.stdout.write;
  return () => {
    process.stdout.write = original;
  };
}

class InvocationTimeout extends Error {}

async function main(argv: string[]): Promise<number> {
  let options: Options;
  try {
    options = parseOptions(argv);
  } catch (error) {
    if (error instanceof HelpRequested) {
      log(USAGE);
      return INVOKE_EXIT.ok;
    }
    if (error instanceof UsageError || (error as { code?: string }).code?.startsWith("ERR_PARSE_ARGS")) {
      log(`invoke: ${(error as Error).message}`);
      log(USAGE);
      return INVOKE_EXIT.invocationFailed;
    }
    throw error;
  }
  const events: Array<{ path: string; event: Record<string, unknown> }> = [];
  for (const path of options.eventPaths) events.push({ path, event: await readEvent(path) });
  // The JVM starts once the arguments and the events are known good, before the variable files are read
  // when there are none (they may name DYNAMODB_ENDPOINT or BOUNDLOOP_DYNAMO_BACKEND).
  const files = await envVarsFiles(options);
  let dynamo: Promise<LocalDynamo> | undefined =
    files.length === 0 ? startDynamoEarly(process.env, { writeClassData: true }) : undefined;
  const vars: Record<string, string> = {};
  if (files.length > 0) {
    const { readEnvVarsFile } = await import("./env-vars.js");
    for (const file of files) {
      const read = await readEnvVarsFile(file);
      Object.assign(vars, read.vars);
      log(`env: ${Object.keys(read.vars).length} variable(s) from ${file}`);
      if (read.unknown.length > 0) log(`env: warning: boundloop reads none of ${read.unknown.join(", ")}`);
    }
    dynamo = startDynamoEarly({ ...process.env, ...vars }, { writeClassData: true });
  }
  const { startLocalStack } = await import("./local-stack.js");

  // A signal while the dependencies are still starting waits for them, then stops them all.
  const warm = import("./warm.js").then(({ warmHandlerModules }) => warmHandlerModules());
  const starting: Promise<LocalStack> = startLocalStack({ ...process.env, ...vars }, log, {
    writeClassData: true,
    ...(dynamo ? { dynamo } : {}),
  });
  let interrupted = false;
  onShutdownSignal(
    async () => {
      interrupted = true;
      await starting.then(
        (started) => started.stop(),
        () => undefined,
      );
    },
    { watchParent: true },
  );
  const stack = await starting;
  await warm;
  try {
    Object.assign(process.env, vars, stack.env);
    setLambdaRuntimeEnv();
    const { handler } = await import("../functions/api/handler.js");
    const timeoutMs = await functionTimeoutMs(options.timeoutSeconds);
    // The events share this process's tables: the same event sent twice is a retry (Idempotency-Key).
    let exit: number = INVOKE_EXIT.ok;
    for (const { path, event } of events) {
      // Interrupted before an invocation: invoke nothing; the signal handler stops everything and exits.
      if (interrupted) return await new Promise<never>(() => undefined);
      exit = Math.max(exit, await invokeOnce(handler, event, path, timeoutMs));
    }
    return exit;
  } finally {
    await stack.stop();
  }
}

/**
 * The variable files to load: `--env-vars` when given; otherwise each event's own `<event>.env.json`
 * next to it when there is one (events/function-url.env.json maps that event's IAM principal), so
 * `npm run invoke -- events/function-url.json` answers as the docs say.
 */
async function envVarsFiles(options: Options): Promise<string[]> {
  if (options.envVarsPath) return [options.envVarsPath];
  const { existsSync } = await import("node:fs");
  const sidecars = options.eventPaths
    .filter((path) => path !== "-" && path.endsWith(".json"))
    .map((path) => path.replace(/\.json$/, ".env.json"));
  return [...new Set(sidecars)].filter((path) => existsSync(userPath(path)));
}

/**
 * The function timeout (ms): `--timeout`, else the deployed one raised to fit RUN_TIMEOUT_MS
 * (local/function-timeout.ts); a line on stderr says when one caps or exceeds the other.
 */
async function functionTimeoutMs(explicitSeconds: number | undefined): Promise<number> {
  // Called once the handler has loaded: the configuration is valid (else that load names the variable).
  const { loadConfig } = await import("../shared/config.js");
  const timeout = localFunctionTimeout(loadConfig(process.env).limits, explicitSeconds, MAX_TIMEOUT_S);
  if (timeout.note) log(`invoke: ${timeout.note}`);
  return timeout.timeoutMs;
}

/** Invokes the handler with one event as the Lambda runtime would, prints the result; the exit status. */
async function invokeOnce(
  handler: (event: ApiEvent, context: Context) => Promise<unknown>,
  event: Record<string, unknown>,
  path: string,
  timeoutMs: number,
): Promise<number> {
  const context = createLambdaContext(timeoutMs);
  const requestId = context.awsRequestId;
  log(`invoke: ${path} → functions/api/handler.ts handler (timeout ${timeoutMs / 1000} s)`);
  log(`START RequestId: ${requestId} Version: ${context.functionVersion}`);
  const started = performance.now();
  const restore = redirectStdout();
  let timer: NodeJS.Timeout | undefined;
  let result: ProxyResult | string;
  try {
    const timedOut = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new InvocationTimeout()), timeoutMs);
    });
    result = (await Promise.race([handler(event as unknown as ApiEvent, context), timedOut])) as
      | ProxyResult
      | string;
  } catch (error) {
    restore();
    const seconds = ((performance.now() - started) / 1000).toFixed(2);
    if (error instanceof InvocationTimeout) {
      log(`${new Date().toISOString()} ${requestId} Task timed out after ${seconds} seconds`);
    } else {
      log(
        `invoke: the handler threw: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`,
      );
    }
    log(`END RequestId: ${requestId}`);
    log(`REPORT RequestId: ${requestId}\tDuration: ${(Number(seconds) * 1000).toFixed(2)} ms\tStatus: error`);
    return INVOKE_EXIT.invocationFailed;
  } finally {
    clearTimeout(timer);
    restore();
  }
  const durationMs = performance.now() - started;
  log(`END RequestId: ${requestId}`);
  log(
    `REPORT RequestId: ${requestId}\tDuration: ${durationMs.toFixed(2)} ms\tMemory Size: ${context.memoryLimitInMB} MB\tMax Memory Used: ${Math.round(process.memoryUsage.rss() / 2 ** 20)} MB`,
  );
  return printResult(result);
}

/**
 * Prints `HTTP <status>`, the headers (one `name: value` a line, set-cookie included) and the body,
 * pretty-printed when it is JSON, to stdout.
 * @returns the exit status for that response
 */
function printResult(result: ProxyResult | string): number {
  // A v2 handler may return a bare string or object: API Gateway then answers 200 with it as JSON.
  const response: ProxyResult =
    typeof result === "string" || result?.statusCode === undefined
      ? { statusCode: 200, headers: { "content-type": "application/json" }, body: JSON.stringify(result) }
      : result;
  const status = response.statusCode ?? 200;
  const headers: Array<[string, string]> = [
    ...Object.entries(response.headers ?? {}).map(([name, value]): [string, string] => [name, String(value)]),
    ...Object.entries(response.multiValueHeaders ?? {}).flatMap(([name, values]) =>
      values.map((value): [string, string] => [name, String(value)]),
    ),
    ...(response.cookies ?? []).map((cookie): [string, string] => ["set-cookie", cookie]),
  ];
  const lines = [`HTTP ${status}`, ...headers.map(([name, value]) => `${name.toLowerCase()}: ${value}`), ""];
  const contentType = headers.find(([name]) => name.toLowerCase() === "content-type")?.[1] ?? "";
  let body = response.body ?? "";
  if (response.isBase64Encoded) {
    const bytes = Buffer.from(body, "base64");
    body = /json|text|xml/i.test(contentType)
      ? bytes.toString("utf8")
      : `<${bytes.length} bytes of ${contentType || "binary"}, base64>`;
  }
  if (/json/i.test(contentType)) {
    try {
      body = JSON.stringify(JSON.parse(body), null, 2);
    } catch {
      // Not JSON after all: print it as it came.
    }
  }
  lines.push(body);
  process.stdout.write(`${lines.join("\n")}\n`);
  return status >= 400 ? INVOKE_EXIT.httpError : INVOKE_EXIT.ok;
}

// Lambda runs a current Node; the AWS SDK's "Node 20 support ends" notice is noise in local runs.
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= "true";

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (error: unknown) => {
    log(`invoke: ${error instanceof Error ? error.message : String(error)}`);
    process.exit(INVOKE_EXIT.invocationFailed);
  },
);
