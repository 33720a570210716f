/**
 * What `npm run dev` (local/dev.ts) loads once its port is checked and DynamoDB Local's JVM is starting:
 * the local stack, the handler's modules, the local issuer, the dev server and the function URL's
 * stand-in, and the welcome it prints. {@link DevSession} holds what it started, so a signal at any
 * point stops exactly that.
 */
import { readFile } from "node:fs/promises";
import type { StreamifyHandler } from "aws-lambda";
import { API_STREAM_MAX_SECONDS } from "../infra/console-wiring.js";
import { createTokenVerifier } from "../shared/auth/token-verifier.js";
import { type Config, loadConfig } from "../shared/config.js";
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
import { DEFAULT_PORT, type DevOptions, log } from "./dev-options.js";
import {
  type DevServer,
  type DevTarget,
  type Handler,
  startDevServer,
  startFunctionUrlServer,
} from "./dev-server.js";
import type { LocalDynamo } from "./dynamo.js";
import { localFunctionTimeout, MAX_FUNCTION_TIMEOUT_SECONDS } from "./function-timeout.js";
import { setLambdaRuntimeEnv } from "./lambda-context.js";
import { type LocalStack, startLocalStack } from "./local-stack.js";
import { MCP_INSPECTOR_COMMAND } from "./mcp-inspector.js";
import type { PortReservation } from "./port.js";
import { localStreamHandler } from "./stream-handler.js";
import { warmHandlerModules } from "./warm.js";

/** The checked options of `npm run dev` (local/dev-options.ts `parseOptions`). */
export type DevValues = DevOptions & { portNumber: number; timeoutS?: number };

/**
 * One `npm run dev`: what it started, in the order it started them, and {@link DevSession.stop}, which
 * stops them (dependencies still starting are waited for, then stopped) and removes the issuer file.
 */
export class DevSession {
  private starting: Promise<LocalStack> | undefined;
  private server: DevServer | undefined;
  private streamServer: DevServer | undefined;
  private durableApi: { stop(): Promise<void> } | undefined;
  private issuerFile: string | undefined;

  /** @param dynamo DynamoDB Local already starting (local/dynamo.ts startDynamoEarly), if any */
  constructor(private readonly dynamo: Promise<LocalDynamo> | undefined) {}

  /** Stops the servers and the dependencies this session started, and removes the issuer file. */
  async stop(): Promise<void> {
    await this.server?.stop();
    await this.streamServer?.stop();
    await this.durableApi?.stop();
    // The stack owns the early JVM once it was handed over; before that, it is stopped here.
    await (this.starting ?? this.dynamo)?.then(
      (started) => started.stop(),
      () => undefined,
    );
    if (this.issuerFile) await removeIssuerFile(this.issuerFile);
  }

  /**
   * Starts the local stack (adopting the early JVM) with `vars` over the environment, the issuer, the
   * function URL's stand-in, then the dev server on the reserved port (released just before it
   * listens), and prints the welcome.
   */
  async start(values: DevValues, vars: Record<string, string>, reservation: PortReservation): Promise<void> {
    const warm = warmHandlerModules();
    this.starting = startLocalStack(
      { ...process.env, ...vars },
      log,
      this.dynamo ? { dynamo: this.dynamo } : {},
    );
    const stack = await this.starting;
    await warm;
    Object.assign(process.env, vars, stack.env);
    setLambdaRuntimeEnv();
    const issuer = await setUpIssuer(values);
    // The streaming function's stand-in first (its address goes on the console's page); its handler is
    // ready once the API's address is known (the origin its CORS answers), as the stack wires them.
    const stream = deferredStreamHandler();
    this.streamServer = await startFunctionUrlServer({ stream: stream.handler, host: values.host, port: 0 });
    process.env.CONSOLE_STREAM_URL = this.streamServer.url;
    await reservation.release();
    const server = await startDevServer({
      serve: (url) => this.devTarget(url, values.timeoutS, stream),
      host: values.host,
      port: values.portNumber,
    });
    this.server = server;
    const config = loadConfig(process.env);
    log(
      `dev: the streaming function URL's stand-in at ${this.streamServer.url} (the console follows runs there)`,
    );
    if (!issuer) {
      const { auth } = config;
      const keys = auth.jwks ? "JWT_JWKS" : (auth.jwksUrl ?? "<issuer>/.well-known/jwks.json");
      log(
        `dev: local API on port ${server.port} at ${server.url} (functions/api/handler.ts handler; JWT check: ${auth.algorithms.join(", ")}, issuer ${auth.issuer} (JWT_ISSUER), audience ${auth.audiences.join(", ")}, keys from ${keys}; /mcp audience ${auth.mcpResourceUrl})`,
      );
      process.stdout.write(issuerWelcome(server.url, config.console.clientId));
      return;
    }
    this.issuerFile = values["issuer-file"] ?? defaultIssuerFile(server.port);
    // Its URL and table too: `npm run tenant -- limits` changes limits through this server when it
    // targets the same table, so the runs waiting for budget here are woken (local/tenant-wake.ts).
    const table = { endpoint: config.table.endpoint, name: config.table.name };
    await writeIssuerFile(this.issuerFile, { ...issuer, url: server.url, table });
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
  private async devTarget(
    url: string,
    timeoutS: number | undefined,
    stream: { ready(handler: StreamifyHandler): void },
  ): Promise<DevTarget> {
    process.env.MCP_RESOURCE_URL ||= `${url}/mcp`;
    const { createLocalDurableApi } = await import("./durable-runner.js");
    const config = loadConfig(process.env);
    const verifier = createTokenVerifier(config.auth);
    const local = createLocalDurableApi(bufferedApiConfig(config));
    this.durableApi = local;
    const timeout = localFunctionTimeout(config.limits, timeoutS, MAX_FUNCTION_TIMEOUT_SECONDS);
    if (timeout.note) log(`dev: ${timeout.note}`);
    const streamConfig = { ...config, console: { ...config.console, origins: [url] } };
    const streamHandler = await localStreamHandler(streamConfig, verifier, local.executions);
    stream.ready(streamHandler);
    return {
      handler: local.handler as Handler,
      stream: streamHandler,
      verifier,
      timeoutMs: timeout.timeoutMs,
    };
  }
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
    ...(values["issuer-file"] ? ["--issuer-file", shellQuote(values["issuer-file"])] : []),
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
