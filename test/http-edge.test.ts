import { randomUUID } from "node:crypto";
import { QueryCommand } from "@aws-sdk/lib-dynamodb";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { InvoiceSchema, ProblemSchema, RunResponseSchema } from "../functions/api/contract.js";
import { createLazyHandler, type LambdaHandler } from "../functions/api/handler.js";
import { createLambdaContext } from "../local/lambda-context.js";
import { keys } from "../shared/store/keys.js";
import { apiEvent, type EventOptions, type EventShape, header } from "./fixtures/events.js";
import { startTestStack, type TestStack } from "./support/stack.js";

/**
 * The Lambda edge (named stages, base64 bodies, Idempotency-Key syntax) through the deployed entry, functions/api/handler.ts
 * (createLazyHandler over the test stack's config: DynamoDB Local, the local model server over HTTP):
 * named stages, bodies flagged isBase64Encoded that are not base64 or not UTF-8, and the syntax of the
 * Idempotency-Key header. Every refused request is checked against DynamoDB: nothing under its tenant.
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

type Result = {
  statusCode: number;
  body: string;
  headers?: Record<string, string>;
  multiValueHeaders?: Record<string, string[]>;
};
const send = async (event: unknown) =>
  (await entry(event as never, createLambdaContext(29_000))) as unknown as Result;
const call = (shape: EventShape, options: EventOptions = {}) => send(apiEvent(shape, options));
const json = (result: Result) => JSON.parse(result.body) as unknown;

/** A fresh tenant's claims, for the shape's authorizer (JWT claims or Cognito claims). */
function tenantClaims(shape: EventShape, tenantId: string): EventOptions {
  return shape === "rest-v1"
    ? { extraClaims: { "custom:tenant_id": tenantId } }
    : { extraClaims: { tenant_id: tenantId } };
}
const freshTenant = () => `tenant_edge_${randomUUID().slice(0, 8)}`;

/** Every item of the tenant's partition: run records, audit steps, quotes, invoices, idempotency records. */
async function tenantItems(tenantId: string): Promise<Array<Record<string, unknown>>> {
  const result = await stack.deps.ddb.send(
    new QueryCommand({
      TableName: stack.config.table.name,
      KeyConditionExpression: "pk = :pk",
      ExpressionAttributeValues: { ":pk": keys.tenant(tenantId) },
      ConsistentRead: true,
    }),
  );
  return result.Items ?? [];
}

/** Asserts a 400 INVALID_REQUEST problem+json and returns its body. */
function invalidRequest(result: Result) {
  expect(result.statusCode, result.body).toBe(400);
  expect(header(result, "content-type")).toBe("application/problem+json");
  const body = ProblemSchema.parse(json(result));
  expect(body.code).toBe("INVALID_REQUEST");
  return body;
}

const RECORD_PROMPT = "Calculate tax on 1500 GBP for a client in the UK and record the invoice.";

/** The invoice id a completed run recorded. */
function recordedInvoiceId(result: Result): string {
  expect(result.statusCode, result.body).toBe(200);
  const run = RunResponseSchema.parse(json(result));
  expect(run.status).toBe("completed");
  const recorded = run.toolResults.find((r) => r.metadata.toolName === "recordInvoice");
  expect(recorded?.status).toBe("success");
  const data = recorded?.data as { invoice?: { invoiceId?: string } } | undefined;
  expect(data?.invoice?.invoiceId).toMatch(/^inv_/);
  return String(data?.invoice?.invoiceId);
}

describe("named stages", () => {
  for (const shape of ["http-api-v2", "rest-v1"] as const) {
    it(`${shape} on stage dev: a run records an invoice and GET /v1/invoices/{id} returns it`, async () => {
      const tenantId = freshTenant();
      const options = { stage: "dev", ...tenantClaims(shape, tenantId) };
      const event = apiEvent(shape, { ...options, body: { prompt: RECORD_PROMPT } }) as {
        rawPath?: string;
        path?: string;
        requestContext: { path?: string };
      };
      // The shapes as API Gateway sends them on a named stage.
      if (shape === "http-api-v2") expect(event.rawPath).toBe("/dev/v1/runs");
      else expect([event.path, event.requestContext.path]).toEqual(["/v1/runs", "/dev/v1/runs"]);

      const invoiceId = recordedInvoiceId(await send(event));
      const invoice = await call(shape, { ...options, method: "GET", path: `/v1/invoices/${invoiceId}` });
      expect(invoice.statusCode, invoice.body).toBe(200);
      expect(InvoiceSchema.parse(json(invoice))).toMatchObject({
        invoiceId,
        tenantId,
        grossTotal: { amount: "1800.00", currency: "GBP" },
      });
      const list = await call(shape, { ...options, method: "GET", path: "/v1/invoices" });
      expect((json(list) as { items: Array<{ invoiceId: string }> }).items.map((i) => i.invoiceId)).toEqual([
        invoiceId,
      ]);
      // The dependency-free routes are answered on the stage too.
      const health = await call(shape, { stage: "dev", method: "GET", path: "/healthz", claims: null });
      expect([health.statusCode, json(health)]).toEqual([200, { status: "ok" }]);
    });
  }

  it("$default still routes /v1/runs and /v1/invoices/{id}", async () => {
    const tenantId = freshTenant();
    const options = { stage: "$default", ...tenantClaims("http-api-v2", tenantId) };
    const run = await call("http-api-v2", { ...options, body: { prompt: RECORD_PROMPT } });
    const invoiceId = recordedInvoiceId(run);
    const invoice = await call("http-api-v2", {
      ...options,
      method: "GET",
      path: `/v1/invoices/${invoiceId}`,
    });
    expect([invoice.statusCode, (json(invoice) as { invoiceId: string }).invoiceId]).toEqual([
      200,
      invoiceId,
    ]);

    // On $default a path that merely starts with something stage-like is not stripped: no such route.
    const staged = await call("http-api-v2", {
      ...options,
      method: "GET",
      path: `/dev/v1/invoices/${invoiceId}`,
    });
    expect([staged.statusCode, (json(staged) as { code: string }).code]).toEqual([404, "NOT_FOUND"]);
    const stagedRun = await call("http-api-v2", { ...options, path: "/v1/v1/runs" });
    expect(stagedRun.statusCode).toBe(404);
  });

  it("on stage dev only a whole /dev segment is taken off; a path without it routes as is", async () => {
    const tenantId = freshTenant();
    const options = { ...tenantClaims("http-api-v2", tenantId) };
    const devices = apiEvent("http-api-v2", { ...options, method: "GET", path: "/devices/v1/invoices" });
    (devices.requestContext as { stage: string }).stage = "dev";
    expect((await send(devices)).statusCode).toBe(404);

    // A custom domain's API mapping to the stage sends the path without the stage: routed unchanged.
    const mapped = apiEvent("http-api-v2", { ...options, method: "GET", path: "/v1/invoices" });
    (mapped.requestContext as { stage: string }).stage = "dev";
    const page = await send(mapped);
    expect([page.statusCode, json(page)]).toEqual([200, { items: [], nextCursor: null }]);
  });
});

describe("bodies flagged isBase64Encoded", () => {
  const body = JSON.stringify({ prompt: RECORD_PROMPT });
  const standard = Buffer.from(body).toString("base64");
  const cases: Array<[string, string]> = [
    ["characters outside the base64 alphabet", "!!!not*base64!!!"],
    ["base64url (- and _)", Buffer.from(`${body}??>>`).toString("base64url")],
    ["missing = padding", standard.replace(/=+$/, "")],
    ["a line break inside", `${standard.slice(0, 20)}\n${standard.slice(20)}`],
    ["non-zero pad bits", "eyK="],
    ["a lone = in the middle", `${standard.slice(0, 8)}=${standard.slice(8)}`],
  ];
  it("the cases are what their names say", () => {
    expect(cases[1]?.[1]).toMatch(/[-_]/);
    expect(standard).toMatch(/=$/);
    expect(Buffer.from("eyK=", "base64").toString("base64")).toBe("eyI=");
  });

  for (const shape of ["http-api-v2", "rest-v1"] as const) {
    it.each(cases)(
      `${shape}: %s is 400 INVALID_REQUEST, nothing written, no model call`,
      async (_name, encoded) => {
        const tenantId = freshTenant();
        const event = apiEvent(shape, {
          ...tenantClaims(shape, tenantId),
          headers: { "Idempotency-Key": `b64-${randomUUID()}` },
        });
        Object.assign(event, { body: encoded, isBase64Encoded: true });
        const calls = stack.model.requests.length;
        const result = await send(event);
        const problem = invalidRequest(result);
        expect(problem.detail).toContain("isBase64Encoded");
        expect(problem.errors).toEqual([{ in: "body", path: "(root)", message: problem.detail }]);
        // The answer is in the event's own result shape (v1: multiValueHeaders).
        if (shape === "rest-v1")
          expect(result.multiValueHeaders?.["content-type"]).toEqual(["application/problem+json"]);
        expect(await tenantItems(tenantId)).toEqual([]);
        expect(stack.model.requests.length).toBe(calls);
      },
    );
  }

  it("valid base64 of invalid UTF-8 sent as JSON is 400 INVALID_REQUEST, nothing written", async () => {
    const tenantId = freshTenant();
    const bytes = Buffer.concat([
      Buffer.from('{"prompt":"Calculate tax on 1500 GBP '),
      Buffer.from([0xc3, 0x28]),
      Buffer.from('"}'),
    ]);
    for (const contentType of [
      "application/json",
      "application/json; charset=utf-8",
      "application/merge-patch+json",
    ]) {
      const event = apiEvent("http-api-v2", {
        ...tenantClaims("http-api-v2", tenantId),
        contentType,
        headers: { "Idempotency-Key": `utf8-${randomUUID()}` },
      });
      Object.assign(event, { body: bytes.toString("base64"), isBase64Encoded: true });
      const problem = invalidRequest(await send(event));
      expect(problem.detail).toContain("not valid UTF-8");
    }
    expect(await tenantItems(tenantId)).toEqual([]);
  });

  it("canonical base64 with + and / runs; a non-JSON media type of any bytes is left to the route (415)", async () => {
    const tenantId = freshTenant();
    const prompt = `${RECORD_PROMPT} ???>>>`;
    const encoded = Buffer.from(JSON.stringify({ prompt })).toString("base64");
    expect(encoded).toMatch(/[+/]/);
    const event = apiEvent("http-api-v2", tenantClaims("http-api-v2", tenantId));
    Object.assign(event, { body: encoded, isBase64Encoded: true });
    recordedInvoiceId(await send(event));

    const binary = apiEvent("http-api-v2", {
      ...tenantClaims("http-api-v2", tenantId),
      contentType: "image/png",
    });
    Object.assign(binary, {
      body: Buffer.from([0x89, 0x50, 0xff, 0xfe]).toString("base64"),
      isBase64Encoded: true,
    });
    const unsupported = await send(binary);
    expect([unsupported.statusCode, (json(unsupported) as { code: string }).code]).toEqual([
      415,
      "UNSUPPORTED_MEDIA_TYPE",
    ]);
  });
});

describe("Idempotency-Key syntax through the handler", () => {
  const invalid: Array<[string, string]> = [
    ["bare non-ASCII (Latin-1)", "clé"],
    ["quoted non-ASCII", '"clé"'],
    ["non-Latin-1", "ключ-1"],
    ["an emoji", "order-😀"],
    ["a control character", "a\u0007b"],
    ["a tab inside", "a\tb"],
    ["an unterminated quote", '"abc'],
    ['an escape other than \\" and \\\\', '"a\\nb"'],
    ["parameters", '"abc";v=1'],
    ["a list", '"a", "b"'],
    ["a display string (RFC 9651)", '%"abc"'],
    ["256 characters", "k".repeat(256)],
    ["256 characters quoted", `"${"k".repeat(256)}"`],
    ["an empty value", ""],
    ["an empty quoted string", '""'],
  ];

  for (const shape of ["http-api-v2", "rest-v1"] as const) {
    it.each(invalid)(
      `${shape}: %s is 400 naming the header, before anything is written`,
      async (_name, key) => {
        const tenantId = freshTenant();
        const calls = stack.model.requests.length;
        const result = await call(shape, {
          ...tenantClaims(shape, tenantId),
          body: { prompt: RECORD_PROMPT },
          headers: { "Idempotency-Key": key },
        });
        const problem = invalidRequest(result);
        expect(problem.detail).toContain("Idempotency-Key");
        expect(problem.errors?.[0]).toMatchObject({ in: "header", path: "Idempotency-Key" });
        expect(await tenantItems(tenantId)).toEqual([]);
        expect(stack.model.requests.length).toBe(calls);
      },
    );
  }

  it("a NUL in the value (which the Request cannot even hold) is 400 naming the header", async () => {
    const tenantId = freshTenant();
    const result = await call("http-api-v2", {
      ...tenantClaims("http-api-v2", tenantId),
      headers: { "Idempotency-Key": "a\u0000b" },
    });
    const problem = invalidRequest(result);
    expect(problem.detail).toContain("Idempotency-Key");
    expect(problem.errors).toEqual([
      {
        in: "header",
        path: "Idempotency-Key",
        message: "not a valid HTTP header (a NUL, CR or LF in the value, or a malformed name)",
      },
    ]);
    expect(await tenantItems(tenantId)).toEqual([]);
  });

  it("REST v1: two Idempotency-Key headers are a list, 400", async () => {
    const tenantId = freshTenant();
    const event = apiEvent("rest-v1", tenantClaims("rest-v1", tenantId)) as {
      multiValueHeaders: Record<string, string[]>;
      headers: Record<string, string>;
    };
    event.multiValueHeaders["Idempotency-Key"] = ["first", "second"];
    event.headers["Idempotency-Key"] = "second";
    const problem = invalidRequest(await send(event));
    expect(problem.errors?.[0]).toMatchObject({ in: "header", path: "Idempotency-Key" });
    expect(await tenantItems(tenantId)).toEqual([]);
  });

  it("the quoted and the bare form of a key are one key: the second request replays the first", async () => {
    const tenantId = freshTenant();
    const key = `order:${randomUUID()}/1`;
    const options = { ...tenantClaims("http-api-v2", tenantId), body: { prompt: RECORD_PROMPT } };
    const first = await call("http-api-v2", { ...options, headers: { "Idempotency-Key": key } });
    const invoiceId = recordedInvoiceId(first);
    const calls = stack.model.requests.length;
    const second = await call("http-api-v2", { ...options, headers: { "Idempotency-Key": ` "${key}" ` } });
    expect([second.statusCode, header(second, "idempotent-replayed")]).toEqual([200, "true"]);
    expect(json(second)).toEqual(json(first));
    expect(stack.model.requests.length).toBe(calls);
    expect((await stack.deps.ledger.list(tenantId)).map((i) => i.invoiceId)).toEqual([invoiceId]);

    // A quoted key with escapes is its unescaped text.
    const escaped = await call("http-api-v2", {
      ...options,
      headers: { "Idempotency-Key": '"say \\"hi\\" \\\\ bye"' },
    });
    recordedInvoiceId(escaped);
    const records = (await tenantItems(tenantId)).filter((item) =>
      String(item.sk).startsWith(keys.idempotencyPrefix),
    );
    expect(records).toHaveLength(2);
    expect(records.map((item) => item.sk).sort()).toEqual(
      [
        keys.idempotency("POST /v1/runs", "usr_9918", key),
        keys.idempotency("POST /v1/runs", "usr_9918", 'say "hi" \\ bye'),
      ].sort(),
    );
  });

  it("a percent-encoded key is a key of its own, not the non-ASCII key it encodes", async () => {
    const tenantId = freshTenant();
    const options = { ...tenantClaims("http-api-v2", tenantId), body: { prompt: RECORD_PROMPT } };
    const encoded = await call("http-api-v2", { ...options, headers: { "Idempotency-Key": "cl%C3%A9" } });
    recordedInvoiceId(encoded);
    const raw = await call("http-api-v2", { ...options, headers: { "Idempotency-Key": "clé" } });
    invalidRequest(raw);
    expect(header(raw, "idempotent-replayed")).toBeUndefined();
  });
});
