/**
 * A known path with a method it does not serve: 405 METHOD_NOT_ALLOWED as
 * problem+json with `Allow`, documented in /openapi.json; an unknown path stays 404. Through the real
 * Lambda handler.
 */
import { validate } from "@readme/openapi-parser";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ProblemSchema } from "../functions/api/contract.js";
import { apiEvent } from "./fixtures/events.js";
import { startTestStack, type TestStack } from "./support/stack.js";

let stack: TestStack;
beforeAll(async () => {
  stack = await startTestStack();
});
afterAll(async () => {
  await stack?.stop();
});

const call = (method: string, path: string, options: { claims?: null } = {}) =>
  stack.invoke(apiEvent("http-api-v2", { method, path, body: null, ...options }) as never);

describe("a known path with another method", () => {
  it("is 405 problem+json METHOD_NOT_ALLOWED with Allow naming the methods the path serves", async () => {
    for (const [method, path, allow] of [
      ["DELETE", "/v1/runs/run_3130b922-0000-4000-8000-000000000000", "GET"],
      ["PUT", "/v1/runs", "GET, POST"],
      ["GET", "/v1/runs/run_x/cancel", "POST"],
      ["DELETE", "/v1/invoices/inv_000000000000000000000000", "GET"],
      ["DELETE", "/mcp", "POST"],
      ["POST", "/openapi.json", "GET"],
    ] as const) {
      const response = await call(method, path);
      const what = `${method} ${path}`;
      expect(response.statusCode, what).toBe(405);
      expect(response.headers?.allow, what).toBe(allow);
      expect(response.headers?.["content-type"], what).toBe("application/problem+json");
      const problem = ProblemSchema.parse(JSON.parse(response.body ?? ""));
      expect(problem, what).toMatchObject({
        status: 405,
        code: "METHOD_NOT_ALLOWED",
        title: "Method not allowed",
        detail: `${method} is not served at ${path}; it serves ${allow}.`,
      });
    }
  });

  it("checks the caller first, as every /v1 route does (401 without a token); an unknown path stays 404", async () => {
    const anonymous = await call("DELETE", "/v1/runs/run_x", { claims: null });
    expect(anonymous.statusCode).toBe(401);
    const unknown = await call("GET", "/v1/nothing-here");
    expect(unknown.statusCode).toBe(404);
    expect(JSON.parse(unknown.body ?? "")).toMatchObject({ code: "NOT_FOUND", detail: "No such route." });
  });

  it("is in /openapi.json: every operation lists the 405, one problem+json response with Allow", async () => {
    const response = await call("GET", "/openapi.json", { claims: null });
    const document = JSON.parse(response.body ?? "") as {
      paths: Record<string, Record<string, { responses: Record<string, { $ref?: string }> }>>;
      components: {
        responses: Record<string, { headers: Record<string, unknown>; content: Record<string, unknown> }>;
      };
    };
    const result = await validate(structuredClone(document) as never);
    expect(result.valid, JSON.stringify(result)).toBe(true);
    for (const [path, item] of Object.entries(document.paths)) {
      for (const [method, operation] of Object.entries(item)) {
        const expected =
          path === "/mcp" && method === "get" ? undefined : "#/components/responses/MethodNotAllowed";
        expect(operation.responses["405"]?.$ref, `${method} ${path}`).toBe(expected);
      }
    }
    // GET /mcp keeps its own 405 (the transport's JSON-RPC answer).
    expect(document.paths["/mcp"]?.get?.responses["405"]).toBeDefined();
    const shared = document.components.responses.MethodNotAllowed;
    expect(Object.keys(shared?.headers ?? {})).toEqual(["Allow"]);
    expect(Object.keys(shared?.content ?? {})).toEqual(["application/problem+json"]);
  });
});
