/**
 * Durable runs and quotas (docs/quotas.md "Durable runs wait", "Reservations"): a durable run whose next
 * model call its daily token limit cannot cover pauses as `awaiting_quota` (a durable wait) and completes
 * once `PUT /v1/limits` raises the limit; a model step retried after a crash reserves once. The real
 * handler, the durable runner on the SDK's local runner, DynamoDB Local, the local model server.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { LimitsResponseSchema, QuotaUsageSchema } from "../functions/api/contract/quotas.js";
import { eventForRoute } from "../local/durable-runner.js";
import { json, pollUntil } from "./support/approvals.js";
import { BUDGET_PROMPT, budgetWaitScript, putLimitsEvent, taxCall } from "./support/budget-wait.js";
import { type DurableStack, startAsyncRun, startDurableStack } from "./support/durable.js";
import { runEvent } from "./support/idempotency.js";

let stack: DurableStack;
beforeAll(async () => {
  stack = await startDurableStack({ USER_TOKENS_PER_DAY: "3500" });
});
afterAll(async () => {
  await stack?.stop();
});
beforeEach(() => {
  stack.faults.afterStep = undefined;
});

/** Starts a durable run of `userId` in `tenantId`; its record as answered. */
const startAsync = (tenantId: string, userId: string) =>
  startAsyncRun(stack, tenantId, BUDGET_PROMPT, userId);

/** `GET /v1/usage` as `userId` of `tenantId`. */
async function usageOf(tenantId: string, userId: string) {
  const event = eventForRoute(runEvent({ tenantId, userId, scope: "billing:read" }), "GET", "/v1/usage");
  const response = await stack.invoke(event);
  expect(response.statusCode).toBe(200);
  return QuotaUsageSchema.parse(json(response));
}

describe("a durable run at its token budget", () => {
  it("pauses as awaiting_quota instead of failing, and completes once PUT /v1/limits raises the limit", async () => {
    const tenantId = "tenant_qwait";
    const userId = "usr_idem"; // runPathEvent reads as usr_idem: runs are per user
    stack.model.script(budgetWaitScript());
    const requestsBefore = stack.model.requests.length;
    const started = await startAsync(tenantId, userId);
    const paused = await pollUntil(stack, started.runId, tenantId, ["running"]);
    expect(paused.status).toBe("awaiting_quota");
    // Two calls made (2385 tokens); the third's prompt alone leaves fewer than MIN_COMPLETION_TOKENS.
    expect(stack.model.requests.length - requestsBefore).toBe(2);
    expect((await usageOf(tenantId, userId)).user.day.tokens).toEqual({
      used: 2_385,
      reserved: 0,
      limit: 3_500,
    });

    const changed = await stack.invoke(putLimitsEvent(tenantId, { user: { tokensPerDay: 100_000 } }));
    expect(changed.statusCode, changed.body).toBe(200);
    const view = LimitsResponseSchema.parse(json(changed));
    expect(view.limits.user.tokensPerDay).toBe(100_000);
    expect(view.tenantSet.user).toEqual({ tokensPerDay: 100_000 });
    expect(view.updatedBy).toBe("usr_admin");

    const done = await pollUntil(stack, started.runId, tenantId, ["running", "awaiting_quota"]);
    expect(done.status).toBe("completed");
    expect(done.answer).toBe("The tax is 20.00 GBP.");
    expect(stack.model.requests.length - requestsBefore).toBe(3);
    expect((await usageOf(tenantId, userId)).user.day.tokens).toEqual({
      used: 2_385 + 2_112,
      reserved: 0,
      limit: 100_000,
    });
  });

  it("PUT /v1/limits needs limits:admin and a valid body, and then stores nothing", async () => {
    const tenantId = "tenant_qlimits";
    const put = eventForRoute(runEvent({ tenantId, scope: "billing:write" }), "PUT", "/v1/limits");
    put.body = JSON.stringify({ tenant: { tokensPerDay: 10 } });
    put.headers = { ...put.headers, "content-type": "application/json" };
    const forbidden = await stack.invoke(put);
    expect(forbidden.statusCode).toBe(403);
    expect(json(forbidden)).toMatchObject({ code: "FORBIDDEN" });

    const admin = eventForRoute(runEvent({ tenantId, scope: "limits:admin" }), "PUT", "/v1/limits");
    admin.headers = { ...admin.headers, "content-type": "application/json" };
    admin.body = JSON.stringify({ tenant: { tokensPerDay: -5 } });
    const invalid = await stack.invoke(admin);
    expect(invalid.statusCode).toBe(400);
    expect(json(invalid)).toMatchObject({ code: "INVALID_REQUEST" });
    const usage = await usageOf(tenantId, "usr_idem");
    expect(usage.tenant?.day.tokens.limit).toBeNull();
  });
});

describe("a retried durable model step", () => {
  it("reserves once: the day's settled tokens are the run's own, nothing stays reserved", async () => {
    const tenantId = "tenant_qretry";
    const userId = "usr_idem";
    stack.model.script([
      { toolCalls: [taxCall("c1")], usage: { prompt_tokens: 900, completion_tokens: 30 } },
      { toolCalls: [taxCall("c1")], usage: { prompt_tokens: 901, completion_tokens: 31 } },
      { content: "The tax is 20.00 GBP.", usage: { prompt_tokens: 1_000, completion_tokens: 10 } },
    ]);
    let crashed = false;
    stack.faults.afterStep = (name) => {
      if (name === "cycle-1:model" && !crashed) {
        crashed = true;
        throw new Error("crash after the model call, before its checkpoint");
      }
    };
    const started = await startAsync(tenantId, userId);
    const done = await pollUntil(stack, started.runId, tenantId, ["running"]);
    expect(crashed).toBe(true);
    expect(done.status).toBe("completed");
    // The retried step's call (932 tokens) and the answer's (1010): the crashed attempt's hold was not kept.
    expect(done.usage.totalTokens).toBe(932 + 1_010);
    expect((await usageOf(tenantId, userId)).user.day.tokens).toEqual({
      used: 932 + 1_010,
      reserved: 0,
      limit: 3_500,
    });
  });
});
