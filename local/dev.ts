/**
 * `npm run dev [-- --port 3000] [--host 127.0.0.1] [--env-vars env.json] [--timeout 29]`: the
 * counterpart of `sam local start-api`. Starts the local dependencies the environment does not provide
 * (local/local-stack.ts), generates an RS256 key pair for a local issuer, and serves the Lambda handler
 * the stack deploys (functions/api/handler.ts `createLazyHandler`, with durable runs on the local durable
 * runner: local/durable-runner.ts) on http://127.0.0.1:3000 behind a check that
 * follows API Gateway's JWT authorizer (local/dev-auth.ts). Each request becomes the HTTP API v2 event
 * the authorizer would produce (local/dev-event.ts) and is invoked with a Lambda context counting down
 * from the function timeout.
 *
 * The stack's public routes (infra/routes.ts) have no authorizer, every other route does;
 * local/dev-server.ts lists the gateway behaviour mirrored.
 *
 * At start it prints a ready-to-paste curl with a demo tenant's token and the command that mints tokens
 * with other claims (`npm run token`, which reads the issuer file this writes to
 * `.boundloop/dev-issuer-<port>.json`, mode 0600, removed at exit). With JWT_ISSUER set (the environment
 * or `--env-vars`) it trusts that issuer instead, as the deployed API does (keys from JWT_JWKS_URL or
 * JWT_JWKS, audiences JWT_AUDIENCE), and mints nothing: the console signs in there with CONSOLE_CLIENT_ID. SIGINT, SIGTERM and SIGHUP, or the
 * parent process going away, stop the server and every dependency it started, then exit 0.
 */
import { readFile } from "node:fs/promises";
import { parseArgs } from "node:util";
import type { StreamifyHandler } from "aws-lambda";
import { API_STREAM_MAX_SECONDS } from "../infra/console-wiring.js";
import { createTokenVerifier } from "../shared/auth/token-verifier.js";
import { type Config, FUNCTION_TIMEOUT_SECONDS, loadConfig } from "../shared/config.js";
import {
  createDevIssuer,
  DEMO_CLAIMS,
  DEV_AUDIENCE,
  type DevIssuerFile,
  defaultIssuerFile,
  devIssuerEnv,
  mintToken,
  removeIssuerFile,
  writeIssuerFile,
} from "./dev-auth.js";
import {
  type DevServer,
  type DevTarget,
  type Handler,
  startDevServer,
  startFunctionUrlServer,
} from "./dev-server.js";
import { readEnvVarsFile } from "./env-vars.js";
import { localFunctionTimeout, MAX_FUNCTION_TIMEOUT_SECONDS } from "./function-timeout.js";
import { type LocalStack, startLocalStack } from "./local-stack.js";
import { MCP_INSPECTOR_COMMAND } from "./mcp-inspector.js";
import { readPolicyFile } from "./policies-file.js";
import { reservePort } from "./port.js";
import { onShutdownSignal } from "./shutdown.js";
import { localStreamHandler } from "./stream-handler.js";
import { warmHandlerModules } from "./warm.js";

/** The dev server's default address, as `sam local start-api`'s. */
const DEFAULT_HOST = "127.0.0.1";
const DEFAULT_PORT = 3000;
/** The function timeout as deployed (s). */
const DEFAULT_TIMEOUT_S = FUNCTION_TIMEOUT_SECONDS;

const log = (line: string) => process.stderr.write(`${line}\n`);

const USAGE = `usage: npm run dev -- [options]

  --port <n>           port on 127.0.0.1 (default ${DEFAULT_PORT}; 0 picks a free one)
  --host <addr>        address to listen on (default ${DEFAULT_HOST})
  --env-vars <file>    variables for the function: flat JSON, SAM's shape, or a dotenv file
  --timeout <s>        function timeout in seconds (default ${DEFAULT_TIMEOUT_S}, as deployed, or more when RUN_TIMEOUT_MS needs it)
  --issuer <iss>       issuer the JWT check accepts and tokens carry (default urn:boundloop:local-dev-issuer)
  --audience <aud>     audience the JWT check accepts and tokens carry (default boundloop-api)
  --issuer-file <f>    where to write the issuer key for npm run token (default .boundloop/dev-issuer-<port>.json)
  --policies <file>    a Cedar policy file as the default policy set (POLICIES, docs/policies.md), checked
                       against the tools' schema first
  --as <sub>           also print a console link for this user of the demo tenant (the second pair of eyes)

With JWT_ISSUER set (environment or --env-vars), tokens of that issuer are accepted instead of a local
one's: keys from JWT_JWKS_URL (default <issuer>/.well-known/jwks.json) or JWT_JWKS, audiences
JWT_AUDIENCE (default --audience, else boundloop-api); the console signs in there with CONSOLE_CLIENT_ID.`;

let starting: Promise<LocalStack> | undefined;
let server: DevServer | undefined;
let streamServer: DevServer | undefined;
let durableApi: { stop(): Promise<void> } | undefined;
let issuerFile: string | undefined;

/** Stops the server and the dependencies this process started, and removes the issuer file. */
async function cleanup(): Promise<void> {
  await server?.stop();
  await streamServer?.stop();
  await durableApi?.stop();
  // Dependencies still starting are waited for, then stopped.
  await starting?.then(
    (stack) => stack.stop(),
    () => undefined,
  );
  if (issuerFile) await removeIssuerFile(issuerFile);
}

/**
 * The API function's configuration as the stack deploys it behind the HTTP API, which buffers a
 * response until it ends: its event streams last API_STREAM_MAX_SECONDS (infra/console-wiring.ts)
 * unless STREAM_MAX_SECONDS is set. Everything streamed for real (the same-origin event routes, the
 * function URL's stand-in) is the streaming function's, with the configuration as given.
 */
function bufferedApiConfig(config: Config): Config {
  if (process.env.STREAM_MAX_SECONDS) return config;
  return { ...config, stream: { ...config.stream, maxMs: API_STREAM_MAX_SECONDS * 1000 } };
}

/**
 * A streaming handler whose requests wait until {@link ready} gives it the real one: the function
 * URL's stand-in listens before the handler can be built (its address and the API's go into each
 * other's configuration).
 */
function deferredStreamHandler(): { handler: StreamifyHandler; ready(handler: StreamifyHandler): void } {
  let ready: (handler: StreamifyHandler) => void = () => {};
  const built = new Promise<StreamifyHandler>((resolve) => {
    ready = resolve;
  });
  return {
    handler: async (event, responseStream, context) => (await built)(event, responseStream, context),
    ready,
  };
}

/** The permissions of a console user `npm run dev` prints a link for: read, write and approve. */
const CONSOLE_SCOPE = "billing:read billing:write billing:approve";

/**
 * The console links to print: the demo user's, then one per `--as` user of the demo tenant. The token
 * goes in the URL fragment, which the browser never sends (so no server or proxy logs it); the page moves
 * it to session storage and clears the fragment.
 */
async function consoleLinksFor(
  issuer: Awaited<ReturnType<typeof createDevIssuer>>,
  url: string,
  others: string[],
): Promise<string[]> {
  const lines = ["Operator console (docs/console.md), open in a browser:", ""];
  for (const sub of [DEMO_CLAIMS.sub, ...others]) {
    const token = await mintToken(issuer, { ...DEMO_CLAIMS, sub, scope: CONSOLE_SCOPE });
    lines.push(`  as ${sub}: ${url}/console#token=${token}`);
  }
  if (others.length === 0) lines.push("", "  A second user (four eyes): npm run dev -- --as usr_approver_01");
  return [...lines, ""];
}

/** Quotes a string for a POSIX shell. */
const shellQuote = (text: string) => `'${text.replaceAll("'", `'\\''`)}'`;

/** The options of `npm run dev` (see USAGE). */
const OPTIONS = {
  host: { type: "string", default: DEFAULT_HOST },
  port: { type: "string", default: String(DEFAULT_PORT) },
  "env-vars": { type: "string", short: "n" },
  timeout: { type: "string", short: "t" },
  issuer: { type: "string" },
  audience: { type: "string" },
  "issuer-file": { type: "string" },
  as: { type: "string", multiple: true },
  policies: { type: "string" },
  help: { type: "boolean", short: "h" },
} as const;

type DevOptions = ReturnType<typeof parseArgs<{ options: typeof OPTIONS }>>["values"];

/**
 * Whose tokens the dev gateway, the streaming stand-in and `/mcp` accept, set up in `process.env` before
 * the configuration is read:
 * - JWT_ISSUER set (the environment or `--env-vars`): that issuer, as deployed: its keys from JWT_JWKS_URL
 *   (default `<issuer>/.well-known/jwks.json`) or JWT_JWKS, audiences JWT_AUDIENCE (default `--audience`,
 *   else boundloop-api); nothing is minted, and the console signs in there when CONSOLE_CLIENT_ID is set;
 * - else a local issuer with an RS256 key generated now (local/dev-auth.ts), which JWT_ISSUER,
 *   JWT_AUDIENCE and JWT_JWKS then name; a CONSOLE_CLIENT_ID is dropped (no issuer to sign in at).
 * @returns the local issuer, or undefined when JWT_ISSUER names the issuer
 * @throws Error for `--issuer` with JWT_ISSUER set (two issuers named)
 */
async function setUpIssuer(values: DevOptions): Promise<DevIssuerFile | undefined> {
  if (process.env.JWT_ISSUER) {
    if (values.issuer)
      throw new Error("--issuer names the local issuer: leave it out while JWT_ISSUER is set.");
    process.env.JWT_AUDIENCE ||= values.audience ?? DEV_AUDIENCE;
    return undefined;
  }
  const issuer = await createDevIssuer({ issuer: values.issuer, audience: values.audience });
  Object.assign(process.env, devIssuerEnv(issuer));
  if (process.env.CONSOLE_CLIENT_ID) {
    log("dev: CONSOLE_CLIENT_ID is ignored without JWT_ISSUER: the console takes the printed links' tokens.");
    delete process.env.CONSOLE_CLIENT_ID;
  }
  return issuer;
}

/** Parses and checks the options; undefined after printing the usage for `--help`. */
function parseOptions(argv: string[]): (DevOptions & { portNumber: number; timeoutS?: number }) | undefined {
  const { values } = parseArgs({ args: argv, options: OPTIONS });
  if (values.help) {
    log(USAGE);
    return undefined;
  }
  const port = Number(values.port);
  const timeoutS = values.timeout === undefined ? undefined : Number(values.timeout);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new Error("--port must be 0 to 65535.");
  if (timeoutS !== undefined && (!Number.isFinite(timeoutS) || timeoutS <= 0 || timeoutS > 900)) {
    throw new Error("--timeout must be a number of seconds in (0, 900].");
  }
  return { ...values, portNumber: port, ...(timeoutS === undefined ? {} : { timeoutS }) };
}

async function main(argv: string[]): Promise<void> {
  const values = parseOptions(argv);
  if (!values) return;
  let vars: Record<string, string> = {};
  if (values["env-vars"]) {
    const read = await readEnvVarsFile(values["env-vars"]);
    vars = read.vars;
    log(`env: ${Object.keys(vars).length} variable(s) from ${values["env-vars"]}`);
    if (read.unknown.length > 0) log(`env: warning: boundloop reads none of ${read.unknown.join(", ")}`);
  }
  if (values.policies) {
    vars.POLICIES = await readPolicyFile(values.policies);
    log(`policies: the default set is ${values.policies}`);
  }

  onShutdownSignal(
    async () => {
      await cleanup();
      log("dev: stopped");
    },
    { exitCode: () => 0, watchParent: true },
  );

  // The port is taken before anything starts, so a port in use is refused at once (local/port.ts).
  const reservation = await reservePort(values.host, values.portNumber);
  const warm = warmHandlerModules();
  starting = startLocalStack({ ...process.env, ...vars }, log);
  const stack = await starting;
  await warm;
  Object.assign(process.env, vars, stack.env);
  const issuer = await setUpIssuer(values);
  // The streaming function's stand-in first (its address goes on the console's page); its handler is
  // ready once the API's address is known (the origin its CORS answers), as the stack wires them.
  const stream = deferredStreamHandler();
  streamServer = await startFunctionUrlServer({ stream: stream.handler, host: values.host, port: 0 });
  process.env.CONSOLE_STREAM_URL = streamServer.url;
  await reservation.release();
  server = await startDevServer({
    serve: (url) => devTarget(url, values.timeoutS, stream),
    host: values.host,
    port: values.portNumber,
  });
  const config = loadConfig(process.env);
  log(`dev: the streaming function URL's stand-in at ${streamServer.url} (the console follows runs there)`);
  if (!issuer) {
    const { auth } = config;
    const keys = auth.jwks ? "JWT_JWKS" : (auth.jwksUrl ?? "<issuer>/.well-known/jwks.json");
    log(
      `dev: local API on port ${server.port} at ${server.url} (functions/api/handler.ts handler; JWT check: ${auth.algorithms.join(", ")}, issuer ${auth.issuer} (JWT_ISSUER), audience ${auth.audiences.join(", ")}, keys from ${keys}; /mcp audience ${auth.mcpResourceUrl})`,
    );
    process.stdout.write(issuerWelcome(server.url, config.console.clientId));
    return;
  }
  issuerFile = values["issuer-file"] ?? defaultIssuerFile(server.port);
  await writeIssuerFile(issuerFile, issuer);
  log(
    `dev: local API on port ${server.port} at ${server.url} (functions/api/handler.ts handler; JWT check: ${issuer.alg}, issuer ${issuer.issuer}, audience ${issuer.audience}, key generated at start)`,
  );
  process.stdout.write(await localWelcome(issuer, server, values, config.auth.mcpResourceUrl ?? ""));
}

/**
 * What the dev server serves once it listens at `url`: MCP_RESOURCE_URL is set to `url` + `/mcp` unless
 * the environment names it (the stack sets its API's own URL the same way), then the configuration is
 * read, and the deployed handler's factory serves it, with `Prefer: respond-async` runs on the local
 * durable runner and the streaming entry (CORS for `url`, the console's origin) for what the function
 * URL serves, on this origin and on the function URL's stand-in (`stream`); every token check is the one
 * verifier of `config.auth`. The API function's event streams are as short as behind the HTTP API
 * ({@link bufferedApiConfig}).
 */
async function devTarget(
  url: string,
  timeoutS: number | undefined,
  stream: { ready(handler: StreamifyHandler): void },
): Promise<DevTarget> {
  process.env.MCP_RESOURCE_URL ||= `${url}/mcp`;
  const { createLocalDurableApi } = await import("./durable-runner.js");
  const config = loadConfig(process.env);
  const verifier = createTokenVerifier(config.auth);
  const local = createLocalDurableApi(bufferedApiConfig(config));
  durableApi = local;
  const timeout = localFunctionTimeout(config.limits, timeoutS, MAX_FUNCTION_TIMEOUT_SECONDS);
  if (timeout.note) log(`dev: ${timeout.note}`);
  const streamConfig = { ...config, console: { ...config.console, origins: [url] } };
  const streamHandler = await localStreamHandler(streamConfig, verifier, local.executions);
  stream.ready(streamHandler);
  return { handler: local.handler as Handler, stream: streamHandler, verifier, timeoutMs: timeout.timeoutMs };
}

/** What `npm run dev` prints at start with JWT_ISSUER set: where to sign in, and how to call the API. */
function issuerWelcome(url: string, consoleClientId: string | undefined): string {
  return [
    "",
    "Tokens come from JWT_ISSUER (no local issuer: npm run token and the console links need it unset).",
    "",
    consoleClientId
      ? `Operator console (docs/console.md): ${url}/console signs in at the issuer (client ${consoleClientId}).`
      : `Operator console (docs/console.md): ${url}/console takes a pasted access token (set CONSOLE_CLIENT_ID to sign in at the issuer).`,
    "",
    `curl -sS ${url}/v1/runs -H "authorization: Bearer $ACCESS_TOKEN" -H 'content-type: application/json' -d '{"prompt":"…"}'`,
    "",
    "Ctrl-C stops the server and everything it started.",
    "",
  ].join("\n");
}

/** What `npm run dev` prints at start with its local issuer: the demo token, curl, the console links. */
async function localWelcome(
  issuer: DevIssuerFile,
  server: DevServer,
  values: DevOptions,
  mcpUrl: string,
): Promise<string> {
  const token = await mintToken(issuer, { ...DEMO_CLAIMS });
  const consoleLinks = await consoleLinksFor(issuer, server.url, values.as ?? []);
  const seed = JSON.parse(
    await readFile(new URL("../events/seed-scenario.json", import.meta.url), "utf8"),
  ) as { body: string };
  const tokenArgs = [
    ...(values["issuer-file"] ? ["--issuer-file", shellQuote(issuerFile ?? "")] : []),
    ...(server.port !== DEFAULT_PORT && !values["issuer-file"] ? ["--port", String(server.port)] : []),
  ].join(" ");
  const mint = `npm run -s token --${tokenArgs ? ` ${tokenArgs}` : ""}`;
  return [
    "",
    `Demo token: sub ${DEMO_CLAIMS.sub}, tenant ${DEMO_CLAIMS.tenant_id}, scope "${DEMO_CLAIMS.scope}", valid 12 h. Paste:`,
    "",
    `curl -sS ${server.url}/v1/runs \\`,
    `  -H 'authorization: Bearer ${token}' \\`,
    "  -H 'content-type: application/json' \\",
    `  -d ${shellQuote(seed.body)}`,
    "",
    "Live events (docs/run-events.md): curl -N with -H 'accept: text/event-stream' streams the run as it",
    "runs; GET /v1/runs/<runId>/events replays a run's events and follows it (resume with Last-Event-ID).",
    "",
    "A durable run: add -H 'prefer: respond-async' (202, Location: /v1/runs/<runId>); poll the Location",
    "with GET, stop it with POST /v1/runs/<runId>/cancel (docs/durable-runs.md).",
    "",
    "Tokens with other claims (tenant, permissions, any claim; --help lists the options):",
    "",
    `  ${mint} --tenant tenant_ro_01 --sub usr_2001 --scope billing:read`,
    "",
    `curl -sS ${server.url}/v1/runs \\`,
    `  -H "authorization: Bearer $(${mint} --tenant tenant_ro_01 --scope billing:read)" \\`,
    "  -H 'content-type: application/json' \\",
    `  -d ${shellQuote(seed.body)}`,
    "",
    ...consoleLinks,
    `MCP (docs/mcp.md): ${mcpUrl} with a token whose audience is that URL (MCP_RESOURCE_URL):`,
    "",
    `  ${MCP_INSPECTOR_COMMAND} ${mcpUrl} --transport http --method tools/list \\`,
    `    --header "Authorization: Bearer $(${mint} --audience ${mcpUrl})"`,
    "",
    "Ctrl-C stops the server and everything it started.",
    "",
  ].join("\n");
}

// Lambda runs a current Node; the AWS SDK's "Node 20 support ends" notice is noise in local runs.
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= "true";

main(process.argv.slice(2)).catch(async (error: unknown) => {
  log(`dev: ${error instanceof Error ? error.message : String(error)}`);
  await cleanup();
  process.exit(1);
});
