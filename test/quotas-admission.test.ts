/**
 * Admission (docs/quotas.md): runs per UTC minute per user and per tenant, runs in flight per tenant, at
 * the door of POST /v1/runs and MCP tools/call. Over a limit: 429 problem+json RATE_LIMITED with a
 * Retry-After computed from the injected clock and the IETF RateLimit fields, and nothing started or
 * written; another user, another tenant, the next minute are admitted. DynamoDB Local, the real handler.
 */
import type { APIGatewayProxyStructuredResultV2 } from "aws-lambda";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { QuotaUsageSchema } from "../functions/api/contract/quotas.js";
import { ProblemSchema } from "../functions/api/contract.js";
import { eventForRoute } from "../local/durable-runner.js";
import { keys } from "../shared/store/keys.js";
import { header } from "./fixtures/events.js";
import { heldReply } from "./support/held.js";
import { runEvent } from "./support/idempotency.js";
import { startMcpStack } from "./support/mcp.js";
import { startTestStack, type TestStack } from "./support/stack.js";

/** The injected clock: 23.25 s into a minute, near the real time (run deadlines are real). */
const minute = () => Math.floor(Date.now() / 60_000) * 60_000;
let now = minute() + 23_250;
const clock = { now: () => now };

let stack: TestStack;
beforeAll(async () => {
  stack = await startTestStack(
    { USER_RUNS_PER_MINUTE: "2", TENANT_RUNS_PER_MINUTE: "3", POWERTOOLS_LOG_LEVEL: "SILENT" },
    { quotas: clock },
  );
});
afterAll(async () => {
  await stack?.stop();
});

type Result = APIGatewayProxyStructuredResultV2;
const body = (response: Result) => JSON.parse(response.body ?? "{}") as Record<string, unknown>;
const post = (tenantId: string, userId: string, key?: string) =>
  stack.invoke(
    runEvent({ tenantId, userId, prompt: "Calculate tax on 100 GBP for a client in the UK.", key }),
  );
const usage = async (tenantId: string, userId: string) => {
  const event = eventForRoute(
    runEvent({ tenantId, userId, prompt: "x", scope: "billing:read" }),
    "GET",
    "/v1/usage",
  );
  const response = await stack.invoke(event);
  expect(response.statusCode).toBe(200);
  return QuotaUsageSchema.parse(body(response));
};
const runsOf = (tenantId: string) => runsOfStack(stack, tenantId);

describe("runs per minute", () => {
  it("the user's third run in a minute is 429 with a Retry-After to the minute's end and the RateLimit fields; nothing is written", async () => {
    const tenant = "tenant_adm_1";
    expect((await post(tenant, "usr_a")).statusCode).toBe(200);
    now += 10_000; // 33.25 s into the minute
    expect((await post(tenant, "usr_a")).statusCode).toBe(200);
    now += 4_000; // 37.25 s: 22.75 s left, rounded up
    const refused = await post(tenant, "usr_a", "key-1");
    expect(refused.statusCode).toBe(429);
    expect(header(refused, "content-type")).toBe("application/problem+json");
    expect(header(refused, "retry-after")).toBe("23");
    expect(header(refused, "ratelimit-policy")).toBe('"user-minute";q=2;w=60, "tenant-minute";q=3;w=60');
    expect(header(refused, "ratelimit")).toBe('"user-minute";r=0;t=23, "tenant-minute";r=1;t=23');
    const problem = ProblemSchema.parse(body(refused));
    expect(problem).toMatchObject({
      status: 429,
      code: "RATE_LIMITED",
      policy: "user-minute",
      limit: 2,
      retryAfterSeconds: 23,
    });
    expect(problem.detail).toBe(
      "You started 2 run(s) this minute; your limit is 2. Nothing was started. Retry after 23 s.",
    );
    // Nothing started or written: two runs stored, two counted, the Idempotency-Key free for a retry.
    expect(await runsOf(tenant)).toBe(2);
    const seen = await usage(tenant, "usr_a");
    expect(seen.user.minute).toMatchObject({ runs: 2, limit: 2 });
    expect(seen.user.day.runs).toBe(2);
    now = minute() + 60_000 + 500; // the next UTC minute
    const retried = await post(tenant, "usr_a", "key-1");
    expect(retried.statusCode).toBe(200);
    expect((await usage(tenant, "usr_a")).user.minute.runs).toBe(1);
  });

  it("counts each user apart, and the tenant across its users; another tenant is untouched", async () => {
    now = minute() + 120_000 + 5_000;
    const tenant = "tenant_adm_2";
    expect((await post(tenant, "usr_a")).statusCode).toBe(200);
    expect((await post(tenant, "usr_b")).statusCode).toBe(200);
    expect((await post(tenant, "usr_c")).statusCode).toBe(200);
    const refused = await post(tenant, "usr_d");
    expect(refused.statusCode).toBe(429);
    expect(body(refused)).toMatchObject({ code: "RATE_LIMITED", policy: "tenant-minute", limit: 3 });
    expect(header(refused, "retry-after")).toBe("55");
    expect(header(refused, "ratelimit")).toBe('"user-minute";r=2;t=55, "tenant-minute";r=0;t=55');
    expect((await post("tenant_adm_3", "usr_d")).statusCode).toBe(200);
    const seen = await usage(tenant, "usr_a");
    expect(seen.user.minute.runs).toBe(1);
    expect(seen.tenant?.minute).toMatchObject({ runs: 3, limit: 3 });
    expect(seen.tenant?.day.runs).toBe(3);
    expect((await usage("tenant_adm_3", "usr_d")).tenant?.day.runs).toBe(1);
  });
  it("a limit lowered mid-minute below the runs already counted: the detail names the runs counted and the limit apart", async () => {
    now = minute() + 240_000 + 5_000;
    const tenant = "tenant_adm_4";
    const limits = async (change: unknown) => {
      const put = eventForRoute(runEvent({ tenantId: tenant, scope: "limits:admin" }), "PUT", "/v1/limits");
      put.headers = { ...put.headers, "content-type": "application/json" };
      put.body = JSON.stringify(change);
      expect((await stack.invoke(put)).statusCode).toBe(200);
    };
    await limits({ tenant: { runsPerMinute: 10 }, user: { runsPerMinute: 10 } });
    for (let run = 0; run < 4; run += 1) expect((await post(tenant, "usr_a")).statusCode).toBe(200);
    await limits({ user: { runsPerMinute: 2 } });
    const refused = await post(tenant, "usr_a");
    expect(refused.statusCode).toBe(429);
    expect(body(refused)).toMatchObject({ code: "RATE_LIMITED", policy: "user-minute", limit: 2 });
    expect(body(refused).detail).toBe(
      "You started 4 run(s) this minute; your limit is 2. Nothing was started. Retry after 55 s.",
    );
    expect((await usage(tenant, "usr_a")).user.minute).toMatchObject({ runs: 4, limit: 2 });
    // The tenant's limit too, lowered below the runs its users started.
    await limits({ tenant: { runsPerMinute: 3 }, user: { runsPerMinute: 10 } });
    const tenantRefused = await post(tenant, "usr_b");
    expect(body(tenantRefused)).toMatchObject({ code: "RATE_LIMITED", policy: "tenant-minute", limit: 3 });
    expect(body(tenantRefused).detail).toBe(
      "Your tenant started 4 run(s) this minute; its limit is 3. Nothing was started. Retry after 55 s.",
    );
  });
});

describe("runs in flight", () => {
  let tight: TestStack;
  beforeAll(async () => {
    tight = await startTestStack(
      { TENANT_CONCURRENT_RUNS: "1", POWERTOOLS_LOG_LEVEL: "SILENT" },
      { quotas: clock },
    );
  });
  afterAll(async () => {
    await tight?.stop();
  });
  beforeEach(() => {
    // Markers expire by the runs' real deadlines: the quotas' clock is set to the real time here.
    now = Date.now();
    tight.model.usePlanner();
  });
  const postTight = (tenantId: string, userId: string) =>
    tight.invoke(runEvent({ tenantId, userId, prompt: "Calculate tax on 100 GBP for a client in the UK." }));

  it("a second run while one is in flight is 429 (Retry-After 1, concurrent-requests); the slot is free again when it ends", async () => {
    // The first run's model call stays in flight until the refusal and the other tenant's run are done.
    const { heldUntil, release } = heldReply();
    tight.model.script([{ content: "slow answer", heldUntil }, { content: "other" }, { content: "after" }]);
    const first = postTight("tenant_live_1", "usr_a");
    try {
      const quotas = tight.deps.quotas;
      for (let tries = 0; tries < 100; tries += 1) {
        const seen = await quotas?.usage({ tenantId: "tenant_live_1", userId: "usr_a" }, true);
        if (seen?.tenant?.inFlight.runs === 1) break;
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      const refused = await postTight("tenant_live_1", "usr_b");
      expect(refused.statusCode).toBe(429);
      expect(body(refused)).toMatchObject({ code: "RATE_LIMITED", policy: "tenant-concurrent", limit: 1 });
      expect(header(refused, "retry-after")).toBe("1");
      expect(header(refused, "ratelimit-policy")).toBe('"tenant-concurrent";q=1;qu="concurrent-requests"');
      expect(header(refused, "ratelimit")).toBe('"tenant-concurrent";r=0');
      expect((await postTight("tenant_live_2", "usr_b")).statusCode).toBe(200);
    } finally {
      release();
    }
    expect((await first).statusCode).toBe(200);
    expect((await postTight("tenant_live_1", "usr_b")).statusCode).toBe(200);
    tight.model.usePlanner();
  });

  it("a run that crashed holding a slot is pruned once its marker expired, when the limit is hit", async () => {
    const quotas = tight.deps.quotas;
    if (!quotas) throw new Error("quotas are on");
    const subject = { tenantId: "tenant_live_3", userId: "usr_crashed", runId: "run_crashed" };
    await quotas.admit(subject, { expiresAtSeconds: Math.floor(now / 1000) + 30 });
    const refused = await postTight("tenant_live_3", "usr_b");
    expect(refused.statusCode).toBe(429);
    now += 31_000;
    expect((await postTight("tenant_live_3", "usr_b")).statusCode).toBe(200);
  });

  it("admits runs in the first minute of a UTC day (minute 0), counted in that minute, and the next minute afresh", async () => {
    const quotas = tight.deps.quotas;
    if (!quotas) throw new Error("quotas are on");
    const midnight = Date.UTC(2026, 11, 7);
    const admitAt = async (at: number, runId: string) => {
      now = at;
      const subject = { tenantId: "tenant_midnight", userId: "usr_m", runId };
      const admitted = await quotas.admit(subject, { expiresAtSeconds: Math.floor(at / 1000) + 30 });
      // The runs end (the tenant allows one in flight): only the minute's count is left behind.
      await quotas.releaseRun(subject.tenantId, runId, [at]);
      return admitted;
    };
    try {
      const first = await admitAt(midnight + 15_000, "run_midnight_1");
      expect(first.state.dayStartMs).toBe(midnight);
      await admitAt(midnight + 45_000, "run_midnight_2");
      const seen = await quotas.usage({ tenantId: "tenant_midnight", userId: "usr_m" }, true);
      expect(seen.tenant?.minute.runs).toBe(2);
      await admitAt(midnight + 61_000, "run_midnight_3");
      const next = await quotas.usage({ tenantId: "tenant_midnight", userId: "usr_m" }, true);
      expect(next.tenant?.minute.runs).toBe(1);
    } finally {
      now = Date.now();
    }
  });

  it("fails closed: a quota store that fails is 503 QUOTA_UNAVAILABLE with a fixed sentence, and nothing is written", async () => {
    const name = "failQuotaWrites";
    tight.deps.ddb.middlewareStack.add(
      (next, context) => async (args) => {
        const input = JSON.stringify((args as { input?: unknown }).input);
        if (context.commandName === "UpdateItemCommand" && input.includes("COUNTER#quota")) {
          throw Object.assign(new Error("socket hang up"), { name: "TimeoutError", $metadata: {} });
        }
        return next(args);
      },
      { step: "initialize", name },
    );
    try {
      const refused = await postTight("tenant_live_4", "usr_a");
      expect(refused.statusCode).toBe(503);
      expect(header(refused, "retry-after")).toBe("1");
      expect(body(refused)).toMatchObject({
        code: "QUOTA_UNAVAILABLE",
        detail:
          "The quota could not be checked (the data store did not answer), so nothing was started; retry shortly.",
      });
      expect(refused.body).not.toContain("socket hang up");
    } finally {
      tight.deps.ddb.middlewareStack.remove(name);
    }
    expect(await runsOfStack(tight, "tenant_live_4")).toBe(0);
  });
});

describe("MCP tools/call", () => {
  it("is admitted at the same door: over the user's minute limit it is a retryable tool error RATE_LIMITED, and nothing is audited", async () => {
    now = minute() + 180_000 + 10_000;
    const mcp = await startMcpStack(
      { USER_RUNS_PER_MINUTE: "1", POWERTOOLS_LOG_LEVEL: "SILENT" },
      undefined,
      { quotas: clock },
    );
    try {
      const claims = { sub: "usr_mcp_q", tenant_id: "tenant_mcp_q", scope: "billing:write" };
      const client = await mcp.connect(await mcp.token(claims));
      const args = { amount: "100.00", currency: "GBP", jurisdiction: "GB" };
      const first = await client.callTool({ name: "calculateTax", arguments: args });
      expect(first.isError).toBe(false);
      const second = await client.callTool({ name: "calculateTax", arguments: args });
      expect(second.isError).toBe(true);
      const failure = JSON.parse((second.content as Array<{ text: string }>)[0]?.text ?? "{}");
      expect(failure).toMatchObject({
        status: "fatal_error",
        error: {
          code: "RATE_LIMITED",
          retryable: true,
          details: { retryAfterSeconds: 50, policy: "user-minute", limit: 1 },
        },
      });
      expect(await runsOfStack(mcp.stack, "tenant_mcp_q")).toBe(1);
      // Another user of the tenant is admitted.
      const other = await mcp.connect(await mcp.token({ ...claims, sub: "usr_mcp_r" }));
      expect((await other.callTool({ name: "calculateTax", arguments: args })).isError).toBe(false);
    } finally {
      await mcp.stop();
    }
  });
});

/** Run records of a tenant in a stack's table. */
async function runsOfStack(target: TestStack, tenantId: string): Promise<number> {
  const { QueryCommand } = await import("@aws-sdk/lib-dynamodb");
  const out = await target.deps.ddb.send(
    new QueryCommand({
      TableName: target.config.table.name,
      KeyConditionExpression: "pk = :pk AND begins_with(sk, :run)",
      ExpressionAttributeValues: { ":pk": keys.tenant(tenantId), ":run": "RUN#" },
    }),
  );
  return out.Items?.filter((item) => item.type === "run").length ?? 0;
}
