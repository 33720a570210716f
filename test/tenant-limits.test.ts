/**
 * `npm run tenant -- limits <tenant> …` (local/tenant.ts, docs/quotas.md "Per-tenant overrides"): the real
 * command, spawned as npm runs it, writes the tenant's own limits in a table on the suite's DynamoDB
 * Local through the same use case as PUT /v1/limits; the real handler over that table then sees them in
 * GET /v1/usage and PUT /v1/limits. Bad input names the flag and the bound and writes nothing. With a
 * dev server on the table (waking its runs) or none: test/tenant-limits-dev.test.ts.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LimitsResponseSchema, QuotaUsageSchema } from "../functions/api/contract/quotas.js";
import { eventForRoute } from "../local/durable-runner.js";
import { parseLimitsCommand, runLimitsCommand, UsageError } from "../local/tenant.js";
import { QuotaLimitStore } from "../shared/store/quota-limits.js";
import { json } from "./support/approvals.js";
import { runEvent } from "./support/idempotency.js";
import { runScript } from "./support/scripts.js";
import { startTestStack, type TestStack } from "./support/stack.js";

const TENANT = "tenant_ops";
const PRICES = JSON.stringify({
  "gpt-4o-mini": { inputPerMillion: "0.15", outputPerMillion: "0.60", currency: "USD" },
});

let stack: TestStack;
let store: QuotaLimitStore;
beforeAll(async () => {
  stack = await startTestStack({ MODEL_PRICES: PRICES });
  store = new QuotaLimitStore(stack.deps.ddb, stack.config.table.name);
});
afterAll(async () => {
  await stack?.stop();
});

/** The command's flags that point it at the test's table. */
const where = () => ["--endpoint", stack.config.table.endpoint as string, "--table", stack.config.table.name];

/** `npm run tenant -- limits <tenant> …` as a child process, the shell's environment plus `env`. */
const tenantCommand = (args: string[], env: Record<string, string> = {}) =>
  runScript("tsx", ["local/tenant.ts", "limits", ...args, ...where()], env);

/** `GET /v1/usage` as `userId` of `tenantId`, with billing:read (the tenant's too). */
async function usageOf(tenantId: string) {
  const event = eventForRoute(runEvent({ tenantId, scope: "billing:read" }), "GET", "/v1/usage");
  const response = await stack.invoke(event);
  expect(response.statusCode).toBe(200);
  return QuotaUsageSchema.parse(json(response));
}

describe("npm run tenant -- limits", () => {
  it("stores the limits PUT /v1/limits and GET /v1/usage then see, and clears them back to the deploy's", async () => {
    const set = await tenantCommand(
      [
        TENANT,
        "--tenant-tokens-per-day",
        "50000",
        "--user-runs-per-minute",
        "3",
        "--user-cost-per-day",
        "2.50",
      ],
      { MODEL_PRICES: PRICES },
    );
    expect(set.code, set.stderr).toBe(0);
    const printed = JSON.parse(set.stdout) as Record<string, unknown>;
    expect(printed).toMatchObject({
      tenantId: TENANT,
      // Stored as set, printed as every cost limit is shown (six places: test/quota-cost-shown.test.ts).
      tenantSet: { tenant: { tokensPerDay: 50_000 }, user: { runsPerMinute: 3, costPerDay: "2.500000" } },
    });
    expect(String(printed.updatedBy)).toMatch(/^operator:/);
    const stored = await store.get(TENANT);
    expect(stored.limits).toEqual({
      tenantTokensPerDay: 50_000,
      userRunsPerMinute: 3,
      userCostPerDay: "2.50",
    });

    const usage = await usageOf(TENANT);
    expect(usage.tenant?.day.tokens.limit).toBe(50_000);
    expect(usage.user.minute.limit).toBe(3);
    expect(usage.user.day.cost.limit).toBe("2.500000");

    // An empty PUT changes nothing and answers what the operator set.
    const put = eventForRoute(runEvent({ tenantId: TENANT, scope: "limits:admin" }), "PUT", "/v1/limits");
    put.headers = { ...put.headers, "content-type": "application/json" };
    put.body = "{}";
    const view = LimitsResponseSchema.parse(json(await stack.invoke(put)));
    expect(view.tenantSet).toEqual({
      tenant: { tokensPerDay: 50_000 },
      user: { runsPerMinute: 3, costPerDay: "2.500000" },
    });
    expect(view.limits.tenant.tokensPerDay).toBe(50_000);

    const cleared = await tenantCommand([
      TENANT,
      "--clear",
      "tenant.tokensPerDay",
      "--user-runs-per-minute",
      "null",
    ]);
    expect(cleared.code, cleared.stderr).toBe(0);
    expect((await store.get(TENANT)).limits).toEqual({ userCostPerDay: "2.50" });

    const shown = await runLimitsCommand(parseLimitsCommand(["limits", TENANT, "show", ...where()], {}), {});
    expect(shown.tenantSet).toEqual({ tenant: {}, user: { costPerDay: "2.500000" } });
  });

  it("refuses a limit out of bounds, naming the flag and the bound, and writes nothing", async () => {
    const tenantId = "tenant_ops_bad";
    const bad = await tenantCommand([
      tenantId,
      "--tenant-concurrent-runs",
      "100001",
      "--user-tokens-per-day",
      "0",
    ]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain(
      '--tenant-concurrent-runs "100001": Too big: expected number to be <=100000',
    );
    expect(bad.stderr).toContain('--user-tokens-per-day "0": Too small: expected number to be >0');
    // Refused as PUT /v1/limits refuses it: the code and the sentence, exit 2 (the input), no class name.
    const noPrice = await tenantCommand([tenantId, "--tenant-cost-per-day", "10"]);
    expect(noPrice.code).toBe(2);
    expect(noPrice.stderr).toBe(
      "tenant: INVALID_REQUEST: The model gpt-4o-mini has no price in MODEL_PRICES, so a cost limit cannot be checked: give it one there (docs/quotas.md) or set token limits.\n",
    );
    expect(await store.get(tenantId)).toEqual({ limits: {}, updatedBy: null, updatedAt: null });
    expect((await usageOf(tenantId)).tenant?.day.tokens.limit).toBeNull();
  });

  it("names the table and the endpoint when the local table does not exist: one line, exit 1, nothing else", async () => {
    const endpoint = stack.config.table.endpoint as string;
    for (const change of [["--user-tokens-per-day", "5"], ["show"]]) {
      const missing = await runScript(
        "tsx",
        ["local/tenant.ts", "limits", TENANT, ...change, "--endpoint", endpoint, "--table", "no_such_table"],
        {},
      );
      expect(missing.code).toBe(1);
      expect(missing.stdout).toBe("");
      expect(missing.stderr).toBe(
        `tenant: there is no table no_such_table at ${endpoint}: give the table that DynamoDB holds (--table or TABLE_NAME; npm run dev's is boundloop unless its TABLE_NAME says otherwise).\n`,
      );
    }
  });

  it("GET /v1/limits answers what PUT answers, for limits:admin and billing:read, and `show` prints the same", async () => {
    const tenantId = "tenant_ops_read";
    const route = (scope: string, method: "GET" | "PUT") =>
      eventForRoute(runEvent({ tenantId, userId: "usr_admin", scope }), method, "/v1/limits");
    const put = route("limits:admin", "PUT");
    put.headers = { ...put.headers, "content-type": "application/json" };
    put.body = JSON.stringify({ tenant: { concurrentRuns: 4 }, user: { costPerDay: "1.25" } });
    const putResponse = await stack.invoke(put);
    expect(putResponse.statusCode).toBe(200);
    const written = LimitsResponseSchema.parse(json(putResponse));

    for (const scope of ["limits:admin", "billing:read"]) {
      const read = await stack.invoke(route(scope, "GET"));
      expect(read.statusCode, scope).toBe(200);
      const view = LimitsResponseSchema.parse(json(read));
      expect(view, scope).toEqual(written);
      expect(view).toEqual({
        limits: {
          tenant: { runsPerMinute: null, concurrentRuns: 4, tokensPerDay: null, costPerDay: null },
          user: { runsPerMinute: null, tokensPerDay: null, costPerDay: "1.250000" },
        },
        tenantSet: { tenant: { concurrentRuns: 4 }, user: { costPerDay: "1.250000" } },
        updatedBy: "usr_admin",
        updatedAt: written.updatedAt,
      });
    }
    const forbidden = await stack.invoke(route("billing:write", "GET"));
    expect(forbidden.statusCode).toBe(403);
    expect(json(forbidden)).toMatchObject({ code: "FORBIDDEN", requiredPermission: "limits:admin" });

    // A tenant that set nothing: the deploy's limits, nothing set, nobody, never; reading writes nothing.
    const fresh = eventForRoute(
      runEvent({ tenantId: "tenant_ops_unset", scope: "limits:admin" }),
      "GET",
      "/v1/limits",
    );
    expect(LimitsResponseSchema.parse(json(await stack.invoke(fresh)))).toEqual({
      limits: {
        tenant: { runsPerMinute: null, concurrentRuns: null, tokensPerDay: null, costPerDay: null },
        user: { runsPerMinute: null, tokensPerDay: null, costPerDay: null },
      },
      tenantSet: { tenant: {}, user: {} },
      updatedBy: null,
      updatedAt: null,
    });
    expect(await store.get("tenant_ops_unset")).toEqual({ limits: {}, updatedBy: null, updatedAt: null });

    const shown = await tenantCommand([tenantId, "show"], { MODEL_PRICES: PRICES });
    expect(shown.code, shown.stderr).toBe(0);
    expect(JSON.parse(shown.stdout)).toEqual({ tenantId, ...written });
  });

  it("parses flags into the PUT /v1/limits body and rejects what it cannot mean", () => {
    const parse = (...args: string[]) => parseLimitsCommand(["limits", TENANT, ...args], {});
    expect(() => parse("--tenant-runs-per-minute", "60", "--clear", "all")).toThrow("choose one");
    expect(parse("--clear", "all").change).toEqual({
      tenant: { runsPerMinute: null, concurrentRuns: null, tokensPerDay: null, costPerDay: null },
      user: { runsPerMinute: null, tokensPerDay: null, costPerDay: null },
    });
    expect(parse("--tenant-cost-per-day", "null", "--user-tokens-per-day", "7").change).toEqual({
      tenant: { costPerDay: null },
      user: { tokensPerDay: 7 },
    });
    expect(parse("show", "--stack-name", "Prod").target).toEqual({ stackName: "Prod", table: undefined });
    expect(
      parseLimitsCommand(["limits", TENANT, "show"], { DYNAMODB_ENDPOINT: "http://127.0.0.1:8000" }).target,
    ).toEqual({
      endpoint: "http://127.0.0.1:8000",
      table: "boundloop",
    });
    expect(() => parse()).toThrow(UsageError);
    expect(() => parse("--user-runs-per-minute", "abc")).toThrow(
      '--user-runs-per-minute "abc": Invalid input: expected number, received string',
    );
    expect(() => parse("--user-runs-per-minute", "1.5")).toThrow(
      '--user-runs-per-minute "1.5": Invalid input: expected int, received number',
    );
    expect(() => parse("--user-tokens-per-day", "5", "--clear", "user-tokens-per-day")).toThrow("choose one");
    expect(() => parse("show", "--user-tokens-per-day", "5")).toThrow("show changes nothing");
    expect(() => parseLimitsCommand(["limits", "bad tenant"], {})).toThrow("<tenant> must be");
  });
});
