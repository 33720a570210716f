import { randomUUID } from "node:crypto";
import { createServer, type Server, type Socket } from "node:net";
import { QueryCommand } from "@aws-sdk/lib-dynamodb";
import type { APIGatewayProxyStructuredResultV2 } from "aws-lambda";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ApiEvent, createHandler } from "../functions/api/app-handler.js";
import { ProblemSchema } from "../functions/api/contract.js";
import { PROBLEM_STATUS, ProblemError, problemCodeOf, toProblem } from "../functions/api/problem-details.js";
import { createLambdaContext } from "../local/lambda-context.js";
import { loadConfig } from "../shared/config.js";
import { createApiDeps } from "../shared/deps.js";
import { isStoreUnavailable } from "../shared/store/errors.js";
import { apiEvent, type EventOptions, type EventShape, header } from "./fixtures/events.js";
import { startTestStack, type TestStack } from "./support/stack.js";

let stack: TestStack;
beforeAll(async () => {
  stack = await startTestStack({ MAX_BODY_BYTES: "12288" });
});
afterAll(async () => {
  await stack?.stop();
});

type Result = APIGatewayProxyStructuredResultV2 & { multiValueHeaders?: Record<string, unknown[]> };
const call = async (shape: EventShape, options: EventOptions = {}) =>
  (await stack.invoke(apiEvent(shape, options) as never)) as Result;

/** Asserts an RFC 9457 problem response with exactly the standard members (plus `errors` if given). */
function problem(response: Result, code: keyof typeof PROBLEM_STATUS) {
  expect(response.statusCode).toBe(PROBLEM_STATUS[code]);
  expect(header(response, "content-type")).toBe("application/problem+json");
  const body = ProblemSchema.parse(JSON.parse(response.body ?? ""));
  expect(body).toMatchObject({
    code,
    status: PROBLEM_STATUS[code],
    type: `https://boundloop.dev/problems/${code.toLowerCase().replaceAll("_", "-")}`,
  });
  expect(body.title.length).toBeGreaterThan(0);
  expect(body.detail.length).toBeGreaterThan(0);
  return body;
}

/** Run records stored for a tenant (to prove a rejected request wrote nothing). */
async function runItems(tenantId: string): Promise<number> {
  const page = await stack.deps.ddb.send(
    new QueryCommand({
      TableName: stack.config.table.name,
      KeyConditionExpression: "pk = :pk AND begins_with(sk, :run)",
      ExpressionAttributeValues: { ":pk": `TENANT#${tenantId}`, ":run": "RUN#" },
      ConsistentRead: true,
    }),
  );
  return page.Count ?? 0;
}

describe("bad input is a problem response and writes nothing", () => {
  it("a body over MAX_BODY_BYTES is 413 PAYLOAD_TOO_LARGE, plain or base64", async () => {
    const before = stack.model.requests.length;
    const prompt = "x".repeat(13_000);
    const plain = await call("http-api-v2", { body: { prompt } });
    expect(problem(plain, "PAYLOAD_TOO_LARGE").detail).toContain("12288 bytes");
    problem(await call("rest-v1", { body: { prompt }, base64: true }), "PAYLOAD_TOO_LARGE");
    expect(stack.model.requests.length).toBe(before);
    expect(await runItems("tenant_uk_01")).toBe(0);
    expect(await runItems("tenant_uk_02")).toBe(0);
  });

  it("a body that is not JSON by content type is 415 UNSUPPORTED_MEDIA_TYPE", async () => {
    problem(await call("http-api-v2", { contentType: "text/plain" }), "UNSUPPORTED_MEDIA_TYPE");
    problem(
      await call("http-api-v2", { contentType: "application/x-www-form-urlencoded", body: "prompt=hi" }),
      "UNSUPPORTED_MEDIA_TYPE",
    );
    problem(await call("rest-v1", { contentType: null }), "UNSUPPORTED_MEDIA_TYPE");
    expect(stack.model.requests.length).toBe(0);
    expect(await runItems("tenant_uk_01")).toBe(0);
  });

  it("a JSON body other than application/json in UTF-8 is 415: another +json type or charset (RFC 8259 §8.1)", async () => {
    for (const contentType of [
      "application/merge-patch+json",
      "application/vnd.api+json",
      "application/json; charset=iso-8859-1",
      'application/json; charset="UTF-16"',
    ]) {
      const refused = problem(await call("http-api-v2", { contentType }), "UNSUPPORTED_MEDIA_TYPE");
      expect(refused.detail, contentType).toBe(
        "Send the body as application/json, in UTF-8 (no other charset).",
      );
    }
    // Every route that reads a JSON body, not POST /v1/runs alone.
    const limits = await call("http-api-v2", {
      method: "PUT",
      path: "/v1/limits",
      contentType: "application/merge-patch+json",
      body: { tenant: { runsPerMinute: 1 } },
      claims: { sub: "usr_limits", tenant_id: "tenant_uk_01", scope: "limits:admin" },
    });
    problem(limits, "UNSUPPORTED_MEDIA_TYPE");
    // application/json with no charset or UTF-8's is read: here its schema refuses the empty body.
    for (const contentType of [
      "application/json",
      "application/json; charset=utf-8",
      'Application/JSON;charset="UTF-8"',
    ]) {
      problem(await call("http-api-v2", { contentType, body: {} }), "INVALID_REQUEST");
    }
    expect(stack.model.requests.length).toBe(0);
    expect(await runItems("tenant_uk_01")).toBe(0);
  });

  it("malformed JSON and schema failures are 400 INVALID_REQUEST with field paths", async () => {
    const malformed = problem(await call("http-api-v2", { body: '{"prompt": ' }), "INVALID_REQUEST");
    expect(malformed.errors).toEqual([{ in: "body", path: "(root)", message: "malformed JSON" }]);

    const empty = problem(await call("http-api-v2", { body: { prompt: "   " } }), "INVALID_REQUEST");
    expect(empty.errors?.[0]).toMatchObject({ in: "body", path: "prompt" });

    const long = problem(
      await call("http-api-v2", { body: { prompt: "y".repeat(8_001) } }),
      "INVALID_REQUEST",
    );
    expect(long.errors?.[0]?.path).toBe("prompt");
    expect(long.errors?.[0]?.message).toMatch(/8000/);

    // A missing field says it is required, not "expected string, received undefined".
    const missing = problem(await call("rest-v1", { body: {} }), "INVALID_REQUEST");
    expect(missing.errors).toEqual([{ in: "body", path: "prompt", message: "prompt is required" }]);
    const notText = problem(await call("rest-v1", { body: { prompt: 42 } }), "INVALID_REQUEST");
    expect(notText.errors?.[0]?.message).toMatch(/expected string, received number/);
    expect(stack.model.requests.length).toBe(0);
  });

  it("nothing in the body can set identity: unknown members are rejected", async () => {
    const response = await call("http-api-v2", {
      body: { prompt: "tax", tenantId: "tenant_other", userId: "usr_other", permissions: ["billing:read"] },
    });
    const body = problem(response, "INVALID_REQUEST");
    expect(body.errors?.[0]?.message).toMatch(/tenantId/);
    expect(body.errors?.[0]?.message).toMatch(/permissions/);
    expect(await runItems("tenant_other")).toBe(0);
  });

  it("no verified identity is 401 UNAUTHENTICATED for every shape", async () => {
    problem(await call("http-api-v2", { claims: null }), "UNAUTHENTICATED");
    problem(await call("rest-v1", { claims: null }), "UNAUTHENTICATED");
    const missingTenant = problem(
      await call("http-api-v2", {
        claims: { sub: "usr_1", scope: "billing:write" },
        headers: { "x-tenant-id": "tenant_uk_01" },
      }),
      "UNAUTHENTICATED",
    );
    expect(missingTenant.detail).toContain("tenant");
    const unmapped = problem(await call("function-url"), "UNAUTHENTICATED");
    expect(unmapped.detail).toContain("IAM_PRINCIPAL_TENANTS");
    problem(
      await call("http-api-v2", { method: "GET", path: "/v1/invoices", claims: null }),
      "UNAUTHENTICATED",
    );
    expect(stack.model.requests.length).toBe(0);
  });

  it("an unknown route is 404 NOT_FOUND; a known path with another method is 405 METHOD_NOT_ALLOWED", async () => {
    problem(await call("http-api-v2", { method: "GET", path: "/v2/nothing" }), "NOT_FOUND");
    const deleted = await call("http-api-v2", { method: "DELETE", path: "/v1/runs" });
    problem(deleted, "METHOD_NOT_ALLOWED");
    expect(header(deleted, "allow")).toBe("GET, POST");
    problem(await call("rest-v1", { method: "GET", path: "/v1/runs/run_1/nothing" }), "NOT_FOUND");
  });
});

describe("server-side failures", () => {
  /** A handler over a config the test shapes (same model server, own DynamoDB settings). */
  function handlerWith(env: Record<string, string>) {
    const config = loadConfig({ OPENAI_BASE_URL: stack.model.baseURL, ...env });
    const deps = createApiDeps(config);
    const handler = createHandler(deps);
    return {
      deps,
      invoke: async (options: EventOptions = {}) =>
        (await handler(
          apiEvent("http-api-v2", options) as unknown as ApiEvent,
          createLambdaContext(29_000),
        )) as Result,
    };
  }

  it("an unexpected error is 500 INTERNAL and leaks nothing", async () => {
    const missingTable = `missing-${randomUUID()}`;
    const { deps, invoke } = handlerWith({
      DYNAMODB_ENDPOINT: stack.config.table.endpoint ?? "",
      TABLE_NAME: missingTable,
    });
    try {
      const response = await invoke();
      const body = problem(response, "INTERNAL");
      expect(Object.keys(body).sort()).toEqual(["code", "detail", "status", "title", "type"]);
      // With an Idempotency-Key the first DynamoDB request is the key's record: a request error there
      // (no such table, a client fault) is no 503 either, as retrying cannot help.
      const keyed = await invoke({ headers: { "idempotency-key": `k-${randomUUID()}` } });
      problem(keyed, "INTERNAL");
      expect(header(keyed, "retry-after")).toBeUndefined();
      expect(body.detail).toBe("The server could not complete the request.");
      expect(response.body).not.toMatch(/ResourceNotFound|Exception|missing-|table|DynamoDB|\s+at\s/i);
      expect(stack.model.requests.length).toBe(0);
    } finally {
      deps.ddb.destroy();
    }
  });

  it("an unreachable DynamoDB (connection refused) is 503 with Retry-After, before any model call", async () => {
    const closed = await closedPort();
    const { deps, invoke } = handlerWith({ DYNAMODB_ENDPOINT: `http://127.0.0.1:${closed}` });
    try {
      // A run's first DynamoDB request is its quota admission (docs/quotas.md): it fails closed.
      const response = await invoke();
      const body = problem(response, "QUOTA_UNAVAILABLE");
      expect(header(response, "retry-after")).toBe("1");
      expect(body.detail).not.toMatch(/ECONNREFUSED|127\.0\.0\.1/);
      const read = await invoke({ method: "GET", path: "/v1/invoices" });
      problem(read, "STORE_UNAVAILABLE");
      expect(stack.model.requests.length).toBe(0);
    } finally {
      deps.ddb.destroy();
    }
  });

  it("a DynamoDB that accepts connections but never answers is 503 after the request timeout", async () => {
    const silent = await silentServer();
    const { deps, invoke } = handlerWith({
      DYNAMODB_ENDPOINT: `http://127.0.0.1:${silent.port}`,
      DYNAMODB_REQUEST_TIMEOUT_MS: "200",
    });
    try {
      const started = Date.now();
      problem(await invoke(), "QUOTA_UNAVAILABLE");
      problem(await invoke({ method: "GET", path: "/v1/invoices" }), "STORE_UNAVAILABLE");
      expect(Date.now() - started).toBeLessThan(5_000);
      expect(stack.model.requests.length).toBe(0);
    } finally {
      deps.ddb.destroy();
      await silent.close();
    }
  });
});

describe("the error → HTTP mapping (functions/api/problem-details.ts)", () => {
  it("covers every stable code with its status", () => {
    expect(PROBLEM_STATUS).toEqual({
      INVALID_REQUEST: 400,
      UNAUTHENTICATED: 401,
      FORBIDDEN: 403,
      NOT_FOUND: 404,
      METHOD_NOT_ALLOWED: 405,
      IDEMPOTENCY_KEY_IN_USE: 409,
      RUN_NOT_RUNNING: 409,
      PREVIOUS_RUN_IN_PROGRESS: 409,
      PREVIOUS_RUN_NOT_CONTINUABLE: 409,
      APPROVAL_DECIDED: 409,
      APPROVAL_EXPIRED: 409,
      APPROVAL_CANCELLED: 409,
      PAYLOAD_TOO_LARGE: 413,
      UNSUPPORTED_MEDIA_TYPE: 415,
      IDEMPOTENCY_KEY_REUSED: 422,
      CONTEXT_LENGTH_EXCEEDED: 422,
      HANDOVER_TOO_LARGE: 422,
      INTERNAL: 500,
      MODEL_UNAVAILABLE: 502,
      STORE_UNAVAILABLE: 503,
      INVALID_POLICIES: 400,
      PRECONDITION_FAILED: 412,
      PRECONDITION_REQUIRED: 428,
      RATE_LIMITED: 429,
      QUOTA_UNAVAILABLE: 503,
    });
    // The two idempotency codes are raised by the Idempotency-Key feature; their mapping is here.
    for (const code of ["IDEMPOTENCY_KEY_IN_USE", "IDEMPOTENCY_KEY_REUSED"] as const) {
      const mapped = toProblem(new ProblemError(code, "x"));
      expect(mapped.status).toBe(PROBLEM_STATUS[code]);
      expect(mapped.body.code).toBe(code);
    }
    // A status answered below the app maps to the generic code listed first for it, not a conversation code.
    expect([409, 422, 413, 418].map(problemCodeOf)).toEqual([
      "IDEMPOTENCY_KEY_IN_USE",
      "IDEMPOTENCY_KEY_REUSED",
      "PAYLOAD_TOO_LARGE",
      "INTERNAL",
    ]);
  });

  it("recognises the SDK's unavailability errors and nothing else", () => {
    const sdk = (fields: Record<string, unknown>) =>
      Object.assign(new Error("x"), { $metadata: { attempts: 3 } }, fields);
    expect(isStoreUnavailable(sdk({ code: "ECONNREFUSED" }))).toBe(true);
    expect(isStoreUnavailable(sdk({ name: "TimeoutError", code: "ETIMEDOUT" }))).toBe(true);
    expect(
      isStoreUnavailable(sdk({ name: "ProvisionedThroughputExceededException", $fault: "client" })),
    ).toBe(true);
    expect(isStoreUnavailable(sdk({ name: "InternalServerError", $fault: "server" }))).toBe(true);
    expect(isStoreUnavailable(sdk({ name: "ValidationException", $fault: "client" }))).toBe(false);
    expect(isStoreUnavailable(sdk({ name: "ResourceNotFoundException", $fault: "client" }))).toBe(false);
    expect(isStoreUnavailable(Object.assign(new Error("x"), { code: "ECONNREFUSED" }))).toBe(false);
    expect(isStoreUnavailable("ECONNREFUSED")).toBe(false);
  });
});

/** A loopback port with nothing listening (bound, then released). */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** A loopback TCP server that accepts connections and never answers. */
async function silentServer(): Promise<{ port: number; close(): Promise<void> }> {
  const sockets = new Set<Socket>();
  const server: Server = createServer((socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    port: (server.address() as { port: number }).port,
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
