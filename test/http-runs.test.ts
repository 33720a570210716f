import type { APIGatewayProxyStructuredResultV2 } from "aws-lambda";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { ProblemSchema, RunRecordSchema, RunResponseSchema } from "../functions/api/contract.js";
import type { ScriptedReply } from "../local/model-server.js";
import { apiEvent, type EventOptions, type EventShape, header } from "./fixtures/events.js";
import { startTestStack, type TestStack } from "./support/stack.js";

const IAM_ROLE = "arn:aws:sts::111122223333:assumed-role/billing-batch";
let stack: TestStack;
beforeAll(async () => {
  stack = await startTestStack({
    MAX_CYCLES: "4",
    IAM_PRINCIPAL_TENANTS: JSON.stringify({
      [IAM_ROLE]: { tenantId: "tenant_batch", permissions: ["billing:read", "billing:write"] },
    }),
  });
});
afterAll(async () => {
  await stack?.stop();
});
beforeEach(() => {
  stack.model.usePlanner();
});

type Result = APIGatewayProxyStructuredResultV2 & { multiValueHeaders?: Record<string, unknown[]> };
const call = async (shape: EventShape, options: EventOptions = {}) =>
  (await stack.invoke(apiEvent(shape, options) as never)) as Result;
const json = (response: Result) => JSON.parse(response.body ?? "") as Record<string, unknown>;
const problem = (response: Result) => {
  expect(header(response, "content-type")).toBe("application/problem+json");
  const body = ProblemSchema.parse(json(response));
  expect(body.status).toBe(response.statusCode);
  return body;
};

const gbTax = (id = "call_gb"): ScriptedReply => ({
  toolCalls: [
    { id, name: "calculateTax", arguments: '{"amount":1500,"currency":"GBP","jurisdiction":"UK"}' },
  ],
});

describe("POST /v1/runs and GET /v1/runs/{runId} for each event shape", () => {
  const cases: Array<{ shape: EventShape; tenantId: string; userId: string }> = [
    { shape: "http-api-v2", tenantId: "tenant_uk_01", userId: "usr_9918" },
    { shape: "rest-v1", tenantId: "tenant_uk_02", userId: "7d2e6c1a-1f4b-4b8e-9a51-0c3f5e2d9b77" },
    { shape: "function-url", tenantId: "tenant_batch", userId: "AROAEXAMPLEROLEID1234:billing-batch" },
  ];
  for (const { shape, tenantId, userId } of cases) {
    it(`${shape}: runs, answers 200 with the outcome, and stores the run with its audit steps`, async () => {
      stack.model.script([gbTax(), { content: "GB tax is 300.00 GBP." }]);
      const response = await call(shape);
      expect(response.statusCode).toBe(200);
      expect(header(response, "content-type")).toMatch(/^application\/json/);
      const body = RunResponseSchema.parse(json(response));
      expect(body).toMatchObject({
        status: "completed",
        answer: "GB tax is 300.00 GBP.",
        reason: null,
        cycles: 2,
      });
      expect(body.runId).toMatch(/^run_[0-9a-f-]{36}$/);
      expect(body.toolResults).toHaveLength(1);
      expect(body.toolResults[0]).toMatchObject({
        status: "success",
        data: { jurisdiction: "GB", taxAmount: { amount: "300.00" }, grossTotal: { amount: "1800.00" } },
        metadata: { toolName: "calculateTax", toolCallId: "call_gb", idempotencyKey: null },
      });
      expect(body.usage.totalTokens).toBe(body.usage.promptTokens + body.usage.completionTokens);
      expect(body.usage.totalTokens).toBeGreaterThan(0);

      const read = await call(shape, { method: "GET", path: `/v1/runs/${body.runId}` });
      expect(read.statusCode).toBe(200);
      const run = RunRecordSchema.parse(json(read));
      expect(run).toMatchObject({
        runId: body.runId,
        tenantId,
        userId,
        status: "completed",
        cycles: 2,
        cyclesRecorded: 2,
        answer: "GB tax is 300.00 GBP.",
        limits: { maxCycles: 4, timeoutMs: 25_000 },
        usage: body.usage,
      });
      expect(run.prompt.chars).toBe("Calculate tax on 1500 GBP for a client in the UK.".length);
      expect(run.prompt.sha256).toMatch(/^[0-9a-f]{64}$/);
      // The prompt's text is kept only as its excerpt (PROMPT_EXCERPT_CHARS, 500 by default), nowhere else.
      expect(run.prompt.excerpt).toBe("Calculate tax on 1500 GBP for a client in the UK.");
      expect(JSON.stringify({ ...run, prompt: { ...run.prompt, excerpt: "" } })).not.toContain(
        "Calculate tax on 1500 GBP",
      );
      expect(run.steps.map((s) => s.cycle)).toEqual([1, 2]);
      expect(run.steps[0]).toMatchObject({
        request: {
          messageCount: 2,
          toolsOffered: ["calculateTax", "recordInvoice", "getInvoice", "listInvoices"],
        },
        finishReason: "tool_calls",
        toolCalls: [
          {
            id: "call_gb",
            name: "calculateTax",
            arguments: '{"amount":1500,"currency":"GBP","jurisdiction":"UK"}',
            argumentsTruncated: false,
            result: { status: "success", metadata: { toolName: "calculateTax" } },
          },
        ],
      });
      expect(run.steps[1]).toMatchObject({
        finishReason: "stop",
        toolCalls: [],
        request: { messageCount: 4 },
      });
      const stepTokens = run.steps.reduce((sum, step) => sum + step.usage.totalTokens, 0);
      expect(stepTokens).toBe(body.usage.totalTokens);
      // ttl is whole epoch seconds: 30 days (RUN_TTL_SECONDS default) after the start, to the second.
      const expires = Date.parse(run.expiresAt) - Date.parse(run.startedAt);
      expect(Math.abs(expires - 30 * 86_400 * 1000)).toBeLessThan(1_000);
    });
  }

  it("records a mutating tool call's idempotency key in the audit step", async () => {
    const response = await call("http-api-v2", {
      body: { prompt: "Calculate tax on 1500 GBP for a client in the UK and record the invoice." },
    });
    const body = RunResponseSchema.parse(json(response));
    expect(body.status).toBe("completed");
    const recorded = body.toolResults.find((r) => r.metadata.toolName === "recordInvoice");
    expect(recorded?.status).toBe("success");
    expect(recorded?.metadata.idempotencyKey).toMatch(/^tk_[0-9a-f]{64}$/);

    const run = RunRecordSchema.parse(
      json(await call("http-api-v2", { method: "GET", path: `/v1/runs/${body.runId}` })),
    );
    const auditCall = run.steps.flatMap((s) => s.toolCalls).find((c) => c.name === "recordInvoice");
    expect(auditCall?.result.metadata.idempotencyKey).toBe(recorded?.metadata.idempotencyKey);
    expect(auditCall?.result.status).toBe("success");
  });

  it("decodes a base64-encoded body (isBase64Encoded)", async () => {
    stack.model.script([{ content: "ok" }]);
    const prompt = "Calculate tax on £1,500 for a client in the UK — base64 ✓";
    const response = await call("http-api-v2", { body: { prompt }, base64: true });
    expect(response.statusCode).toBe(200);
    expect(RunResponseSchema.parse(json(response)).status).toBe("completed");
    const sent = stack.model.requests.at(-1)?.messages.find((m) => m.role === "user");
    expect(sent?.content).toBe(prompt);

    const v1 = await call("rest-v1", { body: { prompt: 42 }, base64: true });
    expect(v1.statusCode).toBe(400);
    expect(problem(v1).errors?.[0]).toMatchObject({ in: "body", path: "prompt" });
  });
});

describe("request limits only tighten the server's caps", () => {
  it("maxCycles below the cap applies", async () => {
    stack.model.script([gbTax("c1"), gbTax("c2"), { content: "never reached" }]);
    const body = RunResponseSchema.parse(
      json(await call("http-api-v2", { body: { prompt: "tax", maxCycles: 1 } })),
    );
    expect(body).toMatchObject({ status: "max_cycles_exceeded", cycles: 1 });
    const run = RunRecordSchema.parse(
      json(await call("http-api-v2", { method: "GET", path: `/v1/runs/${body.runId}` })),
    );
    expect(run.limits.maxCycles).toBe(1);
  });

  it("maxCycles above the cap (MAX_CYCLES=4) is clamped to it", async () => {
    stack.model.script([gbTax("c1"), gbTax("c2"), gbTax("c3"), gbTax("c4"), gbTax("c5"), { content: "x" }]);
    const body = RunResponseSchema.parse(
      json(await call("http-api-v2", { body: { prompt: "tax", maxCycles: 1000 } })),
    );
    expect(body).toMatchObject({ status: "max_cycles_exceeded", cycles: 4 });
    expect(body.reason).toContain("4 cycles");
    const run = RunRecordSchema.parse(
      json(await call("http-api-v2", { method: "GET", path: `/v1/runs/${body.runId}` })),
    );
    expect(run.limits).toEqual({ maxCycles: 4, timeoutMs: 25_000 });
  });

  it("timeoutMs tightens the run's deadline", async () => {
    stack.model.script([{ content: "slow", delayMs: 3_000 }]);
    const started = Date.now();
    const body = RunResponseSchema.parse(
      json(await call("http-api-v2", { body: { prompt: "tax", timeoutMs: 300 } })),
    );
    expect(body.status).toBe("deadline_exceeded");
    expect(Date.now() - started).toBeLessThan(2_500);
    const run = RunRecordSchema.parse(
      json(await call("http-api-v2", { method: "GET", path: `/v1/runs/${body.runId}` })),
    );
    expect(run.limits.timeoutMs).toBe(300);
    expect(run.status).toBe("deadline_exceeded");
  });

  it("non-positive or non-integer limits are 400 INVALID_REQUEST with field paths", async () => {
    const before = stack.model.requests.length;
    for (const [field, value] of [
      ["maxCycles", 0],
      ["maxCycles", 2.5],
      ["timeoutMs", -1],
      ["timeoutMs", "1000"],
    ] as const) {
      const response = await call("http-api-v2", { body: { prompt: "tax", [field]: value } });
      expect(response.statusCode).toBe(400);
      expect(problem(response)).toMatchObject({
        code: "INVALID_REQUEST",
        errors: [{ in: "body", path: field }],
      });
    }
    expect(stack.model.requests.length).toBe(before);
  });
});

describe("model provider failures", () => {
  it("a provider still failing after retries is 502 MODEL_UNAVAILABLE with the partial run", async () => {
    stack.model.script([gbTax(), { status: 503 }, { status: 503 }, { status: 503 }]);
    const response = await call("http-api-v2");
    expect(response.statusCode).toBe(502);
    const body = problem(response);
    expect(body).toMatchObject({
      code: "MODEL_UNAVAILABLE",
      title: "Model unavailable",
      runStatus: "model_error",
      cycles: 2,
    });
    expect(body.runId).toMatch(/^run_/);
    expect((body.toolResults as unknown[]).length).toBe(1);
    // The provider was asked 1 + 3 times (the openai SDK's own 2 retries after the first failure).
    expect(stack.model.requests.length).toBeGreaterThanOrEqual(4);

    const run = RunRecordSchema.parse(
      json(await call("http-api-v2", { method: "GET", path: `/v1/runs/${String(body.runId)}` })),
    );
    // Both cycles are in the audit trail, the failed model call too (its step has no tool calls).
    expect(run).toMatchObject({ status: "model_error", cycles: 2, cyclesRecorded: 2 });
    expect(run.reason).toContain("503");
  });
});

describe("GET /v1/runs/{runId} visibility", () => {
  let runId: string;
  beforeAll(async () => {
    stack.model.script([{ content: "done" }]);
    runId = RunResponseSchema.parse(json(await call("http-api-v2"))).runId;
  });

  it("another tenant's run is 404, exactly like an unknown run", async () => {
    const other = await call("http-api-v2", {
      method: "GET",
      path: `/v1/runs/${runId}`,
      extraClaims: { tenant_id: "tenant_other" },
    });
    const unknown = await call("http-api-v2", {
      method: "GET",
      path: `/v1/runs/${runId.replace(/.$/, (c) => (c === "0" ? "1" : "0"))}`,
    });
    expect(other.statusCode).toBe(404);
    expect(unknown.statusCode).toBe(404);
    const [a, b] = [problem(other), problem(unknown)];
    expect(Object.keys(a).sort()).toEqual(Object.keys(b).sort());
    expect({ ...a, detail: "" }).toEqual({ ...b, detail: "" });
    expect(a.code).toBe("NOT_FOUND");
  });

  it("another user of the same tenant needs billing:read", async () => {
    const path = `/v1/runs/${runId}`;
    const noRead = await call("http-api-v2", {
      method: "GET",
      path,
      extraClaims: { sub: "usr_other", scope: "billing:write" },
    });
    expect(noRead.statusCode).toBe(404);
    const reader = await call("http-api-v2", {
      method: "GET",
      path,
      extraClaims: { sub: "usr_other", scope: "billing:read" },
    });
    expect(reader.statusCode).toBe(200);
    expect(RunRecordSchema.parse(json(reader)).userId).toBe("usr_9918");
  });

  it("a malformed runId is 400 with the path parameter named", async () => {
    const response = await call("http-api-v2", { method: "GET", path: "/v1/runs/not%20a%20run" });
    expect(response.statusCode).toBe(400);
    expect(problem(response).errors?.[0]).toMatchObject({ in: "path", path: "runId" });
  });
});

describe("a run killed mid-way", () => {
  it("shows how far it got: the record is running with the cycles recorded so far", async () => {
    // Cycle 1 succeeds; the model then hangs on cycle 2 until the run's 1.5 s deadline stops it.
    stack.model.script([gbTax(), { content: "late answer", delayMs: 5_000 }]);
    const pending = call("http-api-v2", {
      body: { prompt: "Calculate tax on 1500 GBP for a client in the UK.", timeoutMs: 1_500 },
    });
    const tenantId = "tenant_uk_01";
    let snapshot: Awaited<ReturnType<TestStack["deps"]["runs"]["get"]>>;
    const deadline = Date.now() + 10_000;
    do {
      await new Promise((resolve) => setTimeout(resolve, 50));
      const runId = await latestRunId(tenantId);
      snapshot = runId ? await stack.deps.runs.get(tenantId, runId) : undefined;
      // Until this request's run is the latest (admission writes first, so its record may come later).
    } while (
      (snapshot?.run.status !== "running" || (snapshot?.run.cyclesRecorded ?? 0) < 1) &&
      Date.now() < deadline
    );
    expect(snapshot?.run).toMatchObject({
      status: "running",
      cyclesRecorded: 1,
      finishedAt: null,
      answer: null,
    });
    expect(snapshot?.steps).toHaveLength(1);
    expect(snapshot?.steps[0]?.toolCalls[0]?.result).toMatchObject({ status: "success" });
    const final = RunResponseSchema.parse(json(await pending));
    expect(final.runId).toBe(snapshot?.run.runId);
    expect(final).toMatchObject({ status: "deadline_exceeded", cycles: 2 });
    const stored = await stack.deps.runs.get(tenantId, final.runId);
    // The cycle cut short by the deadline is recorded too, as a step without tool calls.
    expect(stored?.run).toMatchObject({ status: "deadline_exceeded", cyclesRecorded: 2, cycles: 2 });
    expect(stored?.steps.map((step) => step.toolCalls.length)).toEqual([1, 0]);
  });
});

/** The most recently started run of a tenant (ISO startedAt sorts). */
async function latestRunId(tenantId: string): Promise<string | undefined> {
  const { QueryCommand } = await import("@aws-sdk/lib-dynamodb");
  const page = await stack.deps.ddb.send(
    new QueryCommand({
      TableName: stack.config.table.name,
      KeyConditionExpression: "pk = :pk AND begins_with(sk, :run)",
      FilterExpression: "#type = :type",
      ExpressionAttributeNames: { "#type": "type" },
      ExpressionAttributeValues: { ":pk": `TENANT#${tenantId}`, ":run": "RUN#", ":type": "run" },
      ConsistentRead: true,
    }),
  );
  return (page.Items ?? []).sort((a, b) => String(a.startedAt).localeCompare(String(b.startedAt))).at(-1)
    ?.runId as string | undefined;
}
