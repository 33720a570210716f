import { validate } from "@readme/openapi-parser";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  HealthSchema,
  InvoicePageSchema,
  InvoiceSchema,
  ProblemSchema,
  RunRecordSchema,
  RunResponseSchema,
} from "../functions/api/contract.js";
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
  // The file's first request loads the app and builds the document (12 s alone on a loaded machine).
  it("serves a valid OpenAPI 3.1 document, without auth, listing every route", {
    timeout: 90_000,
  }, async () => {
    const response = await call(
      apiEvent("http-api-v2", { method: "GET", path: "/openapi.json", claims: null }),
    );
    expect(response.statusCode).toBe(200);
    expect(response.headers?.["content-type"]).toMatch(/^application\/json/);
    const document = JSON.parse(response.body ?? "") as {
      openapi: string;
      paths: Record<
        string,
        Record<
          string,
          {
            responses: Record<string, unknown>;
            security?: unknown[];
            requestBody?: { content: Record<string, { schema: { $ref?: string } }> };
          }
        >
      >;
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
        "GET /v1/runs",
        "GET /v1/runs/{runId}",
        "GET /v1/runs/{runId}/events",
        "POST /v1/runs/{runId}/cancel",
        "POST /v1/runs/{runId}/approvals/{approvalId}",
        "GET /v1/approvals",
        "GET /v1/invoices",
        "GET /v1/invoices/{invoiceId}",
        "POST /v1/a2a",
        "POST /v1/agui",
        "GET /.well-known/agent-card.json",
        "GET /v1/usage",
        "GET /v1/limits",
        "PUT /v1/limits",
        "GET /v1/me",
        "POST /mcp",
        "GET /mcp",
        "GET /.well-known/oauth-protected-resource",
        "GET /.well-known/oauth-protected-resource/mcp",
        "GET /v1/policies",
        "HEAD /v1/policies",
        "PUT /v1/policies",
        "POST /v1/policies/check",
        "GET /v1/policies/versions",
        "GET /v1/policies/shadow-decisions",
        "GET /v1/policies/schema",
      ].sort(),
    );
    const post = document.paths["/v1/runs"]?.post;
    expect(Object.keys(post?.responses ?? {}).sort()).toEqual(
      [
        "200",
        "202",
        "400",
        "401",
        "404",
        "405",
        "409",
        "413",
        "415",
        "422",
        "429",
        "500",
        "502",
        "503",
      ].sort(),
    );
    expect(post?.security).toEqual([{ jwt: [] }, { iam: [] }]);
    expect(document.paths["/healthz"]?.get?.security).toBeUndefined();
    expect(Object.keys(document.components.securitySchemes).sort()).toEqual(["iam", "jwt", "mcp"]);
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
    // A field that refers to a named component describes itself beside the reference; the component
    // keeps its own description (the problem's `history` once overwrote the HistorySummary component's).
    const schemas = document.components.schemas as Record<
      string,
      { description?: string; properties?: Record<string, { description?: string }> }
    >;
    expect(schemas.HistorySummary?.description).toMatch(/^The earlier conversation sent with the run/);
    expect(schemas.Problem?.properties?.history?.description).toMatch(/^CONTEXT_LENGTH_EXCEEDED only/);
    // The check's body is PUT's with `mode` optional: only `policies` is required.
    const bodyOf = (path: string, method: string) =>
      document.paths[path]?.[method]?.requestBody?.content["application/json"]?.schema.$ref
        ?.split("/")
        .at(-1) ?? "";
    const check = schemas[bodyOf("/v1/policies/check", "post")] as { required?: string[] };
    const put = schemas[bodyOf("/v1/policies", "put")] as { required?: string[] };
    expect(put.required?.sort()).toEqual(["mode", "policies"]);
    expect(check).toMatchObject({
      type: "object",
      additionalProperties: false,
      properties: { policies: { type: "string", minLength: 1 }, mode: { enum: ["enforce", "shadow"] } },
    });
    expect(check.required).toEqual(["policies"]);
    // The request schema is the zod schema the route validates with: its bounds appear in the document.
    expect(document.components.schemas.CreateRunRequest).toMatchObject({
      type: "object",
      required: ["prompt"],
      additionalProperties: false,
      properties: {
        prompt: { type: "string", minLength: 1, maxLength: 8000 },
        // null is "no previous run", as absent: the value a new run's record shows can be sent back.
        previousRunId: { type: ["string", "null"], pattern: "^[A-Za-z0-9_-]{1,128}$" },
      },
    });
  });

  it("GET /healthz needs no auth and builds no run", async () => {
    const response = await call(apiEvent("http-api-v2", { method: "GET", path: "/healthz", claims: null }));
    expect(response.statusCode).toBe(200);
    expect(HealthSchema.parse(JSON.parse(response.body ?? ""))).toEqual({ status: "ok" });
    expect(stack.model.requests).toHaveLength(0);
  });
});

describe("the document's response shapes", () => {
  type Operation = {
    responses: Record<
      string,
      { headers?: Record<string, { required?: boolean; schema: Record<string, unknown> }>; content?: object }
    >;
  };
  type Document = {
    paths: Record<string, Record<string, Operation>>;
    components: { schemas: Record<string, { properties?: Record<string, unknown>; required?: string[] }> };
  };
  let document: Document;
  beforeAll(async () => {
    const response = await call(
      apiEvent("http-api-v2", { method: "GET", path: "/openapi.json", claims: null }),
    );
    document = JSON.parse(response.body ?? "") as Document;
  });

  it("declares every field the API returns, and no other (additionalProperties: false)", () => {
    const { schemas } = document.components;
    expect(Object.keys(schemas.Invoice?.properties ?? {})).toEqual(
      expect.arrayContaining(["clientReference", "description", "quoteId", "rateVersion", "taxPointDate"]),
    );
    expect(Object.keys(schemas.RunResponse?.properties ?? {})).toEqual(
      expect.arrayContaining(["details", "modelErrorStatus"]),
    );
    expect(schemas.ToolResult).toMatchObject({
      properties: { metadata: { properties: { truncated: { type: "object" } } } },
    });
    for (const name of [
      "Invoice",
      "InvoicePage",
      "RunResponse",
      "RunRecord",
      "RunStep",
      "ToolResult",
      "Problem",
      "Health",
    ]) {
      expect(schemas[name], name).toMatchObject({ type: "object", additionalProperties: false });
    }
  });

  it("declares the response headers: Idempotent-Replayed, Retry-After, WWW-Authenticate", () => {
    const runs = document.paths["/v1/runs"]?.post?.responses ?? {};
    expect(runs["200"]?.headers?.["Idempotent-Replayed"]).toMatchObject({
      required: false,
      schema: { type: "string", enum: ["true"] },
    });
    // 409 IDEMPOTENCY_KEY_IN_USE and PREVIOUS_RUN_IN_PROGRESS carry it; PREVIOUS_RUN_NOT_CONTINUABLE,
    // the third 409 of the route, has nothing to wait for.
    for (const [status, required] of [
      ["409", false],
      ["503", true],
    ] as const) {
      expect(runs[status]?.headers?.["Retry-After"], status).toMatchObject({
        required,
        schema: { type: "integer", minimum: 1 },
      });
    }
    for (const [path, methods] of Object.entries(document.paths)) {
      for (const [method, operation] of Object.entries(methods)) {
        if (path === "/healthz" || path.startsWith("/.well-known/")) continue;
        expect(operation.responses["401"]?.headers?.["WWW-Authenticate"], `${method} ${path}`).toMatchObject({
          required: true,
        });
        expect(operation.responses["503"]?.headers?.["Retry-After"], `${method} ${path}`).toBeDefined();
      }
    }
  });

  it("declares Last-Event-ID on every route that resumes a stream with it (run events, AG-UI, A2A's SubscribeToTask)", () => {
    for (const [path, method] of [
      ["/v1/runs/{runId}/events", "get"],
      ["/v1/agui", "post"],
      ["/v1/a2a", "post"],
    ] as const) {
      const operation = document.paths[path]?.[method] as Operation & {
        parameters?: Array<{ name: string; in: string; schema: Record<string, unknown> }>;
      };
      expect(
        operation.parameters?.find((parameter) => parameter.name === "Last-Event-ID"),
        `${method} ${path}`,
      ).toMatchObject({ in: "header", schema: { type: "string", pattern: "^[0-9]{1,15}$" } });
    }
    // AG-UI refuses an unreadable one before any stream, as the run events do.
    expect(JSON.stringify(document.paths["/v1/agui"]?.post?.responses["400"])).toContain("Last-Event-ID");
  });

  it("the response schemas are strict: an undeclared member fails the parse", () => {
    const money = { amount: "1.00", minorUnits: 100, currency: "GBP" };
    const invoice = {
      invoiceId: "inv_1",
      tenantId: "t",
      clientName: "c",
      clientReference: null,
      description: null,
      quoteId: "q",
      jurisdiction: "UK",
      currency: "GBP",
      rateVersion: "GB-2011-01-04",
      rate: "0.2",
      taxPointDate: "2026-11-30",
      subtotal: money,
      taxAmount: money,
      grossTotal: money,
      idempotencyKey: "k",
      runId: "r",
      createdBy: "u",
      createdAt: "2026-11-30T00:00:00.000Z",
    };
    expect(InvoiceSchema.parse(invoice)).toEqual(invoice);
    expect(InvoiceSchema.safeParse({ ...invoice, pk: "TENANT#t" }).success).toBe(false);
    expect(InvoiceSchema.safeParse({ ...invoice, subtotal: { ...money, exponent: 2 } }).success).toBe(false);
    expect(InvoicePageSchema.safeParse({ items: [invoice], nextCursor: null, total: 1 }).success).toBe(false);
    expect(HealthSchema.safeParse({ status: "ok", version: "1" }).success).toBe(false);
    const problem = { type: "t", title: "x", status: 404, detail: "d", code: "NOT_FOUND" };
    expect(ProblemSchema.parse(problem)).toEqual(problem);
    expect(ProblemSchema.safeParse({ ...problem, stack: "Error: at …" }).success).toBe(false);
    const usage = { promptTokens: 1, completionTokens: 1, totalTokens: 2 };
    const run = {
      runId: "run_1",
      status: "completed",
      answer: "a",
      reason: null,
      cycles: 1,
      toolResults: [],
      usage,
      durationMs: 5,
      modelErrorStatus: null,
      details: {},
      grounding: { mode: "report", checked: 0, ungrounded: [], action: "none" },
      previousRunId: null,
      history: null,
    };
    expect(RunResponseSchema.parse(run)).toEqual(run);
    expect(RunResponseSchema.safeParse({ ...run, messages: [] }).success).toBe(false);
    expect(RunResponseSchema.safeParse({ ...run, details: { secret: 1 } }).success).toBe(false);
    expect(RunRecordSchema.safeParse({ ttl: 1 }).success).toBe(false);
  });
});
