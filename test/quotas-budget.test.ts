/**
 * Token and cost budgets (docs/quotas.md "Reservations", "Cost"): every model call reserves its worst case
 * (the prompt's estimate + its max_tokens) before it is made and settles to the reported usage after;
 * max_tokens is always set, to what the budgets leave; concurrent runs never overshoot a daily limit; cost
 * per call and per run from the price table, exact. DynamoDB Local, the real handler, the local model
 * server over HTTP.
 */
import type { APIGatewayProxyStructuredResultV2 } from "aws-lambda";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { QuotaUsageSchema } from "../functions/api/contract/quotas.js";
import { RunRecordSchema, RunResponseSchema } from "../functions/api/contract.js";
import { eventForRoute } from "../local/durable-runner.js";
import type { ChatMessage, ModelTool } from "../shared/agent/model.js";
import { estimateRequestTokens } from "../shared/agent/model-turn.js";
import { runEvent } from "./support/idempotency.js";
import { startTestStack, type TestStack } from "./support/stack.js";

type Result = APIGatewayProxyStructuredResultV2;
const body = (response: Result) => JSON.parse(response.body ?? "{}") as Record<string, unknown>;
const PROMPT = "Calculate tax on 100 GBP for a client in the UK.";
const GB_TAX = { amount: "100.00", currency: "GBP", jurisdiction: "GB" };
const taxCall = (id: string) => ({ id, name: "calculateTax", arguments: JSON.stringify(GB_TAX) });

/** The estimate the run made of a request the model server received (its messages and tools as sent). */
function estimateOf(request: TestStack["model"]["requests"][number]): number {
  const tools = (request.body.tools as Array<{ function: ModelTool }> | undefined)?.map(
    ({ function: f }) => ({
      name: f.name,
      description: f.description,
      parameters: f.parameters,
    }),
  );
  return estimateRequestTokens(request.body.messages as ChatMessage[], tools ?? []);
}

async function usageOf(stack: TestStack, tenantId: string, userId: string, scope = "billing:read") {
  const event = eventForRoute(runEvent({ tenantId, userId, prompt: "x", scope }), "GET", "/v1/usage");
  const response = await stack.invoke(event);
  expect(response.statusCode).toBe(200);
  return QuotaUsageSchema.parse(body(response));
}

describe("twenty concurrent runs of one tenant under a token budget", () => {
  let stack: TestStack;
  beforeAll(async () => {
    stack = await startTestStack({
      TENANT_TOKENS_PER_DAY: "30000",
      MODEL_MAX_TOKENS: "512",
      // Twenty runs' writes at once to one DynamoDB Local on a loaded machine: a 3 s socket timeout
      // (the default) would fail a write closed (503) before the store answered.
      DYNAMODB_REQUEST_TIMEOUT_MS: "20000",
      POWERTOOLS_LOG_LEVEL: "SILENT",
    });
  });
  afterAll(async () => {
    await stack?.stop();
  });

  it("never exceed it: the settled usage sums to at most the limit, and every refused run ends quota_exceeded", async () => {
    const tenantId = "tenant_budget_20";
    const responses = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        stack.invoke(runEvent({ tenantId, userId: `usr_${i % 4}`, prompt: PROMPT })),
      ),
    );
    const outcomes = responses.map((response) => {
      expect(response.statusCode).toBe(200);
      return RunResponseSchema.parse(body(response));
    });
    const statuses = outcomes.map((outcome) => outcome.status);
    expect(statuses.filter((status) => status !== "completed" && status !== "quota_exceeded")).toEqual([]);
    expect(statuses).toContain("completed");
    expect(statuses).toContain("quota_exceeded");
    const settled = outcomes.reduce((sum, outcome) => sum + outcome.usage.totalTokens, 0);
    expect(settled).toBeLessThanOrEqual(30_000);
    for (const refused of outcomes.filter((outcome) => outcome.status === "quota_exceeded")) {
      expect(refused.details.quota).toMatchObject({
        code: "QUOTA_EXCEEDED",
        limit: "tenant.tokensPerDay",
        quota: 30_000,
      });
    }
    const usage = await usageOf(stack, tenantId, "usr_0");
    expect(usage.tenant?.day.tokens).toEqual({ used: settled, reserved: 0, limit: 30_000 });
    expect(usage.tenant?.inFlight.runs).toBe(0);
    // Every call carried max_tokens: at most the cap, never fewer than MIN_COMPLETION_TOKENS.
    for (const request of stack.model.requests) {
      expect(request.body.max_tokens).toBeLessThanOrEqual(512);
      expect(request.body.max_tokens).toBeGreaterThanOrEqual(256);
    }
  });
});

describe("max_tokens and the daily token limit", () => {
  let stack: TestStack;
  beforeAll(async () => {
    stack = await startTestStack({ USER_TOKENS_PER_DAY: "3500", POWERTOOLS_LOG_LEVEL: "SILENT" });
  });
  afterAll(async () => {
    await stack?.stop();
  });
  beforeEach(() => {
    stack.model.requests.length = 0;
  });

  it("is what the budget leaves after the prompt's estimate; below MIN_COMPLETION_TOKENS no call is made and the run ends quota_exceeded (200, partial transcript)", async () => {
    stack.model.script([
      { toolCalls: [taxCall("c1")], usage: { prompt_tokens: 1_100, completion_tokens: 40 } },
      { toolCalls: [taxCall("c2")], usage: { prompt_tokens: 1_200, completion_tokens: 45 } },
      { content: "never requested" },
    ]);
    const response = await stack.invoke(
      runEvent({ tenantId: "tenant_mt", userId: "usr_mt", prompt: PROMPT }),
    );
    expect(response.statusCode).toBe(200);
    const outcome = RunResponseSchema.parse(body(response));
    const [first, second] = stack.model.requests;
    if (!first || !second) throw new Error("two calls expected");
    // Call 1: the day's 3500 tokens less its prompt; call 2: less call 1's settled 1140 and its own prompt.
    expect(first.body.max_tokens).toBe(3_500 - estimateOf(first));
    expect(second.body.max_tokens).toBe(3_500 - 1_140 - estimateOf(second));
    expect(stack.model.requests).toHaveLength(2);
    expect(outcome.status).toBe("quota_exceeded");
    expect(outcome.cycles).toBe(2);
    expect(outcome.toolResults.map((result) => result.status)).toEqual(["success", "success"]);
    expect(outcome.details.quota).toMatchObject({
      code: "QUOTA_EXCEEDED",
      limit: "user.tokensPerDay",
      quota: 3_500,
      used: 2_385,
      unit: "tokens",
    });
    expect(outcome.reason).toMatch(
      /^Your daily token limit \(3500 tokens\) cannot cover the next model call/,
    );
    const usage = await usageOf(stack, "tenant_mt", "usr_mt");
    expect(usage.user.day.tokens).toEqual({ used: 2_385, reserved: 0, limit: 3_500 });
    // Another user of the same tenant has a budget of its own.
    stack.model.usePlanner();
    const other = RunResponseSchema.parse(
      body(await stack.invoke(runEvent({ tenantId: "tenant_mt", userId: "usr_other", prompt: PROMPT }))),
    );
    expect(other.status).toBe("completed");
    expect((await usageOf(stack, "tenant_mt", "usr_mt", "billing:write")).tenant).toBeNull();
  });
});

describe("cost from the price table", () => {
  let stack: TestStack;
  beforeAll(async () => {
    stack = await startTestStack({
      MODEL_PRICES: JSON.stringify({
        "gpt-4o-mini": { inputPerMillion: "0.075", outputPerMillion: "0.30", currency: "USD" },
      }),
      POWERTOOLS_LOG_LEVEL: "SILENT",
    });
  });
  afterAll(async () => {
    await stack?.stop();
  });

  it("matches a hand calculation: each call exact, rounded half-up to six places; the run's, the steps', the events' and the day's agree", async () => {
    stack.model.script([
      { toolCalls: [taxCall("c1")], usage: { prompt_tokens: 1_234, completion_tokens: 567 } },
      { content: "Done.", usage: { prompt_tokens: 2_001, completion_tokens: 35 } },
    ]);
    const response = await stack.invoke(
      runEvent({ tenantId: "tenant_cost", userId: "usr_cost", prompt: PROMPT }),
    );
    const outcome = RunResponseSchema.parse(body(response));
    // Call 1: 1234 × 0.075 + 567 × 0.30 = 92.55 + 170.1 = 262.65 micro-USD → 263 (0.000263).
    // Call 2: 2001 × 0.075 + 35 × 0.30 = 150.075 + 10.5 = 160.575 → 161 (0.000161). Run: 0.000424.
    expect(outcome.cost).toEqual({ amount: "0.000424", currency: "USD" });
    expect(outcome.costNote).toBeNull();
    const stored = RunRecordSchema.parse(
      body(
        await stack.invoke(
          eventForRoute(
            runEvent({ tenantId: "tenant_cost", userId: "usr_cost", prompt: "x" }),
            "GET",
            `/v1/runs/${outcome.runId}`,
          ),
        ),
      ),
    );
    expect(stored.cost).toEqual({ amount: "0.000424", currency: "USD" });
    expect(stored.steps.map((step) => step.cost)).toEqual([
      { amount: "0.000263", currency: "USD" },
      { amount: "0.000161", currency: "USD" },
    ]);
    const events = await stack.deps.runEvents.store.read("tenant_cost", outcome.runId, 0);
    const costs = events.events.flatMap((event) =>
      event.type === "model.call.finished" || event.type === "run.finished" ? [[event.type, event.cost]] : [],
    );
    expect(costs).toEqual([
      ["model.call.finished", { amount: "0.000263", currency: "USD" }],
      ["model.call.finished", { amount: "0.000161", currency: "USD" }],
      ["run.finished", { amount: "0.000424", currency: "USD" }],
    ]);
    expect((await usageOf(stack, "tenant_cost", "usr_cost")).user.day.cost).toEqual({
      used: "0.000424",
      limit: null,
      currency: "USD",
    });
  });

  it("a run the quota stops before any model call cost 0.000000 in the price currency, not null: its outcome, record, events and the day agree", async () => {
    const tenantId = "tenant_cost_zero";
    // One token a day for each user: the first call's hold cannot be taken, so no call is made.
    const put = eventForRoute(runEvent({ tenantId, scope: "limits:admin" }), "PUT", "/v1/limits");
    put.headers = { ...put.headers, "content-type": "application/json" };
    put.body = JSON.stringify({ user: { tokensPerDay: 1 } });
    expect((await stack.invoke(put)).statusCode).toBe(200);
    const requests = stack.model.requests.length;
    const outcome = RunResponseSchema.parse(
      body(await stack.invoke(runEvent({ tenantId, userId: "usr_zero", prompt: PROMPT }))),
    );
    expect(outcome.status).toBe("quota_exceeded");
    expect(outcome.cycles).toBe(0);
    expect(stack.model.requests.length).toBe(requests);
    const zero = { amount: "0.000000", currency: "USD" };
    expect(outcome.cost).toEqual(zero);
    expect(outcome.costNote).toBeNull();
    const read = eventForRoute(
      runEvent({ tenantId, userId: "usr_zero", prompt: "x" }),
      "GET",
      `/v1/runs/${outcome.runId}`,
    );
    const stored = RunRecordSchema.parse(body(await stack.invoke(read)));
    expect({ cost: stored.cost, costNote: stored.costNote, steps: stored.steps }).toEqual({
      cost: zero,
      costNote: null,
      steps: [],
    });
    const events = await stack.deps.runEvents.store.read(tenantId, outcome.runId, 0);
    const finished = events.events.find((event) => event.type === "run.finished");
    expect(finished && "cost" in finished ? finished.cost : "no run.finished").toEqual(zero);
    expect((await usageOf(stack, tenantId, "usr_zero")).user.day.cost).toEqual({
      used: "0.000000",
      limit: null,
      currency: "USD",
    });
  });

  it("a model without a price shows cost: null and a costNote naming it", async () => {
    const unpriced = await startTestStack({ OPENAI_MODEL: "local-unpriced", POWERTOOLS_LOG_LEVEL: "SILENT" });
    try {
      const outcome = RunResponseSchema.parse(
        body(await unpriced.invoke(runEvent({ tenantId: "tenant_np", userId: "usr_np", prompt: PROMPT }))),
      );
      expect(outcome.status).toBe("completed");
      expect(outcome.cost).toBeNull();
      expect(outcome.costNote).toBe(
        "No price for the model local-unpriced in MODEL_PRICES; its cost is unknown.",
      );
      const stored = await unpriced.deps.runs.get("tenant_np", outcome.runId);
      expect(stored?.run).toMatchObject({ cost: null, costNote: outcome.costNote });
      expect(stored?.steps.every((step) => step.cost === null)).toBe(true);
    } finally {
      await unpriced.stop();
    }
  });
});

describe("fail closed", () => {
  it("a quota store that fails during a reservation stops the run before the model call: quota_exceeded QUOTA_UNAVAILABLE, a fixed sentence", async () => {
    // A budget tight enough that the run holds one call at a time (its five calls' worst case is more
    // than a tenth of what is left), and a cap that leaves the first call's hold short of the second.
    const stack = await startTestStack({
      TENANT_TOKENS_PER_DAY: "20000",
      MODEL_MAX_TOKENS: "300",
      POWERTOOLS_LOG_LEVEL: "SILENT",
    });
    try {
      stack.deps.ddb.middlewareStack.add(
        (next, context) => async (args) => {
          const input = JSON.stringify((args as { input?: unknown }).input);
          if (context.commandName === "UpdateItemCommand" && input.includes("COUNTER#quota")) {
            // The admission's writes go through; every reservation after the first call fails.
            if (stack.model.requests.length > 0)
              throw Object.assign(new Error("internal detail"), { name: "TimeoutError", $metadata: {} });
          }
          return next(args);
        },
        { step: "initialize", name: "failReservations" },
      );
      stack.model.script([
        { toolCalls: [taxCall("c1")], usage: { prompt_tokens: 100, completion_tokens: 10 } },
        { content: "never requested" },
      ]);
      const outcome = RunResponseSchema.parse(
        body(await stack.invoke(runEvent({ tenantId: "tenant_fc", userId: "usr_fc", prompt: PROMPT }))),
      );
      expect(outcome.status).toBe("quota_exceeded");
      expect(outcome.details.quota).toMatchObject({ code: "QUOTA_UNAVAILABLE", limit: null });
      expect(outcome.reason).toBe(
        "The quota could not be checked (the data store did not answer), so no further model call was made; retry shortly.",
      );
      expect(JSON.stringify(outcome)).not.toContain("internal detail");
      expect(stack.model.requests).toHaveLength(1);
    } finally {
      await stack.stop();
    }
  });
});
