/**
 * Deadline under latency: 50 trials, each the real handler invoked with a 3 s Lambda context, where the
 * model (25 trials) or a tool (25 trials) takes longer than the run's budget (3 s minus
 * DEADLINE_RESERVE_MS). Every trial must end `deadline_exceeded`, answered before the Lambda timeout.
 */
import { randomUUID } from "node:crypto";
import type { APIGatewayProxyEventV2 } from "aws-lambda";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { keys } from "../../shared/store/keys.js";
import { apiEvent } from "../fixtures/events.js";
import {
  captureOutput,
  FAKE_API_KEY,
  FAKE_JWT,
  percentile,
  pool,
  secretsIn,
} from "../support/reliability.js";
import { startTestStack, type TestStack } from "../support/stack.js";

const LAMBDA_TIMEOUT_MS = 3_000;
const TRIALS_PER_KIND = 25;
/** Trials in flight at once (bounded so a loaded 2-core machine does not add its own latency). */
const IN_FLIGHT = 5;
/** Latency past the deadline: longer than the whole Lambda timeout. */
const SLOW_MS = 5_000;
const SLOW_TENANT = "tenant_slowtool_";

let stack: TestStack;
beforeAll(async () => {
  stack = await startTestStack({ OPENAI_API_KEY: FAKE_API_KEY });
  // Tool latency: calculateTax's quote write for the slow tenants takes SLOW_MS.
  stack.deps.ddb.middlewareStack.add(
    (next) => async (args) => {
      const item = (args.input as { Item?: { pk?: unknown; sk?: unknown } }).Item;
      if (String(item?.pk).startsWith(keys.tenant(SLOW_TENANT)) && String(item?.sk).startsWith("QUOTE#"))
        await new Promise((resolve) => setTimeout(resolve, SLOW_MS));
      return next(args);
    },
    { step: "initialize", name: "slowQuoteWrites" },
  );
});
afterAll(async () => {
  await stack?.stop();
});

function event(tenantId: string): APIGatewayProxyEventV2 {
  return apiEvent("http-api-v2", {
    body: { prompt: "Calculate tax on 100 GBP for a client in the UK and record it." },
    headers: { authorization: `Bearer ${FAKE_JWT}` },
    claims: { sub: "usr_deadline", tenant_id: tenantId, scope: "billing:write" },
  }) as unknown as APIGatewayProxyEventV2;
}

interface Trial {
  kind: "model" | "tool";
  status: number | undefined;
  runStatus: string | undefined;
  phase: unknown;
  ms: number;
}

async function trial(kind: Trial["kind"]): Promise<Trial> {
  const tenantId =
    kind === "tool"
      ? `${SLOW_TENANT}${randomUUID().slice(0, 8)}`
      : `tenant_slowmodel_${randomUUID().slice(0, 8)}`;
  const started = performance.now();
  const response = await stack.invoke(event(tenantId), LAMBDA_TIMEOUT_MS);
  const ms = performance.now() - started;
  const body = JSON.parse(response.body ?? "{}") as {
    status?: string;
    details?: { deadline?: { phase?: unknown } };
  };
  return {
    kind,
    status: response.statusCode,
    runStatus: body.status,
    phase: body.details?.deadline?.phase,
    ms,
  };
}

describe("deadline: model or tool latency past the deadline, 3 s Lambda context", () => {
  it(`ends deadline_exceeded before the Lambda timeout in 100% of ${TRIALS_PER_KIND * 2} trials`, async () => {
    const capture = captureOutput();
    let trials: Trial[];
    try {
      // Model latency: every model reply takes SLOW_MS (identical replies, so concurrent trials may take any).
      stack.model.script(
        Array.from({ length: TRIALS_PER_KIND }, () => ({ content: "late", delayMs: SLOW_MS })),
      );
      const model = await pool(
        Array.from({ length: TRIALS_PER_KIND }, () => "model" as const),
        IN_FLIGHT,
        trial,
      );
      // Tool latency: the model answers at once with calculateTax, whose quote write takes SLOW_MS.
      const call = JSON.stringify({
        amount: "100.00",
        currency: "GBP",
        jurisdiction: "GB",
        taxPointDate: null,
      });
      stack.model.script(
        Array.from({ length: TRIALS_PER_KIND }, (_, i) => ({
          toolCalls: [{ id: `call_slow_${i}`, name: "calculateTax", arguments: call }],
        })),
      );
      const tool = await pool(
        Array.from({ length: TRIALS_PER_KIND }, () => "tool" as const),
        10,
        trial,
      );
      trials = [...model, ...tool];
    } finally {
      capture.stop();
    }
    const late = trials.filter((t) => t.ms >= LAMBDA_TIMEOUT_MS);
    const wrong = trials.filter((t) => t.status !== 200 || t.runStatus !== "deadline_exceeded");
    const latencies = trials.map((t) => t.ms);
    console.log(
      `RELIABILITY deadline ${JSON.stringify({
        trials: trials.length,
        deadlineExceeded: trials.length - wrong.length,
        beforeLambdaTimeout: trials.length - late.length,
        maxLatencyMs: Math.round(Math.max(...latencies)),
        p95LatencyMs: Math.round(percentile(latencies, 95)),
        lambdaTimeoutMs: LAMBDA_TIMEOUT_MS,
      })}`,
    );
    expect(wrong).toEqual([]);
    expect(late).toEqual([]);
    // Each trial's deadline hit where the latency was.
    expect(trials.filter((t) => t.phase !== (t.kind === "model" ? "model_call" : "tool_calls"))).toEqual([]);
    expect(trials).toHaveLength(TRIALS_PER_KIND * 2);
    expect(secretsIn(capture.text())).toEqual([]);
  }, 120_000);
});
