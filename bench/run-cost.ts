/**
 * The infrastructure cost of a run next to its model cost (docs/quotas.md, Cost): a
 * synchronous run of 1, 10 and 50 cycles (each cycle but the last one calculateTax call, then the
 * answer) through the real handler on DynamoDB Local, quotas on, the model priced by {@link BENCH_PRICES}.
 * Measured: DynamoDB requests and the capacity units DynamoDB reports (`ReturnConsumedCapacity: TOTAL`,
 * added to every request), the bytes each request writes by kind (run and steps = the audit, events,
 * quota counters, idempotency), the handler's wall time (for Lambda GB-seconds at FUNCTION_MEMORY_MB),
 * and the run's own cost. Durable operations are 0 here (a synchronous run); bench/durable.ts counts a
 * durable seed run's checkpoints. Bytes per cycle are those of the cycles after the first (the run's
 * own start and end excluded), so they show whether a cycle's writes grow with the transcript.
 */
import { randomUUID } from "node:crypto";
import type { APIGatewayProxyStructuredResultV2 } from "aws-lambda";
import { type ApiEvent, createHandler } from "../functions/api/app-handler.js";
import { FUNCTION_MEMORY_MB } from "../infra/stack.js";
import { createLambdaContext } from "../local/lambda-context.js";
import type { LocalModelServer } from "../local/model-server.js";
import { loadConfig } from "../shared/config.js";
import { createApiDeps } from "../shared/deps.js";
import { ensureTable } from "../shared/store/table.js";
import { seedEventOf } from "./governance.js";
import { round } from "./stats.js";

/** The price table of the runs: gpt-4o-mini's list price (USD per million tokens). */
export const BENCH_PRICES = {
  "gpt-4o-mini": { inputPerMillion: "0.15", outputPerMillion: "0.60", currency: "USD" },
};

/**
 * AWS list prices, us-east-1, USD (aws.amazon.com/lambda/pricing, /dynamodb/pricing/on-demand,
 * /api-gateway/pricing, as of 2026): Lambda x86 per GB-second and per request; DynamoDB on-demand per
 * write and read request unit; HTTP API per request.
 */
export const AWS_PRICES = {
  lambdaGbSecond: 0.0000166667,
  lambdaRequest: 0.2 / 1e6,
  dynamoWriteUnit: 0.625 / 1e6,
  dynamoReadUnit: 0.125 / 1e6,
  httpApiRequest: 1.0 / 1e6,
};

/** One run length's figures. */
export interface RunCostRow {
  cycles: number;
  wallMs: number;
  lambdaGbSeconds: number;
  dynamoRequests: number;
  writeUnits: number;
  readUnits: number;
  apiRequests: number;
  durableOperations: number;
  infrastructureUsd: number;
  modelUsd: number | null;
  /** Bytes written by kind in the whole run. */
  bytesByKind: Record<string, number>;
  /** Bytes written per cycle after the first, by kind (the run's start and finish excluded). */
  bytesPerCycle: Record<string, number>;
}

/** What a request writes, by the kind of item (its sort key's prefix). */
function kindOf(sk: string): string {
  if (/^RUN#[^#]+#STEP#/.test(sk)) return "steps (audit)";
  if (sk.startsWith("RUN#")) return "run record";
  if (sk.startsWith("EVENTS#")) return "events";
  if (sk.startsWith("COUNTER#")) return "quota counters";
  if (sk.startsWith("IDEM#")) return "idempotency";
  if (sk.startsWith("QUOTE#")) return "quotes (the tool's own)";
  return "other";
}

/** The bytes a write request carries: the item, or the update's values (marshalled JSON). */
function bytesOf(input: Record<string, unknown>): number {
  const written = input.Item ?? input.ExpressionAttributeValues;
  return written ? Buffer.byteLength(JSON.stringify(written)) : 0;
}

/** A run of `cycles` cycles: calculateTax calls with distinct amounts (no loop breaker), then the answer. */
function scriptOf(cycles: number) {
  const turns = Array.from({ length: cycles - 1 }, (_, n) => ({
    toolCalls: [
      {
        id: `call_${n}`,
        name: "calculateTax",
        arguments: JSON.stringify({ amount: `${100 + n}.00`, currency: "GBP", jurisdiction: "GB" }),
      },
    ],
  }));
  return [...turns, { content: "Done: every tax calculated." }];
}

/**
 * Runs one synchronous run per length in `lengths` (after one uncounted warm-up run) and measures it.
 * @throws Error when a run does not complete in its cycles
 */
export async function benchRunCost(
  dynamoEndpoint: string,
  model: LocalModelServer,
  lengths: readonly number[] = [1, 10, 50],
): Promise<RunCostRow[]> {
  const config = loadConfig({
    DYNAMODB_ENDPOINT: dynamoEndpoint,
    OPENAI_BASE_URL: model.baseURL,
    TABLE_NAME: `bench-cost-${randomUUID()}`,
    POWERTOOLS_LOG_LEVEL: "SILENT",
    MODEL_PRICES: JSON.stringify(BENCH_PRICES),
    MAX_CYCLES: "50",
    MAX_TOOL_CALLS_PER_RUN: "1000",
    MAX_TOTAL_TOKENS: "10000000",
    RUN_TIMEOUT_MS: "120000",
  });
  const deps = createApiDeps(config);
  await ensureTable(deps.ddb, config.table.name);
  const writes: Array<{ kind: string; bytes: number }> = [];
  const units = { write: 0, read: 0, requests: 0 };
  deps.ddb.middlewareStack.add(
    (next) => async (args) => {
      const input = args.input as Record<string, unknown>;
      input.ReturnConsumedCapacity = "TOTAL";
      const key = (input.Key ?? input.Item) as { sk?: string } | undefined;
      if (input.Item || input.UpdateExpression)
        writes.push({ kind: kindOf(String(key?.sk ?? "")), bytes: bytesOf(input) });
      units.requests += 1;
      const result = await next(args);
      const consumed = (
        result.output as {
          ConsumedCapacity?: {
            WriteCapacityUnits?: number;
            ReadCapacityUnits?: number;
            CapacityUnits?: number;
          };
        }
      ).ConsumedCapacity;
      const isWrite = Boolean(input.Item || input.UpdateExpression);
      const cu = consumed?.CapacityUnits ?? 0;
      if (isWrite) units.write += consumed?.WriteCapacityUnits ?? cu;
      else units.read += consumed?.ReadCapacityUnits ?? cu;
      return result;
    },
    { step: "initialize", name: "benchRunCost" },
  );
  const handler = createHandler(deps);
  const runOnce = async (cycles: number) => {
    model.script(scriptOf(cycles));
    const event = seedEventOf();
    event.body = JSON.stringify({ prompt: "Calculate the tax on each amount." });
    writes.length = 0;
    Object.assign(units, { write: 0, read: 0, requests: 0 });
    const started = performance.now();
    const result = (await handler(
      event as unknown as ApiEvent,
      createLambdaContext(120_000),
    )) as APIGatewayProxyStructuredResultV2;
    const wallMs = performance.now() - started;
    const body = JSON.parse(String(result.body)) as {
      cycles?: number;
      status?: string;
      cost?: { amount: string } | null;
    };
    if (result.statusCode !== 200 || body.cycles !== cycles || body.status !== "completed")
      throw new Error(
        `run of ${cycles} cycles: HTTP ${result.statusCode} ${String(result.body).slice(0, 400)}`,
      );
    return { wallMs, body, writes: [...writes], units: { ...units } };
  };
  await runOnce(2);
  const measured = [];
  for (const cycles of lengths) measured.push({ cycles, ...(await runOnce(cycles)) });
  deps.ddb.destroy();
  const base = measured.find((row) => row.cycles === 1);
  return measured.map((row) => rowOf(row, base));
}

/** Sums bytes by kind. */
function byKind(writes: ReadonlyArray<{ kind: string; bytes: number }>): Record<string, number> {
  const sums: Record<string, number> = {};
  for (const { kind, bytes } of writes) sums[kind] = (sums[kind] ?? 0) + bytes;
  return sums;
}

/** One row: Lambda GB-s at FUNCTION_MEMORY_MB, request units, prices; bytes per cycle over the 1-cycle run. */
function rowOf(
  row: {
    cycles: number;
    wallMs: number;
    body: { cost?: { amount: string } | null };
    writes: Array<{ kind: string; bytes: number }>;
    units: { write: number; read: number; requests: number };
  },
  base: { writes: Array<{ kind: string; bytes: number }> } | undefined,
): RunCostRow {
  const lambdaGbSeconds = (row.wallMs / 1000) * (FUNCTION_MEMORY_MB / 1024);
  const infrastructureUsd =
    lambdaGbSeconds * AWS_PRICES.lambdaGbSecond +
    AWS_PRICES.lambdaRequest +
    row.units.write * AWS_PRICES.dynamoWriteUnit +
    row.units.read * AWS_PRICES.dynamoReadUnit +
    AWS_PRICES.httpApiRequest;
  const bytesByKind = byKind(row.writes);
  const baseBytes = byKind(base?.writes ?? []);
  const extraCycles = row.cycles - 1;
  const bytesPerCycle = Object.fromEntries(
    Object.entries(bytesByKind).map(([kind, bytes]) => [
      kind,
      extraCycles > 0 ? Math.round((bytes - (baseBytes[kind] ?? 0)) / extraCycles) : 0,
    ]),
  );
  return {
    cycles: row.cycles,
    wallMs: round(row.wallMs),
    lambdaGbSeconds: round(lambdaGbSeconds, 4),
    dynamoRequests: row.units.requests,
    writeUnits: round(row.units.write, 1),
    readUnits: round(row.units.read, 1),
    apiRequests: 1,
    durableOperations: 0,
    infrastructureUsd: round(infrastructureUsd * 1e6, 2) / 1e6,
    modelUsd: row.body.cost ? Number(row.body.cost.amount) : null,
    bytesByKind,
    bytesPerCycle,
  };
}
