/**
 * A cost limit is shown in one form on every surface (docs/quotas.md "Cost"): six decimal places, as
 * every cost is (the `Cost` schema's amount), whatever form it was set in, and a limit smaller than a
 * cent keeps its micro-units. PUT /v1/limits' answer, GET /v1/limits, GET /v1/usage, `npm run tenant --
 * limits show` and a run a cost limit refused: the real handler over a table on the suite's DynamoDB
 * Local, the local model server over HTTP.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LimitsResponseSchema, QuotaUsageSchema } from "../functions/api/contract/quotas.js";
import { RunResponseSchema } from "../functions/api/contract.js";
import { eventForRoute } from "../local/durable-runner.js";
import { parseLimitsCommand, runLimitsCommand } from "../local/tenant.js";
import { json } from "./support/approvals.js";
import { runEvent } from "./support/idempotency.js";
import { startTestStack, type TestStack } from "./support/stack.js";

const PRICES = JSON.stringify({
  "gpt-4o-mini": { inputPerMillion: "0.15", outputPerMillion: "0.60", currency: "USD" },
});

let stack: TestStack;
beforeAll(async () => {
  stack = await startTestStack({
    MODEL_PRICES: PRICES,
    USER_COST_PER_DAY: "5.00",
    POWERTOOLS_LOG_LEVEL: "SILENT",
  });
});
afterAll(async () => {
  await stack?.stop();
});

/** `method path` as a caller of `tenantId` holding `scope`, with `body` as JSON: the status and body. */
async function call(tenantId: string, scope: string, method: string, path: string, body?: unknown) {
  const event = eventForRoute(runEvent({ tenantId, scope }), method, path);
  if (body !== undefined) {
    event.headers = { ...event.headers, "content-type": "application/json" };
    event.body = JSON.stringify(body);
  }
  const response = await stack.invoke(event);
  return { status: response.statusCode, body: json(response) };
}

/** GET /v1/limits as a billing reader of `tenantId`. */
async function limitsOf(tenantId: string) {
  const read = await call(tenantId, "billing:read", "GET", "/v1/limits");
  expect(read.status).toBe(200);
  return LimitsResponseSchema.parse(read.body);
}

/** GET /v1/usage as a billing reader of `tenantId` (the tenant's too). */
async function usageOf(tenantId: string) {
  const read = await call(tenantId, "billing:read", "GET", "/v1/usage");
  expect(read.status).toBe(200);
  return QuotaUsageSchema.parse(read.body);
}

describe("a cost limit on every surface", () => {
  it("the deploy's default: GET /v1/limits and GET /v1/usage show USER_COST_PER_DAY 5.00 alike, as 5.000000", async () => {
    const tenantId = "tenant_shown_default";
    expect((await limitsOf(tenantId)).limits.user.costPerDay).toBe("5.000000");
    expect((await usageOf(tenantId)).user.day.cost.limit).toBe("5.000000");
  });

  it("a tenant's own: PUT's answer, GET /v1/limits, GET /v1/usage, npm run tenant and the refusal show one form", async () => {
    const tenantId = "tenant_shown_own";
    // 20 micro-units a day for the tenant: not even a call's prompt and its fewest completion tokens.
    const change = { tenant: { costPerDay: "0.00002" }, user: { costPerDay: "2.5" } };
    const put = await call(tenantId, "limits:admin", "PUT", "/v1/limits", change);
    expect(put.status).toBe(200);
    const shown = {
      limits: { tenant: { costPerDay: "0.000020" }, user: { costPerDay: "2.500000" } },
      tenantSet: { tenant: { costPerDay: "0.000020" }, user: { costPerDay: "2.500000" } },
    };
    expect(LimitsResponseSchema.parse(put.body), "PUT /v1/limits").toMatchObject(shown);
    expect(await limitsOf(tenantId), "GET /v1/limits").toMatchObject(shown);

    const usage = await usageOf(tenantId);
    expect(usage.user.day.cost.limit, "GET /v1/usage, the user's").toBe("2.500000");
    expect(usage.tenant?.day.cost.limit, "GET /v1/usage, the tenant's").toBe("0.000020");

    const where = ["--endpoint", stack.config.table.endpoint as string, "--table", stack.config.table.name];
    const command = parseLimitsCommand(["limits", tenantId, "show", ...where], {});
    expect(await runLimitsCommand(command, {}), "npm run tenant -- limits show").toMatchObject({
      tenantSet: shown.tenantSet,
    });

    const run = await stack.invoke(runEvent({ tenantId, userId: "usr_shown", prompt: "What is 2 + 2?" }));
    const outcome = RunResponseSchema.parse(json(run));
    expect(outcome.status).toBe("quota_exceeded");
    expect(outcome.details.quota, "the refusal in the run's details").toMatchObject({
      limit: "tenant.costPerDay",
      quota: "0.000020",
      unit: "USD",
    });
    expect(outcome.details.quota?.message).toContain("(0.000020 USD)");
  });
});
