import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createLazyHandler, type LambdaHandler } from "../functions/api/handler.js";
import { createLambdaContext } from "../local/lambda-context.js";
import { apiEvent } from "./fixtures/events.js";
import { seedEvent, startTestStack, type TestStack } from "./support/stack.js";

/**
 * The deployed entry (functions/api/handler.ts createLazyHandler): GET /healthz answered before the app
 * is loaded, every other request handed to the lazily loaded app. Compared with the whole app over the
 * same config (test/support/stack.ts, createHandler) on the same events.
 */
let stack: TestStack;
let entry: LambdaHandler;
beforeAll(async () => {
  stack = await startTestStack();
  entry = createLazyHandler(stack.config);
});
afterAll(async () => {
  await stack?.stop();
});

type Result = { statusCode: number; body: string; headers?: Record<string, string> };
const viaEntry = async (event: unknown) =>
  (await entry(event as never, createLambdaContext(29_000))) as unknown as Result;
const viaApp = async (event: unknown) => (await stack.invoke(event as never)) as unknown as Result;

describe("the deployed entry", () => {
  it("answers GET /healthz exactly as the app does, for v2, v1 and function URL events", async () => {
    for (const shape of ["http-api-v2", "rest-v1", "function-url"] as const) {
      const event = apiEvent(shape, { method: "GET", path: "/healthz", claims: null });
      const [fromEntry, fromApp] = [await viaEntry(event), await viaApp(event)];
      expect(fromEntry.statusCode, shape).toBe(200);
      expect(JSON.parse(fromEntry.body)).toEqual({ status: "ok" });
      expect(fromEntry.body).toBe(fromApp.body);
      expect(fromEntry.headers?.["content-type"]).toBe(fromApp.headers?.["content-type"]);
    }
  });

  it("serves the app's other routes through the loaded app: the OpenAPI document, 404 and 401", async () => {
    const openapi = apiEvent("http-api-v2", { method: "GET", path: "/openapi.json", claims: null });
    const [document, expected] = [await viaEntry(openapi), await viaApp(openapi)];
    expect(document.statusCode).toBe(200);
    expect(JSON.parse(document.body).paths["/healthz"].get.summary).toBe("Liveness check (no auth)");
    expect(document.body).toBe(expected.body);

    const missing = await viaEntry(apiEvent("http-api-v2", { method: "GET", path: "/nope", claims: null }));
    expect(missing.statusCode).toBe(404);
    expect(missing.headers?.["content-type"]).toBe("application/problem+json");
    expect(JSON.parse(missing.body).code).toBe("NOT_FOUND");

    // POST /healthz is not the liveness route: the app answers it (405, Allow: GET), not the entry's GET route.
    const post = await viaEntry(apiEvent("http-api-v2", { method: "POST", path: "/healthz", body: {} }));
    expect(post.statusCode).toBe(405);
    expect(post.headers?.allow).toBe("GET");

    const anonymous = await viaEntry(
      apiEvent("http-api-v2", { method: "GET", path: "/v1/invoices", claims: null }),
    );
    expect(anonymous.statusCode).toBe(401);
    expect(JSON.parse(anonymous.body).code).toBe("UNAUTHENTICATED");
  });

  it("runs the seed scenario through the loaded app and dependencies, recording one invoice", async () => {
    const result = await viaEntry(seedEvent());
    expect(result.statusCode).toBe(200);
    const run = JSON.parse(result.body) as {
      status: string;
      toolResults: Array<{ status: string; metadata: { toolName: string } }>;
    };
    expect(run.status).toBe("completed");
    expect(run.toolResults.map((r) => `${r.metadata.toolName}:${r.status}`)).toEqual([
      "calculateTax:success",
      "calculateTax:business_error",
      "recordInvoice:success",
    ]);
    const invoices = await stack.deps.ledger.list("tenant_uk_01");
    expect(invoices.map((invoice) => invoice.grossTotal.amount)).toEqual(["1800.00"]);
  });

  it("answers an event the adapter cannot read as problem+json, /healthz included", async () => {
    const event = apiEvent("http-api-v2", { method: "GET", path: "/healthz", claims: null, body: "x" });
    const result = await viaEntry(event);
    expect(result.statusCode).toBe(400);
    expect(result.headers?.["content-type"]).toBe("application/problem+json");
    expect(JSON.parse(result.body).code).toBe("INVALID_REQUEST");
  });
});
