import type { APIGatewayProxyStructuredResultV2 } from "aws-lambda";
import { describe, expect, it } from "vitest";
import { ProblemSchema } from "../functions/api/contract.js";
import { apiEvent } from "./fixtures/events.js";
import { testStackForFile } from "./support/stack.js";

// A page size (and an event sequence) is one whole number in plain digits: docs/http-api.md. Each paged
// route refuses anything else with 400 INVALID_REQUEST naming the parameter, before reading anything.

const stack = testStackForFile();

const CLAIMS = {
  sub: "usr_query_01",
  tenant_id: "tenant_query_01",
  scope: "billing:read billing:write billing:approve policy:admin",
};

const PAGED = [
  "/v1/runs",
  "/v1/invoices",
  "/v1/approvals",
  "/v1/policies/versions",
  "/v1/policies/shadow-decisions",
];

async function get(pathAndQuery: string) {
  const response = (await stack.invoke(
    apiEvent("http-api-v2", { method: "GET", path: pathAndQuery, claims: CLAIMS, body: null }) as never,
  )) as APIGatewayProxyStructuredResultV2;
  return { status: response.statusCode, body: JSON.parse(response.body ?? "null") as unknown };
}

const RANGE = "limit must be one whole number from 1 to 100, in digits";

describe("the page size of every paged route", () => {
  it.each(PAGED)("%s: limit given twice is 400 saying so, not NaN", async (path) => {
    const answer = await get(`${path}?limit=1&limit=2`);
    expect(answer.status).toBe(400);
    const problem = ProblemSchema.parse(answer.body);
    expect(problem.code).toBe("INVALID_REQUEST");
    expect(problem.errors).toEqual([
      { in: "query", path: "limit", message: 'limit was given 2 times ("1", "2"); send it once' },
    ]);
    expect(JSON.stringify(problem)).not.toContain("NaN");
  });

  it.each(PAGED)("%s: a limit not in plain digits or out of range is 400 naming it", async (path) => {
    for (const [sent, shown] of [
      ["1e1", '"1e1"'],
      ["%201", '" 1"'],
      ["%2B1", '"+1"'],
      ["+1", '" 1"'], // a `+` in a query is a space
      ["1.0", '"1.0"'],
      ["0x1", '"0x1"'],
      ["", '""'],
      ["0", "0"],
      ["101", "101"],
    ]) {
      const answer = await get(`${path}?limit=${sent}`);
      expect(answer.status, sent).toBe(400);
      expect(ProblemSchema.parse(answer.body), sent).toMatchObject({
        code: "INVALID_REQUEST",
        errors: [{ in: "query", path: "limit", message: `${RANGE} (got ${shown})` }],
      });
    }
    expect((await get(`${path}?limit=007`)).status).toBe(200);
  });
});

describe("the event sequence of GET /v1/runs/{runId}/events", () => {
  it("after given twice or not in plain digits is 400 naming it", async () => {
    const twice = await get("/v1/runs/run_query_x/events?after=1&after=2");
    expect(twice.status).toBe(400);
    expect(ProblemSchema.parse(twice.body).errors?.[0]?.message).toMatch(/^after was given 2 times/);
    const exponent = await get("/v1/runs/run_query_x/events?after=1e1");
    expect(exponent.status).toBe(400);
    expect(ProblemSchema.parse(exponent.body).errors).toEqual([
      {
        in: "query",
        path: "after",
        message: `after must be one whole number from 0 to ${Number.MAX_SAFE_INTEGER}, in digits (got "1e1")`,
      },
    ]);
  });
});

describe("a query parameter given more than once", () => {
  const once = (name: string, values: string[]) =>
    `${name} was given ${values.length} times (${values.map((value) => JSON.stringify(value)).join(", ")}); send it once`;

  it.each([
    ["/v1/runs", "status", ["failed", "completed"]],
    ["/v1/runs", "scope", ["own", "tenant"]],
    ["/v1/runs", "userId", ["usr_a", "usr_b"]],
    ["/v1/runs", "runId", ["run_a", "run_b", "run_c"]],
    ["/v1/runs", "from", ["2026-01-01T00:00:00Z", "2026-02-01T00:00:00Z"]],
    ["/v1/approvals", "status", ["pending", "decided"]],
    ...PAGED.map((path) => [path, "cursor", ["a", "b"]] as const),
  ] as const)("%s?%s twice is 400 saying so, not a type error", async (path, name, values) => {
    const answer = await get(
      `${path}?${values.map((value) => `${name}=${encodeURIComponent(value)}`).join("&")}`,
    );
    expect(answer.status).toBe(400);
    const problem = ProblemSchema.parse(answer.body);
    expect(problem.code).toBe("INVALID_REQUEST");
    expect(problem.errors).toEqual([{ in: "query", path: name, message: once(name, [...values]) }]);
  });

  it("another parameter's own issue is still named beside it", async () => {
    const answer = await get("/v1/runs?status=failed&status=completed&limit=0");
    expect(ProblemSchema.parse(answer.body).errors).toEqual([
      { in: "query", path: "status", message: once("status", ["failed", "completed"]) },
      { in: "query", path: "limit", message: `${RANGE} (got 0)` },
    ]);
  });
});
