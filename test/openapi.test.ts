import { validate } from "@readme/openapi-parser";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { apiEvent } from "./fixtures/events.js";
import { startTestStack, type TestStack } from "./support/stack.js";

let stack: TestStack;
beforeAll(async () => {
  stack = await startTestStack();
});
afterAll(async () => {
  await stack?.stop();
});

const call = (event: Record<string, unknown>) => stack.invoke(event as never);

describe("GET /openapi.json", () => {
  it("serves a valid OpenAPI 3.1 document, without auth, listing every route", async () => {
    const response = await call(
      apiEvent("http-api-v2", { method: "GET", path: "/openapi.json", claims: null }),
    );
    expect(response.statusCode).toBe(200);
    expect(response.headers?.["content-type"]).toMatch(/^application\/json/);
    const document = JSON.parse(response.body ?? "") as {
      openapi: string;
      paths: Record<string, Record<string, { responses: Record<string, unknown>; security?: unknown[] }>>;
      components: { schemas: Record<string, unknown>; securitySchemes: Record<string, unknown> };
    };
    expect(document.openapi).toBe("3.1.0");

    const result = await validate(structuredClone(document) as never);
    if (!result.valid) throw new Error(JSON.stringify(result.errors, null, 2));
    expect(result.specification).toBe("OpenAPI");
    // The validator does reject a broken document (a response without its required description).
    const broken = structuredClone(document) as {
      paths: Record<string, Record<string, { responses: Record<string, Record<string, unknown>> }>>;
    };
    delete broken.paths["/v1/runs"]?.post?.responses["200"]?.description;
    expect((await validate(broken as never)).valid).toBe(false);

    const routes = Object.entries(document.paths).flatMap(([path, methods]) =>
      Object.keys(methods).map((method) => `${method.toUpperCase()} ${path}`),
    );
    expect(routes.sort()).toEqual(
      [
        "GET /healthz",
        "POST /v1/runs",
        "GET /v1/runs/{runId}",
        "GET /v1/invoices",
        "GET /v1/invoices/{invoiceId}",
      ].sort(),
    );
    const post = document.paths["/v1/runs"]?.post;
    expect(Object.keys(post?.responses ?? {}).sort()).toEqual(
      ["200", "400", "401", "404", "409", "413", "415", "422", "500", "502", "503"].sort(),
    );
    expect(post?.security).toEqual([{ jwt: [] }, { iam: [] }]);
    expect(document.paths["/healthz"]?.get?.security).toBeUndefined();
    expect(Object.keys(document.components.securitySchemes).sort()).toEqual(["iam", "jwt"]);
    for (const name of [
      "CreateRunRequest",
      "RunResponse",
      "RunRecord",
      "RunStep",
      "Invoice",
      "InvoicePage",
      "Problem",
    ]) {
      expect(document.components.schemas, name).toHaveProperty(name);
    }
    // The request schema is the zod schema the route validates with: its bounds appear in the document.
    expect(document.components.schemas.CreateRunRequest).toMatchObject({
      type: "object",
      required: ["prompt"],
      additionalProperties: false,
      properties: { prompt: { type: "string", minLength: 1, maxLength: 8000 } },
    });
  });

  it("GET /healthz needs no auth and builds no run", async () => {
    const response = await call(apiEvent("http-api-v2", { method: "GET", path: "/healthz", claims: null }));
    expect(response.statusCode).toBe(200);
    expect(JSON.parse(response.body ?? "")).toEqual({ status: "ok" });
    expect(stack.model.requests).toHaveLength(0);
  });
});
