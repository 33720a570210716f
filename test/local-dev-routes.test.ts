/**
 * The dev server's route table (local/dev-server.ts) against the stack's (infra/routes.ts ROUTES): a
 * request the HTTP API declares no route for never reaches the function on AWS. API Gateway answers it
 * itself, 404 `{"message":"Not Found"}` as application/json, before any authorizer, whatever the token;
 * a declared route still reaches the function, which answers its own problem+json. Through the real dev
 * server and the real handler over DynamoDB Local (test/support/mcp.ts).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { GatewayErrorSchema, ProblemSchema } from "../functions/api/contract.js";
import { ROUTES } from "../infra/routes.js";
import { type McpStack, startMcpStack } from "./support/mcp.js";

let stack: McpStack;
beforeAll(async () => {
  stack = await startMcpStack();
}, 120_000);
afterAll(async () => stack?.stop());

const CALLER = { sub: "usr_routes", tenant_id: "tenant_dev_routes", scope: "billing:read policy:admin" };

/** Asserts the gateway's own 404: its JSON body and media type, and no authorizer's challenge. */
async function expectGatewayNotFound(response: Response, label: string): Promise<void> {
  expect(response.status, label).toBe(404);
  expect(response.headers.get("content-type"), label).toBe("application/json");
  expect(response.headers.get("www-authenticate"), label).toBeNull();
  expect(GatewayErrorSchema.parse(await response.json()), label).toEqual({ message: "Not Found" });
}

/** A request with `method` to `path`: with the caller's token, a forged one, or none. */
async function send(method: string, path: string, token: "valid" | "forged" | "none"): Promise<Response> {
  const body = ["POST", "PUT", "PATCH"].includes(method) ? "{}" : undefined;
  if (token === "valid") return stack.api(path, CALLER, { method, ...(body ? { body } : {}) });
  return fetch(`${stack.server.url}${path}`, {
    method,
    headers: {
      "content-type": "application/json",
      ...(token === "forged" ? { authorization: "Bearer not.a.token" } : {}),
    },
    ...(body ? { body } : {}),
  });
}

/** A concrete path of a route's template: each `{param}` one segment. */
const concrete = (path: string) => path.replace(/\{[^}]+\}/g, "x_1");

describe("npm run dev's gateway routes as the stack does", () => {
  it("a path the stack declares no route for is the gateway's 404, before any token check", async () => {
    for (const path of ["/", "/nope", "/v1", "/v1/nope", "/v1/runs/x_1/unknown", "/console/assets/a/b.js"]) {
      for (const token of ["valid", "forged", "none"] as const) {
        await expectGatewayNotFound(await send("GET", path, token), `GET ${path} (${token} token)`);
      }
    }
  });

  it("a declared path with a method it has no route for is the gateway's 404 (no 401, no 405)", async () => {
    const methods = new Map<string, Set<string>>();
    for (const route of ROUTES)
      methods.set(route.path, (methods.get(route.path) ?? new Set()).add(route.method));
    let checked = 0;
    for (const [path, declared] of methods) {
      for (const method of ["GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]) {
        if (declared.has(method)) continue;
        for (const token of ["valid", "none"] as const) {
          const label = `${method} ${path} (${token} token)`;
          await expectGatewayNotFound(await send(method, concrete(path), token), label);
          checked++;
        }
      }
    }
    expect(checked).toBeGreaterThan(100);
  });

  it("a declared route still reaches the function: its own answers, problem+json included", async () => {
    const invoices = await send("GET", "/v1/invoices", "valid");
    expect(invoices.status).toBe(200);
    expect(((await invoices.json()) as { items: unknown[] }).items).toEqual([]);
    // GET /v1/runs/{runId} is declared: the 404 of a run that does not exist is the function's.
    const run = await send("GET", "/v1/runs/run_missing", "valid");
    expect(run.status).toBe(404);
    expect(run.headers.get("content-type")).toBe("application/problem+json");
    expect(ProblemSchema.parse(await run.json()).code).toBe("NOT_FOUND");
    // A declared route behind the authorizer still asks for a token.
    const anonymous = await send("GET", "/v1/invoices", "none");
    expect(anonymous.status).toBe(401);
    expect(await anonymous.json()).toEqual({ message: "Unauthorized" });
    expect((await send("GET", "/healthz", "none")).status).toBe(200);
  });
});
