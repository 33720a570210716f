import type { APIGatewayProxyStructuredResultV2 } from "aws-lambda";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CallerSchema, RunPageSchema } from "../functions/api/contract.js";
import { apiEvent, type EventOptions } from "./fixtures/events.js";
import { startTestStack, type TestStack } from "./support/stack.js";

// GET /v1/runs: the caller's own runs (what the console's runs view lists), a page at a time; GET /v1/me:
// the caller as the routes see it (what the console's navigation follows).

let stack: TestStack;
beforeAll(async () => {
  stack = await startTestStack();
  stack.model.usePlanner();
});
afterAll(async () => {
  await stack?.stop();
});

const USER_A = { sub: "usr_list_a", tenant_id: "tenant_list_01", scope: "billing:read billing:write" };
const USER_B = { ...USER_A, sub: "usr_list_b" };
const OTHER_TENANT = { ...USER_A, tenant_id: "tenant_list_02" };

const call = async (options: EventOptions) =>
  (await stack.invoke(apiEvent("http-api-v2", options) as never)) as APIGatewayProxyStructuredResultV2;

async function startRun(claims: Record<string, string>): Promise<string> {
  const response = await call({ claims, body: { prompt: "Tax on 200 BDT for a client in Bangladesh" } });
  expect(response.statusCode).toBe(200);
  return (JSON.parse(response.body ?? "") as { runId: string }).runId;
}

async function list(claims: Record<string, string>, query = "") {
  const response = await call({ method: "GET", path: `/v1/runs${query}`, claims, body: null });
  return { status: response.statusCode, body: JSON.parse(response.body ?? "") as Record<string, unknown> };
}

describe("GET /v1/runs", () => {
  it("lists the caller's own runs only, not another user's of the tenant nor another tenant's, in pages", async () => {
    const mine = [await startRun(USER_A), await startRun(USER_A), await startRun(USER_A)];
    const theirs = await startRun(USER_B);
    const elsewhere = await startRun(OTHER_TENANT);

    const all = await list(USER_A);
    expect(all.status).toBe(200);
    const page = RunPageSchema.parse(all.body);
    expect(page.items.map((run) => run.runId).sort()).toEqual([...mine].sort());
    expect(page.items.every((run) => run.status === "completed" && run.cycles === 2)).toBe(true);
    expect(page.nextCursor).toBeNull();
    expect(JSON.stringify(page)).not.toContain(theirs);
    expect(JSON.stringify(page)).not.toContain(elsewhere);

    const first = RunPageSchema.parse((await list(USER_A, "?limit=2")).body);
    expect(first.items).toHaveLength(2);
    expect(first.nextCursor).toEqual(expect.any(String));
    const second = RunPageSchema.parse(
      (await list(USER_A, `?limit=2&cursor=${encodeURIComponent(first.nextCursor as string)}`)).body,
    );
    expect([...first.items, ...second.items].map((run) => run.runId).sort()).toEqual([...mine].sort());
    expect(second.nextCursor).toBeNull();

    expect(RunPageSchema.parse((await list(USER_B)).body).items.map((run) => run.runId)).toEqual([theirs]);
    // Another tenant's cursor is refused, nothing read.
    const foreign = await list(OTHER_TENANT, `?cursor=${encodeURIComponent(first.nextCursor as string)}`);
    expect(foreign.status).toBe(400);
    expect(foreign.body.code).toBe("INVALID_REQUEST");
    expect((await list(USER_A, "?limit=0")).status).toBe(400);
  });
});

describe("GET /v1/me", () => {
  it("answers the caller as the routes read it: a claim PERMISSION_CLAIMS does not name grants nothing", async () => {
    const claims = { ...USER_A, roles: "billing:approve policy:admin" };
    const response = await call({ method: "GET", path: "/v1/me", claims, body: null });
    expect(response.statusCode).toBe(200);
    expect(CallerSchema.parse(JSON.parse(response.body ?? ""))).toEqual({
      userId: "usr_list_a",
      tenantId: "tenant_list_01",
      permissions: ["billing:read", "billing:write"],
    });
    const refused = await call({ method: "GET", path: "/v1/me", claims: null, body: null });
    expect(refused.statusCode).toBe(401);
  });
});
