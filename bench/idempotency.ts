/**
 * P3 of `npm run bench` (bench/run.ts), also runnable alone (`npx tsx bench/idempotency.ts`, writes
 * bench/results/idempotency.json): DynamoDB requests and consumed capacity per recorded invoice, on the
 * first call and on a replay, counted with AWS SDK middleware (one count per HTTP attempt; capacity from
 * `ReturnConsumedCapacity: TOTAL`, which the middleware adds to every item operation), for:
 * - boundloop, tool level: LedgerStore.recordOnce (the effect and its proof are one conditional put);
 * - boundloop, run level: POST /v1/runs with an Idempotency-Key, through the real Lambda handler and the
 *   local model server (scripted: one recordInvoice call, then an answer);
 * - Powertools for AWS Lambda `makeIdempotent` (@aws-lambda-powertools/idempotency) wrapping the same
 *   invoice put, on the same DynamoDB Local and table.
 * It also plays "the write succeeded, then the function threw, then the caller retried" and counts how
 * often the invoice write took effect under each approach. Latencies are medians in ms on this machine
 * (shared, noisy); request counts and capacity units are exact. DynamoDB reports no consumed capacity for
 * a write whose condition failed (a replay), though AWS bills it (at least 1 WCU, by item size): those
 * are counted as `conditionalFailures`.
 */
import { randomUUID } from "node:crypto";
import { mkdir, readFile, writeFile } from "node:fs/promises";
import { pathToFileURL } from "node:url";
import { IdempotencyConfig, makeIdempotent } from "@aws-lambda-powertools/idempotency";
import { DynamoDBPersistenceLayer } from "@aws-lambda-powertools/idempotency/dynamodb";
import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { DynamoDBDocumentClient, PutCommand } from "@aws-sdk/lib-dynamodb";
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2 } from "aws-lambda";
import { type ApiEvent, createHandler } from "../functions/api/app-handler.js";
import { startLocalDynamo } from "../local/dynamo.js";
import { quotedRecordInvoiceArgs } from "../local/fixtures.js";
import { createLambdaContext } from "../local/lambda-context.js";
import { startModelServer } from "../local/model-server.js";
import { loadConfig } from "../shared/config.js";
import { createApiDeps } from "../shared/deps.js";
import type { NewInvoice } from "../shared/store/invoice.js";
import { keys } from "../shared/store/keys.js";
import { invoiceIdForQuote, LedgerStore } from "../shared/store/ledger.js";
import { ensureTable } from "../shared/store/table.js";
import { byOperation, logRequests, type RequestLog } from "./request-log.js";

process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= "true";
process.env.POWERTOOLS_IDEMPOTENCY_DISABLED = "false";

const ITERATIONS = 30;
const TABLE = "bench-idempotency";

/** DynamoDB operations that accept `ReturnConsumedCapacity`. */
const CAPACITY_OPERATIONS = new Set([
  "PutItemCommand",
  "UpdateItemCommand",
  "DeleteItemCommand",
  "GetItemCommand",
  "QueryCommand",
  "ScanCommand",
]);

/**
 * What `measure` saw: the operation of each request (per HTTP attempt), the capacity units DynamoDB
 * reported, and the writes it refused because their condition failed.
 */
interface Measured<T> {
  value: T;
  requests: string[];
  capacityUnits: number;
  conditionFailures: number;
  ms: number;
}

/**
 * Requests clients sent, by DynamoDB operation, counted per HTTP attempt (deserialize step); and the
 * consumed capacity of each command (initialize step: it asks for `ReturnConsumedCapacity: TOTAL` and
 * reads the answer's `ConsumedCapacity`).
 */
class RequestCounter {
  private logs: RequestLog[] = [];
  private capacityUnits = 0;
  private conditionFailures = 0;
  attach(client: { middlewareStack: DynamoDBClient["middlewareStack"] }): void {
    const id = randomUUID();
    client.middlewareStack.add(
      (next, context) => async (args) => {
        if (!CAPACITY_OPERATIONS.has(String(context.commandName))) return next(args);
        (args.input as Record<string, unknown>).ReturnConsumedCapacity ??= "TOTAL";
        try {
          const result = await next(args);
          const output = result.output as { ConsumedCapacity?: { CapacityUnits?: number } } | undefined;
          this.capacityUnits += output?.ConsumedCapacity?.CapacityUnits ?? 0;
          return result;
        } catch (error) {
          if ((error as Error).name === "ConditionalCheckFailedException") this.conditionFailures += 1;
          throw error;
        }
      },
      { step: "initialize", name: `benchCapacity_${id}` },
    );
    this.logs.push(logRequests(client));
  }
  /** Runs `fn` and returns its result with the requests it caused, their capacity and failed conditions. */
  async measure<T>(fn: () => Promise<T>): Promise<Measured<T>> {
    for (const log of this.logs) log.take();
    this.capacityUnits = 0;
    this.conditionFailures = 0;
    const started = performance.now();
    const value = await fn();
    const ms = performance.now() - started;
    const { capacityUnits, conditionFailures } = this;
    const requests = this.logs.flatMap((log) => log.take().map((request) => request.operation));
    return { value, requests, capacityUnits, conditionFailures, ms };
  }
}

/**
 * One phase (first call or replay) of one approach: requests per invoice (and by operation), capacity
 * units DynamoDB reported per invoice, writes whose condition failed (billed, not reported), median ms.
 */
export interface Phase {
  requests: number;
  byOperation: Record<string, number>;
  consumedCapacityUnits: number;
  conditionalFailures: number;
  medianMs: number;
}

/** Summarizes per-call samples; throws if the request pattern varied between calls (it must not). */
function phase(samples: Array<Measured<unknown>>, label: string): Phase {
  const patterns = new Set(
    samples.map((s) => `${s.requests.join(",")} ${s.capacityUnits} CU ${s.conditionFailures} failed`),
  );
  if (patterns.size !== 1) throw new Error(`${label}: request pattern varied: ${[...patterns].join(" | ")}`);
  const requests = samples[0]?.requests ?? [];
  const sorted = samples.map((s) => s.ms).sort((a, b) => a - b);
  const medianMs = Math.round((sorted[Math.floor(sorted.length / 2)] ?? 0) * 100) / 100;
  return {
    requests: requests.length,
    byOperation: byOperation(requests),
    consumedCapacityUnits: samples[0]?.capacityUnits ?? 0,
    conditionalFailures: samples[0]?.conditionFailures ?? 0,
    medianMs,
  };
}

function invoice(tenantId: string, n: number): NewInvoice {
  const money = (amount: string, minorUnits: number) => ({ amount, minorUnits, currency: "GBP" });
  return {
    tenantId,
    clientName: `Client ${n}`,
    jurisdiction: "GB",
    currency: "GBP",
    rate: "0.20",
    subtotal: money("100.00", 10_000),
    taxAmount: money("20.00", 2_000),
    grossTotal: money("120.00", 12_000),
    runId: `run_bench_${n}`,
    quoteId: `q_bench_${n}`,
    rateVersion: "GB-VAT-STANDARD-2011-01-04",
    taxPointDate: "2026-11-30",
    clientReference: null,
    description: null,
    createdBy: "usr_bench",
  };
}

/** P3's report: requests and capacity per recorded invoice, and the throw-after-write retry. */
export interface IdempotencyReport {
  bench: "idempotency";
  generatedAt: string;
  node: string;
  backend: string;
  iterations: number;
  powertoolsIdempotency: string | undefined;
  requestsPerRecordedInvoice: Record<string, { first: Phase; replay: Phase }>;
  throwAfterWriteThenRetry: Record<string, { writesApplied: number; ledgerRows: number; requests: number }>;
}

/**
 * Runs P3 on the DynamoDB at `dynamo` (a started local one; its `bench-idempotency` table is created if
 * missing), with a local model server of its own.
 * @throws Error when an approach writes a wrong number of invoices or its request pattern varies
 */
export async function benchIdempotency(dynamo: {
  endpoint: string;
  backend: string;
}): Promise<IdempotencyReport> {
  const model = await startModelServer();
  const counter = new RequestCounter();
  const raw = new DynamoDBClient({
    endpoint: dynamo.endpoint,
    region: "us-east-1",
    credentials: { accessKeyId: "local", secretAccessKey: "local" },
    maxAttempts: 3,
  });
  const ddb = DynamoDBDocumentClient.from(raw, { marshallOptions: { removeUndefinedValues: true } });
  counter.attach(raw);
  await ensureTable(ddb, TABLE);
  const ledger = new LedgerStore(ddb, TABLE);
  const results: Record<string, { first: Phase; replay: Phase }> = {};

  // 1. boundloop, tool level.
  {
    const first = [];
    const replay = [];
    for (let n = 0; n < ITERATIONS; n += 1) {
      const key = `tk_bench_${n}`;
      first.push(await counter.measure(() => ledger.recordOnce(invoice("tenant_tool", n), key)));
      replay.push(await counter.measure(() => ledger.recordOnce(invoice("tenant_tool", n), key)));
    }
    if ((await ledger.list("tenant_tool", 1000)).length !== ITERATIONS)
      throw new Error("tool level: wrong count");
    results["boundloop recordInvoice (LedgerStore.recordOnce)"] = {
      first: phase(first, "tool first"),
      replay: phase(replay, "tool replay"),
    };
  }

  // 2. boundloop, run level: the real handler; the model is scripted (not counted: it is not DynamoDB).
  {
    const config = loadConfig({
      DYNAMODB_ENDPOINT: dynamo.endpoint,
      OPENAI_BASE_URL: model.baseURL,
      TABLE_NAME: TABLE,
    });
    const deps = createApiDeps(config);
    counter.attach(deps.ddb);
    const handler = createHandler(deps);
    const seed = JSON.parse(
      await readFile(new URL("../events/seed-scenario.json", import.meta.url), "utf8"),
    ) as APIGatewayProxyEventV2 & {
      requestContext: { authorizer: { jwt: { claims: Record<string, string> } } };
    };
    seed.requestContext.authorizer.jwt.claims.tenant_id = "tenant_run";
    const post = async (key: string) => {
      const event = structuredClone(seed);
      event.headers = { ...event.headers, "idempotency-key": key };
      event.body = JSON.stringify({ prompt: "Record the invoice." });
      const result = (await handler(
        event as unknown as ApiEvent,
        createLambdaContext(29_000),
      )) as APIGatewayProxyStructuredResultV2;
      if (result.statusCode !== 200) throw new Error(`run level: HTTP ${result.statusCode} ${result.body}`);
      return result;
    };
    // A real quote per iteration (not counted: a quote is recorded at most once), recorded under a new
    // Idempotency-Key. Iteration -1 warms the container (not counted): its first run also reads the
    // tenant's limits and policy set, which later runs take from the per-container cache, as on Lambda.
    const first = [];
    const replay = [];
    for (let n = -1; n < ITERATIONS; n += 1) {
      const args = await quotedRecordInvoiceArgs(deps, {
        tenantId: "tenant_run",
        userId: seed.requestContext.authorizer.jwt.claims.sub as string,
      });
      model.script([
        { toolCalls: [{ id: "call_1", name: "recordInvoice", arguments: args }] },
        { content: "Recorded." },
      ]);
      const key = `bench-run-${n}`;
      const once = await counter.measure(() => post(key));
      const again = await counter.measure(() => post(key));
      if (again.value.headers?.["idempotent-replayed"] !== "true") throw new Error("run level: not replayed");
      if (n < 0) continue;
      first.push(once);
      replay.push(again);
    }
    if ((await ledger.list("tenant_run", 1000)).length !== ITERATIONS + 1)
      throw new Error("run level: wrong count");
    results["boundloop POST /v1/runs with Idempotency-Key (one recordInvoice)"] = {
      first: phase(first, "run first"),
      replay: phase(replay, "run replay"),
    };
    deps.ddb.destroy();
  }

  // 3. Powertools makeIdempotent wrapping the same invoice put (its record in the same table).
  const persistenceStore = new DynamoDBPersistenceLayer({
    tableName: TABLE,
    keyAttr: "pk",
    sortKeyAttr: "sk",
    awsSdkV3Client: raw,
  });
  const lambdaContext = createLambdaContext(29_000, "bench-powertools");
  const putInvoice = async (item: NewInvoice & { idempotencyKey: string }) => {
    const invoiceId = invoiceIdForQuote(item.quoteId);
    await ddb.send(
      new PutCommand({
        TableName: TABLE,
        Item: {
          pk: keys.tenant(item.tenantId),
          sk: keys.invoice(invoiceId),
          type: "invoice",
          invoiceId,
          ...item,
          // The ledger's own shape (shared/store/invoice.ts), so the ledger reads what this put wrote.
          createdAt: new Date().toISOString(),
        },
      }),
    );
    return { invoiceId };
  };
  {
    const config = new IdempotencyConfig({ expiresAfterSeconds: 86_400 });
    config.registerLambdaContext(lambdaContext);
    const idempotentPut = makeIdempotent(putInvoice, { persistenceStore, config });
    const first = [];
    const replay = [];
    for (let n = 0; n < ITERATIONS; n += 1) {
      const payload = { ...invoice("tenant_pt", n), idempotencyKey: `tk_pt_${n}` };
      first.push(await counter.measure(() => idempotentPut(payload)));
      replay.push(await counter.measure(() => idempotentPut(payload)));
    }
    if ((await ledger.list("tenant_pt", 1000)).length !== ITERATIONS)
      throw new Error("powertools: wrong count");
    results["Powertools makeIdempotent + invoice put"] = {
      first: phase(first, "powertools first"),
      replay: phase(replay, "powertools replay"),
    };
  }

  // 4. The write succeeds, then the function throws; the caller retries once. `writesApplied` counts
  // the invoice writes that changed the table (a repeated effect); `ledgerRows` the invoices left.
  const throwAfterWrite: Record<string, { writesApplied: number; ledgerRows: number; requests: number }> = {};
  {
    let failNext = true;
    let applied = 0;
    const fragile = async () => {
      const { created } = await ledger.recordOnce(invoice("tenant_fragile_bl", 0), "tk_fragile");
      if (created) applied += 1;
      if (failNext) {
        failNext = false;
        throw new Error("timeout after the write");
      }
      return "ok";
    };
    const attempt = () => counter.measure(() => fragile().catch(() => "threw"));
    const ops = [...(await attempt()).requests, ...(await attempt()).requests];
    throwAfterWrite["boundloop recordOnce"] = {
      writesApplied: applied,
      ledgerRows: (await ledger.list("tenant_fragile_bl")).length,
      requests: ops.length,
    };
  }
  {
    let failNext = true;
    let applied = 0;
    const fragilePut = async (item: NewInvoice & { idempotencyKey: string }) => {
      const result = await putInvoice(item);
      applied += 1;
      if (failNext) {
        failNext = false;
        throw new Error("timeout after the write");
      }
      return result;
    };
    const config = new IdempotencyConfig({ expiresAfterSeconds: 86_400 });
    config.registerLambdaContext(lambdaContext);
    const idempotent = makeIdempotent(fragilePut, { persistenceStore, config });
    const payload = { ...invoice("tenant_fragile_pt", 0), idempotencyKey: "tk_fragile" };
    const attempt = () => counter.measure(() => idempotent(payload).catch(() => "threw"));
    const ops = [...(await attempt()).requests, ...(await attempt()).requests];
    throwAfterWrite["Powertools makeIdempotent"] = {
      writesApplied: applied,
      ledgerRows: (await ledger.list("tenant_fragile_pt")).length,
      requests: ops.length,
    };
  }

  raw.destroy();
  await model.stop();
  return {
    bench: "idempotency",
    generatedAt: new Date().toISOString(),
    node: process.version,
    backend: dynamo.backend,
    iterations: ITERATIONS,
    powertoolsIdempotency: (
      JSON.parse(await readFile(new URL("../package.json", import.meta.url), "utf8")) as {
        devDependencies: Record<string, string>;
      }
    ).devDependencies["@aws-lambda-powertools/idempotency"],
    requestsPerRecordedInvoice: results,
    throwAfterWriteThenRetry: throwAfterWrite,
  };
}

/** Prints P3's figures. */
export function printIdempotency(report: IdempotencyReport): void {
  console.log(
    `DynamoDB requests per recorded invoice (${report.backend}, ${report.iterations} invoices each)`,
  );
  for (const [name, { first, replay }] of Object.entries(report.requestsPerRecordedInvoice)) {
    const ops = (p: Phase) =>
      Object.entries(p.byOperation)
        .map(([op, count]) => `${count} ${op}`)
        .join(" + ");
    const capacity = (p: Phase) =>
      `${p.consumedCapacityUnits} CU reported${p.conditionalFailures ? ` + ${p.conditionalFailures} failed condition (billed, not reported)` : ""}`;
    console.log(`  ${name}`);
    console.log(
      `    first call: ${first.requests} (${ops(first)}), ${capacity(first)}, median ${first.medianMs} ms`,
    );
    console.log(
      `    replay:     ${replay.requests} (${ops(replay)}), ${capacity(replay)}, median ${replay.medianMs} ms`,
    );
  }
  console.log("Write succeeded, function threw, caller retried once:");
  for (const [name, figures] of Object.entries(report.throwAfterWriteThenRetry)) {
    console.log(
      `  ${name}: invoice write applied ${figures.writesApplied}x, ${figures.ledgerRows} ledger row(s), ${figures.requests} requests`,
    );
  }
}

/** Writes bench/results/idempotency.json. */
export async function writeIdempotencyReport(report: IdempotencyReport): Promise<void> {
  await mkdir(new URL("./results/", import.meta.url), { recursive: true });
  await writeFile(
    new URL("./results/idempotency.json", import.meta.url),
    `${JSON.stringify(report, null, 2)}\n`,
  );
}

async function main(): Promise<void> {
  const dynamo = await startLocalDynamo();
  try {
    const report = await benchIdempotency(dynamo);
    printIdempotency(report);
    await writeIdempotencyReport(report);
    console.log("Wrote bench/results/idempotency.json");
  } finally {
    await dynamo.stop();
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  main().catch((error: unknown) => {
    console.error(error instanceof Error ? (error.stack ?? error.message) : String(error));
    process.exit(1);
  });
}
