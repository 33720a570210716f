/**
 * `npm run invoke -- events/<file>.json [--env-vars env.json] [--timeout 29]`: the counterpart of
 * `sam local invoke`. Loads the event (a file, or `-` for stdin), starts the local dependencies the
 * environment does not provide (local/local-stack.ts), builds a Lambda context whose
 * getRemainingTimeInMillis counts down from the timeout, invokes the handler the stack deploys
 * (functions/api/handler.ts `handler`), and prints:
 * - on stderr: progress lines, then `START`, the handler's own log lines (its stdout and stderr, as
 *   structured JSON lines when the handler logs JSON), `END` and `REPORT` like the Lambda runtime;
 * - on stdout: `HTTP <status>`, the response headers, a blank line and the body (pretty JSON).
 *
 * Exit status: 0 when the response status is below 400; 1 when the response is an HTTP error
 * (4xx/5xx); 2 when the invocation itself failed (bad arguments, unreadable event, invalid config,
 * the handler threw or timed out); 128 + n when stopped by signal n (SIGINT → 130). Whatever the exit,
 * the dependencies it started are stopped first.
 */
import { readFile } from "node:fs/promises";
import { performance } from "node:perf_hooks";
import { parseArgs } from "node:util";
import type { ApiEvent } from "../functions/api/handler.js";
import { FUNCTION_TIMEOUT_SECONDS } from "../shared/config.js";
import type { ProxyResult } from "./dev-event.js";
import { createLambdaContext } from "./lambda-context.js";
import type { LocalStack } from "./local-stack.js";
import { onShutdownSignal } from "./shutdown.js";

/** The function timeout as deployed (s), and so the default here. */
const DEFAULT_TIMEOUT_S = FUNCTION_TIMEOUT_SECONDS;
/** Lambda's largest timeout (s). */
const MAX_TIMEOUT_S = 900;

/** Exit statuses of `npm run invoke`. */
const INVOKE_EXIT = { ok: 0, httpError: 1, invocationFailed: 2 } as const;

const USAGE = `usage: npm run invoke -- <event.json | -> [--env-vars <env.json | .env>] [--timeout <seconds>]

  <event.json>   an API Gateway / function URL event, e.g. events/seed-scenario.json; - reads stdin
  --env-vars     variables for the function: flat JSON, SAM's {"Parameters": {...}, "ApiFunction": {...}},
                 or a dotenv file (see .env.example)
  --timeout      function timeout in seconds (default ${DEFAULT_TIMEOUT_S}, as deployed); the context's
                 getRemainingTimeInMillis counts down from it`;

const log = (line: string) => process.stderr.write(`${line}\n`);

class UsageError extends Error {}
/** `--help`: print the usage and exit 0. */
class HelpRequested extends Error {}

interface Options {
  eventPath: string;
  envVarsPath: string | undefined;
  timeoutMs: number;
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
  if (eventPaths.length !== 1) throw new UsageError("give exactly one event file.");
  const timeout = Number(values.timeout ?? DEFAULT_TIMEOUT_S);
  if (!Number.isFinite(timeout) || timeout <= 0 || timeout > MAX_TIMEOUT_S) {
    throw new UsageError(`--timeout must be a number of seconds in (0, ${MAX_TIMEOUT_S}].`);
  }
  return {
    eventPath: eventPaths[0] as string,
    envVarsPath: values["env-vars"],
    timeoutMs: Math.round(timeout * 1000),
  };
}

async function readEvent(path: string): Promise<Record<string, unknown>> {
  let text: string;
  if (path === "-") {
    const chunks: Buffer[] = [];
    for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
    text = Buffer.concat(chunks).toString("utf8");
  } else {
    text = await readFile(path, "utf8");
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
  const event = await readEvent(options.eventPath);
  // Loaded once the arguments and the event are known good: a usage error answers at once.
  const { readEnvVarsFile } = await import("./env-vars.js");
  const { startLocalStack } = await import("./local-stack.js");
  let vars: Record<string, string> = {};
  if (options.envVarsPath) {
    const read = await readEnvVarsFile(options.envVarsPath);
    vars = read.vars;
    log(`env: ${Object.keys(vars).length} variable(s) from ${options.envVarsPath}`);
    if (read.unknown.length > 0) log(`env: warning: boundloop reads none of ${read.unknown.join(", ")}`);
  }

  // A signal while the dependencies are still starting waits for them, then stops them all.
  const starting: Promise<LocalStack> = startLocalStack({ ...process.env, ...vars }, log);
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
  try {
    Object.assign(process.env, vars, stack.env);
    const { handler } = await import("../functions/api/handler.js");
    // Interrupted before the invocation: invoke nothing; the signal handler stops everything and exits.
    if (interrupted) return await new Promise<never>(() => undefined);
    const context = createLambdaContext(options.timeoutMs);
    const requestId = context.awsRequestId;
    log(
      `invoke: ${options.eventPath} → functions/api/handler.ts handler (timeout ${options.timeoutMs / 1000} s)`,
    );
    log(`START RequestId: ${requestId} Version: ${context.functionVersion}`);
    const started = performance.now();
    const restore = redirectStdout();
    let timer: NodeJS.Timeout | undefined;
    let result: ProxyResult | string;
    try {
      const timedOut = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new InvocationTimeout()), options.timeoutMs);
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
      log(
        `REPORT RequestId: ${requestId}\tDuration: ${(Number(seconds) * 1000).toFixed(2)} ms\tStatus: error`,
      );
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
  } finally {
    await stack.stop();
  }
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
