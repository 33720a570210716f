/**
 * MCP (docs/mcp.md), part of `npm run bench` (bench/run.ts), also runnable alone (`npx tsx bench/mcp.ts`):
 * - per call: an MCP `tools/call` of calculateTax (GB 1500.00) made by the official SDK Client over
 *   Streamable HTTP (loopback, the dev server's HTTP → API Gateway v2 event → the real handler: token
 *   check, SDK transport and Server, the dispatcher) against the same dispatcher call in process
 *   (`dispatchToolCall` with the same registry and stores); medians of interleaved rounds, and the ratio.
 * - cold start: a fresh `node --enable-source-maps` that imports the deployed bundle (infra/bundle.ts)
 *   and serves one request, POST /mcp (tools/call calculateTax) or GET /healthz, ms from process start
 *   until answered; variants interleaved, the ratio of medians.
 * Both on DynamoDB Local; the machine is shared and noisy, so read the ratios, not the milliseconds.
 */
import { execFile } from "node:child_process";
import { randomUUID } from "node:crypto";
import { pathToFileURL } from "node:url";
import { promisify } from "node:util";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { createHandler } from "../functions/api/app-handler.js";
import { API_ENTRY } from "../infra/bundle.js";
import { createDevIssuer, devIssuerEnv, mintToken } from "../local/dev-auth.js";
import { toHttpApiEvent } from "../local/dev-event.js";
import { type Handler, startDevServer } from "../local/dev-server.js";
import { startLocalDynamo } from "../local/dynamo.js";
import { dispatchToolCall } from "../shared/agent/dispatcher.js";
import { createTokenVerifier } from "../shared/auth/token-verifier.js";
import { loadConfig } from "../shared/config.js";
import { createApiDeps } from "../shared/deps.js";
import { ensureTable } from "../shared/store/table.js";
import { bundle, PROJECT_ROOT } from "./bundle.js";
import { round, type Summary, summarize } from "./stats.js";

const run = promisify(execFile);

/** What {@link benchMcp} measured; times in ms. */
export interface McpBenchResult {
  calls: number;
  /** One MCP tools/call of calculateTax, client to result. */
  mcpCallMs: Summary;
  /** The same call through dispatchToolCall in process. */
  dispatcherCallMs: Summary;
  /** median MCP ÷ median in-process. */
  callRatio: number;
  coldStarts: number;
  /** Process start → POST /mcp (tools/call calculateTax) answered. */
  mcpColdMs: Summary;
  /** Process start → GET /healthz answered. */
  healthzColdMs: Summary;
  /** median /mcp ÷ median /healthz. */
  coldRatio: number;
}

const GB = { amount: "1500.00", currency: "GBP", jurisdiction: "GB" };
const WRITER = { sub: "usr_bench", tenant_id: "tenant_bench_mcp", scope: "billing:read billing:write" };

/**
 * Runs both measurements on `env` (DynamoDB Local endpoint and a table, created if missing).
 * @throws Error when a call does not return calculateTax's 300.00 tax, or a cold start does not answer 200
 */
export async function benchMcp(
  env: { dynamoEndpoint: string; table: string },
  options: { calls: number; coldStarts: number },
): Promise<McpBenchResult> {
  const issuer = await createDevIssuer();
  const jwtEnv = devIssuerEnv(issuer);
  // Built once the server listens: MCP_RESOURCE_URL is its own URL + /mcp, as `npm run dev` sets it.
  let deps: ReturnType<typeof createApiDeps> | undefined;
  const server = await startDevServer({
    serve: async (url) => {
      const config = loadConfig({
        DYNAMODB_ENDPOINT: env.dynamoEndpoint,
        TABLE_NAME: env.table,
        POWERTOOLS_LOG_LEVEL: "SILENT",
        MCP_RESOURCE_URL: `${url}/mcp`,
        ...jwtEnv,
      });
      deps = createApiDeps(config);
      await ensureTable(deps.ddb, config.table.name);
      return {
        handler: createHandler(deps) as Handler,
        verifier: createTokenVerifier(config.auth),
        timeoutMs: 29_000,
      };
    },
    host: "127.0.0.1",
    port: 0,
    log: () => {},
  });
  if (!deps) throw new Error("The dev server did not build its dependencies.");
  const { tools, ddb } = deps;
  const mcpUrl = new URL(`${server.url}/mcp`);
  const token = await mintToken(issuer, WRITER, { audience: mcpUrl.href });
  const client = new Client({ name: "boundloop-bench", version: "1.0.0" });
  await client.connect(
    new StreamableHTTPClientTransport(mcpUrl, {
      requestInit: { headers: { Authorization: `Bearer ${token}` } },
    }),
  );
  const security = { userId: WRITER.sub, tenantId: WRITER.tenant_id, permissions: WRITER.scope.split(" ") };
  const mcpCall = async () => {
    const result = await client.callTool({ name: "calculateTax", arguments: GB });
    expectTax((result.structuredContent as { taxAmount?: { amount: string } }).taxAmount?.amount);
  };
  const inProcess = async () => {
    const runId = `run_${randomUUID()}`;
    const result = await dispatchToolCall(
      { id: "call_1", name: "calculateTax", arguments: JSON.stringify(GB) },
      tools,
      security,
      { runId, runScope: runId, occurrence: 0, signal: new AbortController().signal },
    );
    expectTax((result.data as { taxAmount?: { amount: string } } | null)?.taxAmount?.amount);
  };
  const mcpMs: number[] = [];
  const dispatcherMs: number[] = [];
  try {
    for (let i = 0; i < 20; i += 1) await Promise.all([mcpCall(), inProcess()]);
    for (let i = 0; i < options.calls; i += 1) {
      mcpMs.push(await timed(mcpCall));
      dispatcherMs.push(await timed(inProcess));
    }
  } finally {
    await client.close();
    await server.stop();
    ddb.destroy();
  }
  const cold = await coldStarts(env, jwtEnv, issuer, options.coldStarts);
  const mcpCallMs = summarize(mcpMs, 2);
  const dispatcherCallMs = summarize(dispatcherMs, 2);
  const mcpColdMs = summarize(cold.mcp);
  const healthzColdMs = summarize(cold.healthz);
  return {
    calls: options.calls,
    mcpCallMs,
    dispatcherCallMs,
    callRatio: round(mcpCallMs.median / dispatcherCallMs.median, 2),
    coldStarts: options.coldStarts,
    mcpColdMs,
    healthzColdMs,
    coldRatio: round(mcpColdMs.median / healthzColdMs.median, 2),
  };
}

function expectTax(amount: string | undefined): void {
  if (amount !== "300.00") throw new Error(`calculateTax GB 1500.00 gave tax ${String(amount)}, not 300.00`);
}

async function timed(fn: () => Promise<void>): Promise<number> {
  const started = performance.now();
  await fn();
  return performance.now() - started;
}

/** Interleaved cold starts of the deployed bundle: one POST /mcp, one GET /healthz, in turn. */
async function coldStarts(
  env: { dynamoEndpoint: string; table: string },
  jwtEnv: Record<string, string>,
  issuer: Awaited<ReturnType<typeof createDevIssuer>>,
  count: number,
): Promise<{ mcp: number[]; healthz: number[] }> {
  const built = await bundle("boundloop", API_ENTRY, "deployed");
  const host = "mcp.bench.invalid";
  const token = await mintToken(issuer, WRITER, { audience: `https://${host}/mcp` });
  const request = (method: string, url: string, headers: Record<string, string>, body: string) =>
    JSON.stringify(
      toHttpApiEvent(
        {
          method,
          url,
          headers: Object.fromEntries(Object.entries({ host, ...headers }).map(([k, v]) => [k, [v]])),
          body: Buffer.from(body),
          sourceIp: "127.0.0.1",
          localPort: 443,
        },
        undefined,
      ),
    ).replace('"x-forwarded-proto":"http"', '"x-forwarded-proto":"https"');
  const mcpEvent = request(
    "POST",
    "/mcp",
    {
      authorization: `Bearer ${token}`,
      accept: "application/json, text/event-stream",
      "content-type": "application/json",
    },
    JSON.stringify({
      jsonrpc: "2.0",
      id: 1,
      method: "tools/call",
      params: { name: "calculateTax", arguments: GB },
    }),
  );
  const healthzEvent = request("GET", "/healthz", {}, "");
  const childEnv = {
    PATH: process.env.PATH ?? "",
    AWS_REGION: "eu-west-2",
    AWS_ACCESS_KEY_ID: "local",
    AWS_SECRET_ACCESS_KEY: "local",
    AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: "true",
    POWERTOOLS_LOG_LEVEL: "SILENT",
    TABLE_NAME: env.table,
    DYNAMODB_ENDPOINT: env.dynamoEndpoint,
    ...jwtEnv,
    MCP_RESOURCE_URL: `https://${host}/mcp`,
  };
  const once = async (event: string, check: (body: string) => boolean) => {
    const source = `
const { handler } = await import(${JSON.stringify(pathToFileURL(built.file).href)});
const context = { getRemainingTimeInMillis: () => 29000, awsRequestId: "cold-start", functionName: "bench" };
const result = await handler(${event}, context);
console.log(JSON.stringify({ atMs: performance.now(), status: result.statusCode, body: result.body }));
`;
    const { stdout } = await run(
      process.execPath,
      ["--enable-source-maps", "--input-type=module", "-e", source],
      {
        cwd: PROJECT_ROOT,
        timeout: 60_000,
        env: childEnv,
      },
    );
    const sample = JSON.parse(stdout.trim().split("\n").at(-1) ?? "{}") as {
      atMs: number;
      status: number;
      body: string;
    };
    if (sample.status !== 200 || !check(sample.body)) {
      throw new Error(`cold start answered ${sample.status}: ${String(sample.body).slice(0, 300)}`);
    }
    return sample.atMs;
  };
  const mcp: number[] = [];
  const healthz: number[] = [];
  for (let i = 0; i < count; i += 1) {
    mcp.push(await once(mcpEvent, (body) => body.includes('\\"taxAmount\\":{\\"amount\\":\\"300.00\\"')));
    healthz.push(await once(healthzEvent, (body) => body.includes('"ok"')));
  }
  return { mcp, healthz };
}

/** The MCP section of bench/results/latest.md. */
export function renderMcp(result: McpBenchResult): string {
  const ms = (s: Summary) => `${s.median} ms (${s.min}–${s.max})`;
  return [
    "## MCP",
    "",
    "| measure | MCP | reference | ratio |",
    "|---|---|---|---|",
    `| tools/call calculateTax, ${result.calls} calls (SDK Client over loopback HTTP vs dispatchToolCall in process) | ${ms(result.mcpCallMs)} | ${ms(result.dispatcherCallMs)} | ${result.callRatio}× |`,
    `| cold start to first answer, ${result.coldStarts} each (POST /mcp tools/call vs GET /healthz) | ${ms(result.mcpColdMs)} | ${ms(result.healthzColdMs)} | ${result.coldRatio}× |`,
    "",
  ].join("\n");
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= "true";
  const dynamo = await startLocalDynamo();
  try {
    const result = await benchMcp(
      { dynamoEndpoint: dynamo.endpoint, table: "bench-mcp" },
      { calls: 50, coldStarts: 5 },
    );
    console.log(JSON.stringify(result, null, 2));
    console.log(renderMcp(result));
  } finally {
    await dynamo.stop();
  }
}
