/**
 * Duplicate storm: N concurrent POST /v1/runs spread over K Idempotency-Keys (200 over 20 in `npm test`,
 * 1,000 over 50 in `npm run soak`), each key one distinct operation (a prompt that ends in recordInvoice),
 * while faults are injected: the model server answers 5xx/429 on 10% of calls after 50-500 ms, DynamoDB
 * throttles 5% of write attempts (SDK middleware; the SDK retries them), and some keys' first runs are
 * killed (SIGKILL) in a child process right after their ledger write, then retried by the storm.
 */
import type { ChildProcess } from "node:child_process";
import { randomUUID } from "node:crypto";
import { once } from "node:events";
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2 } from "aws-lambda";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RUN_ROUTE } from "../../functions/api/run-idempotency.js";
import { seededRandom } from "../../local/model-server.js";
import type { ToolResult } from "../../shared/agent/result.js";
import { apiEvent } from "../fixtures/events.js";
import {
  captureOutput,
  FAKE_API_KEY,
  FAKE_JWT,
  injectThrottling,
  percentile,
  pool,
  SCALE,
  secretsIn,
} from "../support/reliability.js";
import { spawnHandlerChild } from "../support/spawn-handler.js";
import { startTestStack, type TestStack } from "../support/stack.js";

const MODEL_SEED = 9;
const DYNAMO_SEED = 5;
/** Lambda timeout the storm's invocations get: the run's deadline, and so its key's lease, is 1.5 s less. */
const LAMBDA_TIMEOUT_MS = 10_000;
/** The killed children's run timeout: their leases end this long after they start. */
const CHILD_RUN_TIMEOUT_MS = 4_000;
const ALLOWED = new Set([200, 409, 422, 502, 503]);

let stack: TestStack;
let capture: ReturnType<typeof captureOutput> | undefined;
const children = new Set<ChildProcess>();
const childOutput: string[] = [];

beforeAll(async () => {
  stack = await startTestStack({ OPENAI_API_KEY: FAKE_API_KEY });
});
afterAll(async () => {
  capture?.stop();
  for (const child of children) child.kill("SIGKILL");
  await stack?.stop();
});

const tenantId = `tenant_storm_${randomUUID().slice(0, 8)}`;
const runKey = (index: number) => `storm-${tenantId}-${index}`;
/** Key `index`'s subtotal in GBP: distinct per key, so an invoice names the operation it came from. */
const subtotal = (index: number) => `${100 + index}.00`;

function stormEvent(index: number): APIGatewayProxyEventV2 {
  return apiEvent("http-api-v2", {
    body: { prompt: `Calculate tax on ${100 + index} GBP for a client in the UK and record it.` },
    headers: { "idempotency-key": runKey(index), authorization: `Bearer ${FAKE_JWT}` },
    claims: { sub: "usr_storm", tenant_id: tenantId, scope: "billing:read billing:write" },
  }) as unknown as APIGatewayProxyEventV2;
}

/** Runs the handler for key `index` in a child process that SIGKILLs itself after its ledger write. */
async function runKilled(index: number): Promise<{ signal: NodeJS.Signals | null; output: string }> {
  const { process: child, output } = spawnHandlerChild(
    "kill-after-ledger-child.ts",
    stack.config,
    stormEvent(index),
    {
      OPENAI_API_KEY: FAKE_API_KEY,
      RUN_TIMEOUT_MS: String(CHILD_RUN_TIMEOUT_MS),
      POWERTOOLS_LOG_LEVEL: "INFO",
    },
  );
  children.add(child);
  const [, signal] = (await once(child, "close")) as [number | null, NodeJS.Signals | null];
  children.delete(child);
  childOutput.push(output());
  return { signal, output: output() };
}

interface Sent {
  key: number;
  status: number;
  ms: number;
  replayed: boolean;
  retryAfter: number | undefined;
  body: string;
}

async function send(key: number): Promise<Sent> {
  const started = performance.now();
  let response: APIGatewayProxyStructuredResultV2;
  try {
    response = await stack.invoke(stormEvent(key), LAMBDA_TIMEOUT_MS);
  } catch (error) {
    // The handler must answer; a throw is recorded as a status outside the allowed set.
    return { key, status: -1, ms: 0, replayed: false, retryAfter: undefined, body: String(error) };
  }
  return {
    key,
    status: response.statusCode ?? -1,
    ms: performance.now() - started,
    replayed: response.headers?.["idempotent-replayed"] === "true",
    retryAfter: Number(response.headers?.["retry-after"] ?? Number.NaN) || undefined,
    body: response.body ?? "",
  };
}

/** The recordInvoice results in a 200 response's body. */
function invoiceResults(body: string): ToolResult[] {
  const parsed = JSON.parse(body) as { toolResults?: ToolResult[] };
  return (parsed.toolResults ?? []).filter((result) => result.metadata.toolName === "recordInvoice");
}

describe(`duplicate storm: ${SCALE.requests} POSTs over ${SCALE.keys} Idempotency-Keys with faults`, () => {
  it(
    "records each operation once, answers only 200/409/422/502/503, and leaves every key settled",
    async () => {
      capture = captureOutput();
      const store = stack.deps.idempotency;
      const random = seededRandom(MODEL_SEED * 1_000 + DYNAMO_SEED);
      stack.model.usePlanner({ rate: 0.1, seed: MODEL_SEED, minDelayMs: 50, maxDelayMs: 500 });
      const started = Date.now();

      // 1. Some keys' first runs crash right after their ledger write.
      const killedKeys = Array.from(
        { length: SCALE.killed },
        (_, i) => i * Math.floor(SCALE.keys / SCALE.killed),
      );
      const killed = await Promise.all(killedKeys.map((key) => runKilled(key)));
      expect(
        killed.map((k) => k.signal),
        killed.map((k) => k.output).join("\n"),
      ).toEqual(killedKeys.map(() => "SIGKILL"));
      const crashedInvoices = new Map<string, string>();
      for (const invoice of await stack.deps.ledger.list(tenantId, 1_000))
        crashedInvoices.set(invoice.subtotal.amount, invoice.invoiceId);
      expect(crashedInvoices.size).toBe(SCALE.killed);
      for (const key of killedKeys)
        expect((await store.read(tenantId, "usr_storm", RUN_ROUTE, runKey(key)))?.status).toBe("IN_PROGRESS");

      // 2. The storm, with DynamoDB throttling on 5% of write attempts.
      const throttle = injectThrottling(stack.deps.ddb, { rate: 0.05, seed: DYNAMO_SEED });
      const order = Array.from({ length: SCALE.requests }, (_, i) => i % SCALE.keys)
        .map((key) => ({ key, sort: random() }))
        .sort((a, b) => a.sort - b.sort)
        .map(({ key }) => key);
      const storm = await pool(order, SCALE.inFlight, (key) => send(key));
      const stormMs = Date.now() - started;

      // Every key that started is COMPLETED or retryable: released (no record), or held only by a lease
      // that has ended or will (no handler is running now, so a held record is a crashed run's).
      const now = Date.now();
      const states = await Promise.all(
        Array.from({ length: SCALE.keys }, (_, key) =>
          store.read(tenantId, "usr_storm", RUN_ROUTE, runKey(key)),
        ),
      );
      for (const state of states) {
        if (state === undefined || state.status === "COMPLETED") continue;
        expect(state.status).toBe("IN_PROGRESS");
        expect(state.leaseExpiresAt).toBeLessThanOrEqual(now + LAMBDA_TIMEOUT_MS);
      }

      // 3. Clients retry until each key has its answer (honouring Retry-After, capped at 1 s).
      const retries = await pool(
        Array.from({ length: SCALE.keys }, (_, key) => key),
        10,
        async (key) => {
          const sent: Sent[] = [];
          for (let attempt = 0; attempt < 30; attempt += 1) {
            const response = await send(key);
            sent.push(response);
            if (response.status === 200 || !ALLOWED.has(response.status) || response.status === 422) break;
            const waitMs =
              response.status === 409 ? Math.min(1_000, (response.retryAfter ?? 1) * 1_000) : 250;
            await new Promise((resolve) => setTimeout(resolve, waitMs));
          }
          return sent;
        },
      );
      throttle.stop();
      const all = [...storm, ...retries.flat()];
      const finals = retries.map((sent) => sent.at(-1) as Sent);

      // Statuses: only the allowed ones, never a 500 or a throw.
      const byStatus: Record<string, number> = {};
      for (const sent of all) byStatus[sent.status] = (byStatus[sent.status] ?? 0) + 1;
      expect(all.filter((sent) => !ALLOWED.has(sent.status)).map((s) => `${s.status} ${s.body}`)).toEqual([]);
      expect(finals.map((sent) => sent.status)).toEqual(finals.map(() => 200));
      for (let key = 0; key < SCALE.keys; key += 1)
        expect((await store.read(tenantId, "usr_storm", RUN_ROUTE, runKey(key)))?.status).toBe("COMPLETED");

      // Ledger: one invoice per successful operation, none twice.
      const invoices = await stack.deps.ledger.list(tenantId, 1_000);
      const perOperation = new Map<string, number>();
      for (const invoice of invoices)
        perOperation.set(invoice.subtotal.amount, (perOperation.get(invoice.subtotal.amount) ?? 0) + 1);
      const duplicates = [...perOperation.values()].reduce((sum, count) => sum + count - 1, 0);
      const successful = new Set<string>();
      for (const sent of all.filter((s) => s.status === 200)) {
        for (const result of invoiceResults(sent.body)) {
          if (result.status !== "success") continue;
          const invoice = (result.data as { invoice: { invoiceId: string; subtotal: { amount: string } } })
            .invoice;
          expect(invoice.subtotal.amount).toBe(subtotal(sent.key));
          successful.add(invoice.subtotal.amount);
          // A crashed run's retry reaches the invoice the crashed run wrote.
          const crashed = crashedInvoices.get(invoice.subtotal.amount);
          if (crashed) expect(invoice.invoiceId).toBe(crashed);
        }
      }
      expect(duplicates).toBe(0);
      expect(invoices).toHaveLength(successful.size);
      expect([...perOperation.keys()].sort()).toEqual([...successful].sort());
      expect(successful.size).toBe(SCALE.keys);

      const faults = stack.model.faultStats();
      const latencies = all.map((sent) => sent.ms);
      capture.stop();
      const logs = capture.text();
      const summary = {
        scale: SCALE.soak ? "soak" : "test",
        requests: all.length + SCALE.killed,
        stormRequests: storm.length,
        clientRetries: all.length - storm.length,
        keys: SCALE.keys,
        statuses: byStatus,
        modelCalls: faults.plannerRequests,
        modelFaultsInjected: faults.injected,
        modelFaultsByStatus: faults.byStatus,
        dynamoWriteAttempts: throttle.stats.writeAttempts,
        dynamoThrottlesInjected: throttle.stats.injected,
        runsKilled: killed.length,
        invoices: invoices.length,
        // Tool results of a write still throttled after the SDK's attempts (the planner retries those once).
        toolStoreUnavailable: all
          .filter((sent) => sent.status === 200)
          .flatMap((sent) => (JSON.parse(sent.body) as { toolResults?: ToolResult[] }).toolResults ?? [])
          .filter((result) => result.error?.code === "STORE_UNAVAILABLE").length,
        duplicatesFound: duplicates,
        maxLatencyMs: Math.round(Math.max(...latencies)),
        p95LatencyMs: Math.round(percentile(latencies, 95)),
        stormWallMs: stormMs,
        logLines: capture.lines(),
      };
      console.log(`RELIABILITY storm ${JSON.stringify(summary)}`);
      expect(faults.injected).toBeGreaterThan(0);
      expect(throttle.stats.injected).toBeGreaterThan(0);

      // Secrets: the key reached the model server, the JWT was in every request; neither is in any log.
      expect(stack.model.requests.some((r) => r.authorization === `Bearer ${FAKE_API_KEY}`)).toBe(true);
      expect(logs).toContain('"message":"request"');
      expect(secretsIn(logs)).toEqual([]);
      expect(secretsIn(childOutput.join("\n"))).toEqual([]);
    },
    SCALE.soak ? 900_000 : 240_000,
  );
});
