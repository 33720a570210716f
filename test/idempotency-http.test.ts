/**
 * POST /v1/runs with an Idempotency-Key through the real handler, on DynamoDB Local and the local model
 * server, and the header's syntax (parseIdempotencyKey). withRunIdempotency, the HTTP logic, called
 * directly: idempotency-http-logic.test.ts.
 */
import { randomUUID } from "node:crypto";
import type { APIGatewayProxyStructuredResultV2 } from "aws-lambda";
import { describe, expect, it } from "vitest";
import { createHandler } from "../functions/api/app-handler.js";
import { ProblemError } from "../functions/api/problem-details.js";
import {
  parseIdempotencyKey,
  RUN_ROUTE,
  requestFingerprint,
  withRunIdempotency,
} from "../functions/api/run-idempotency.js";
import { createLambdaContext } from "../local/lambda-context.js";
import type { ToolResult } from "../shared/agent/result.js";
import { createApiDeps } from "../shared/deps.js";
import {
  recordInvoiceArgs,
  idempotencyRecords as records,
  runEvent,
  scriptOneInvoice,
} from "./support/idempotency.js";
import { startTestStack, testStackForFile } from "./support/stack.js";

const stack = testStackForFile();

interface RunBody {
  runId: string;
  status: string;
  toolResults: ToolResult[];
}

const parse = (response: APIGatewayProxyStructuredResultV2) => JSON.parse(response.body ?? "") as RunBody;
const replayed = (response: APIGatewayProxyStructuredResultV2) => response.headers?.["idempotent-replayed"];
const tenant = () => `tenant_${randomUUID().slice(0, 8)}`;
const invoices = (tenantId: string) => stack.deps.ledger.list(tenantId);
const modelCalls = () => stack.model.requests.length;
const store = () => stack.deps.idempotency;

const idempotencyRecords = (tenantId: string) => records(stack, tenantId);

describe("POST /v1/runs with Idempotency-Key", () => {
  it("first call runs once and stores its response; a sequential duplicate replays it without the model", async () => {
    const tenantId = tenant();
    const key = `order-${randomUUID()}`;
    await scriptOneInvoice(stack, tenantId);
    const started = Date.now();
    const first = await stack.invoke(runEvent({ key, tenantId }));
    expect(first.statusCode).toBe(200);
    expect(replayed(first)).toBeUndefined();
    const body = parse(first);
    expect(body.status).toBe("completed");
    expect(body.toolResults[0]?.status).toBe("success");
    expect(body.toolResults[0]?.metadata.idempotencyKey).toMatch(/^tk_[0-9a-f]{64}$/);
    expect(await invoices(tenantId)).toHaveLength(1);

    const record = await store().read(tenantId, "usr_idem", RUN_ROUTE, key);
    expect(record).toMatchObject({ status: "COMPLETED", tenantId, route: RUN_ROUTE });
    expect(record?.response?.status).toBe(200);
    expect(record?.response?.body).toBe(first.body);
    expect(Number.isInteger(record?.expiresAtSeconds)).toBe(true);
    expect(record?.expiresAtSeconds).toBeGreaterThanOrEqual(Math.floor(started / 1000) + 86_400);
    // The lease ends at the run's deadline (RUN_TIMEOUT_MS 25 s by default), in ms.
    expect(record?.leaseExpiresAt).toBeGreaterThanOrEqual(started + 25_000);
    expect(record?.leaseExpiresAt).toBeLessThanOrEqual(Date.now() + 25_000);

    const calls = modelCalls();
    const second = await stack.invoke(runEvent({ key, tenantId }));
    expect(second.statusCode).toBe(200);
    expect(replayed(second)).toBe("true");
    expect(second.headers?.["content-type"]).toMatch(/application\/json/);
    expect(second.body).toBe(first.body);
    expect(modelCalls()).toBe(calls);
    expect(await invoices(tenantId)).toHaveLength(1);
  });

  it("20 parallel duplicates: exactly one executes; the others get 409 or a replay, never 500", async () => {
    const tenantId = tenant();
    const key = `parallel-${randomUUID()}`;
    await scriptOneInvoice(stack, tenantId, 400);
    const calls = modelCalls();
    const responses = await Promise.all(
      Array.from({ length: 20 }, () => stack.invoke(runEvent({ key, tenantId }))),
    );
    const executed = responses.filter((r) => r.statusCode === 200 && replayed(r) === undefined);
    const inUse = responses.filter((r) => r.statusCode === 409);
    const replays = responses.filter((r) => r.statusCode === 200 && replayed(r) === "true");
    expect(executed).toHaveLength(1);
    expect(inUse.length + replays.length).toBe(19);
    expect(inUse.length).toBeGreaterThan(0);
    for (const r of inUse) {
      expect(r.headers?.["content-type"]).toBe("application/problem+json");
      expect(JSON.parse(r.body ?? "")).toMatchObject({ status: 409, code: "IDEMPOTENCY_KEY_IN_USE" });
      expect(Number(r.headers?.["retry-after"])).toBeGreaterThanOrEqual(1);
    }
    expect(modelCalls() - calls).toBe(2);
    expect(await invoices(tenantId)).toHaveLength(1);
  });

  it("a run that ended in a business error or a permission denial is replayed, not re-run", async () => {
    const tenantId = tenant();
    stack.model.script([
      {
        toolCalls: [
          {
            id: "call_de",
            name: "calculateTax",
            arguments: JSON.stringify({
              amount: "500",
              currency: "EUR",
              jurisdiction: "DE",
              taxPointDate: null,
            }),
          },
        ],
      },
      { content: "DE is not supported." },
    ]);
    const key = `biz-${randomUUID()}`;
    const first = await stack.invoke(runEvent({ key, tenantId, prompt: "tax for DE" }));
    expect(parse(first).toolResults[0]?.error?.code).toBe("UNSUPPORTED_JURISDICTION");
    const calls = modelCalls();
    const again = await stack.invoke(runEvent({ key, tenantId, prompt: "tax for DE" }));
    expect([again.statusCode, replayed(again), again.body]).toEqual([200, "true", first.body]);
    expect(modelCalls()).toBe(calls);

    stack.model.script([
      {
        toolCalls: [
          { id: "call_rec", name: "recordInvoice", arguments: await recordInvoiceArgs(stack.deps, tenantId) },
        ],
      },
    ]);
    const denyKey = `deny-${randomUUID()}`;
    const denied = await stack.invoke(runEvent({ key: denyKey, tenantId, scope: "billing:read" }));
    expect(parse(denied).status).toBe("permission_denied");
    const deniedAgain = await stack.invoke(runEvent({ key: denyKey, tenantId, scope: "billing:read" }));
    expect([deniedAgain.statusCode, replayed(deniedAgain), deniedAgain.body]).toEqual([
      200,
      "true",
      denied.body,
    ]);
    expect(await invoices(tenantId)).toHaveLength(0);
  });

  it("the same key with a different body is 422 IDEMPOTENCY_KEY_REUSED, completed or in progress (TS #2058)", async () => {
    const tenantId = tenant();
    const key = `reuse-${randomUUID()}`;
    await scriptOneInvoice(stack, tenantId);
    await stack.invoke(runEvent({ key, tenantId, prompt: "record invoice A" }));
    const calls = modelCalls();
    const reused = await stack.invoke(runEvent({ key, tenantId, prompt: "record invoice B" }));
    expect(reused.statusCode).toBe(422);
    expect(reused.headers?.["content-type"]).toBe("application/problem+json");
    expect(JSON.parse(reused.body ?? "")).toMatchObject({ status: 422, code: "IDEMPOTENCY_KEY_REUSED" });
    expect(modelCalls()).toBe(calls);

    // While the first request is still running, a different body is also 422 (not 409).
    const liveKey = `reuse-live-${randomUUID()}`;
    await scriptOneInvoice(stack, tenantId, 400);
    const running = stack.invoke(runEvent({ key: liveKey, tenantId, prompt: "record invoice C" }));
    await waitFor(async () => (await store().read(tenantId, "usr_idem", RUN_ROUTE, liveKey)) !== undefined);
    const during = await stack.invoke(runEvent({ key: liveKey, tenantId, prompt: "record invoice D" }));
    expect(during.statusCode).toBe(422);
    expect((await running).statusCode).toBe(200);
    // One invoice per executed request (two keys), none from the two rejected ones.
    expect(await invoices(tenantId)).toHaveLength(2);
  });

  it("a cold container reads the stored fingerprint back, so an identical retry replays (TS #1499)", async () => {
    const tenantId = tenant();
    const key = `cold-${randomUUID()}`;
    await scriptOneInvoice(stack, tenantId);
    const first = await stack.invoke(runEvent({ key, tenantId }));
    const deps = createApiDeps(stack.config);
    try {
      const coldHandler = createHandler(deps);
      const cold = (await coldHandler(
        runEvent({ key, tenantId }) as never,
        createLambdaContext(29_000),
      )) as APIGatewayProxyStructuredResultV2;
      expect([cold.statusCode, replayed(cold), cold.body]).toEqual([200, "true", first.body]);
    } finally {
      deps.ddb.destroy();
    }
  });

  it("with 0 ms remaining a lease expiry is still written, and the outcome is stored (PY #4759)", async () => {
    const tenantId = tenant();
    const key = `zero-${randomUUID()}`;
    const before = Date.now();
    // A Lambda with 1 s left keeps DEADLINE_RESERVE_MS (1.5 s) back: the run's budget is 0 ms.
    const response = await stack.invoke(runEvent({ key, tenantId }), 1_000);
    expect(response.statusCode).toBe(200);
    expect(parse(response).status).toBe("deadline_exceeded");
    const record = await store().read(tenantId, "usr_idem", RUN_ROUTE, key);
    expect(typeof record?.leaseExpiresAt).toBe("number");
    expect(record?.leaseExpiresAt).toBeGreaterThanOrEqual(before);
    expect(record?.leaseExpiresAt).toBeLessThanOrEqual(Date.now());
    expect(record?.status).toBe("COMPLETED");
  });

  it("the model re-issuing recordInvoice under a new tool_call id records one invoice", async () => {
    const tenantId = tenant();
    const args = await recordInvoiceArgs(stack.deps, tenantId);
    stack.model.script([
      { toolCalls: [{ id: "call_first", name: "recordInvoice", arguments: args }] },
      { toolCalls: [{ id: "call_again", name: "recordInvoice", arguments: args }] },
      { content: "Recorded." },
    ]);
    const response = await stack.invoke(runEvent({ key: `reissue-${randomUUID()}`, tenantId }));
    const [first, second] = parse(response).toolResults;
    expect(first?.metadata.toolCallId).toBe("call_first");
    expect(second?.metadata.toolCallId).toBe("call_again");
    expect(second?.metadata.idempotencyKey).toBe(first?.metadata.idempotencyKey);
    const a = first?.data as { invoice: { invoiceId: string }; replayed: boolean };
    const b = second?.data as typeof a;
    expect([a.replayed, b.replayed]).toEqual([false, true]);
    expect(b.invoice.invoiceId).toBe(a.invoice.invoiceId);
    expect(await invoices(tenantId)).toHaveLength(1);
  });

  it("tenant B using tenant A's key gets its own run and result, and nothing of A's", async () => {
    const [tenantA, tenantB] = [tenant(), tenant()];
    const key = `shared-${randomUUID()}`;
    await scriptOneInvoice(stack, tenantA);
    const a = await stack.invoke(runEvent({ key, tenantId: tenantA }));
    await scriptOneInvoice(stack, tenantB);
    const calls = modelCalls();
    const b = await stack.invoke(runEvent({ key, tenantId: tenantB }));
    expect(b.statusCode).toBe(200);
    expect(replayed(b)).toBeUndefined();
    expect(modelCalls() - calls).toBe(2);
    const [bodyA, bodyB] = [parse(a), parse(b)];
    const invoiceId = (body: RunBody) =>
      (body.toolResults[0]?.data as { invoice?: { invoiceId: string } } | undefined)?.invoice?.invoiceId;
    const [invoiceA, invoiceB] = [invoiceId(bodyA), invoiceId(bodyB)];
    expect(invoiceA).toMatch(/^inv_/);
    expect(invoiceB).toMatch(/^inv_/);
    expect(invoiceB).not.toBe(invoiceA);
    expect(b.body).not.toContain(bodyA.runId);
    expect(b.body).not.toContain(invoiceA);
    expect(b.body).not.toContain(tenantA);
    expect((await invoices(tenantA)).map((i) => i.invoiceId)).toEqual([invoiceA]);
    expect((await invoices(tenantB)).map((i) => i.invoiceId)).toEqual([invoiceB]);
  });

  it("body formatting and key order do not change the fingerprint", async () => {
    expect(requestFingerprint(RUN_ROUTE, { prompt: "x", options: { a: 1, b: [1, 2] } })).toBe(
      requestFingerprint(RUN_ROUTE, { options: { b: [1, 2], a: 1.0 }, prompt: "x" }),
    );
    expect(requestFingerprint(RUN_ROUTE, { prompt: "x" })).not.toBe(
      requestFingerprint("POST /v1/other", { prompt: "x" }),
    );
    expect(requestFingerprint(RUN_ROUTE, { prompt: "x" })).toMatch(/^[0-9a-f]{64}$/);

    const tenantId = tenant();
    const key = `format-${randomUUID()}`;
    await scriptOneInvoice(stack, tenantId);
    const first = await stack.invoke(runEvent({ key, tenantId, body: '{"prompt":"record it"}' }));
    const second = await stack.invoke(
      runEvent({ key, tenantId, body: '{ \n "prompt" : "record \\u0069t" }' }),
    );
    expect([second.statusCode, replayed(second), second.body]).toEqual([200, "true", first.body]);

    // Through the HTTP logic with a body of several keys: the other order replays.
    let runs = 0;
    const execute = async () => {
      runs += 1;
      return Response.json({ run: runs });
    };
    const input = (body: unknown) => ({
      deps: stack.deps,
      headers: new Headers({ "Idempotency-Key": key }),
      tenantId,
      userId: "usr_idem",
      body,
      leaseExpiresAt: Date.now() + 5_000,
      route: "POST /v1/order-test",
    });
    const one = await withRunIdempotency(input({ prompt: "p", options: { a: 1, b: 2 } }), execute);
    const two = await withRunIdempotency(input({ options: { b: 2, a: 1 }, prompt: "p" }), execute);
    expect([await one.text(), await two.text(), two.headers.get("idempotent-replayed"), runs]).toEqual([
      '{"run":1}',
      '{"run":1}',
      "true",
      1,
    ]);
  });

  it("requests rejected before execution (400, 401, 415) are not recorded", async () => {
    const tenantId = tenant();
    const key = `rejected-${randomUUID()}`;
    const calls = modelCalls();
    const badBody = await stack.invoke(runEvent({ key, tenantId, body: '{"prompt":""}' }));
    const unsupported = runEvent({ key, tenantId });
    unsupported.headers = { ...unsupported.headers, "content-type": "text/plain" };
    const badType = await stack.invoke(unsupported);
    const anonymous = runEvent({ key, tenantId });
    delete (anonymous.requestContext as { authorizer?: unknown }).authorizer;
    const unauthenticated = await stack.invoke(anonymous);
    const badKey = await stack.invoke(runEvent({ key: '"unterminated', tenantId }));
    expect([badBody, badType, unauthenticated, badKey].map((r) => r.statusCode)).toEqual([
      400, 415, 401, 400,
    ]);
    expect(JSON.parse(badKey.body ?? "")).toMatchObject({
      code: "INVALID_REQUEST",
      errors: [{ in: "header", path: "Idempotency-Key" }],
    });
    expect(await idempotencyRecords(tenantId)).toEqual([]);
    expect(modelCalls()).toBe(calls);

    // The key is still fresh: a valid request with it executes.
    await scriptOneInvoice(stack, tenantId);
    const valid = await stack.invoke(runEvent({ key, tenantId }));
    expect([valid.statusCode, replayed(valid)]).toEqual([200, undefined]);
    expect(await idempotencyRecords(tenantId)).toHaveLength(1);
  });

  it("IDEMPOTENCY_KEY_REQUIRED=true makes the header mandatory", async () => {
    const strict = await startTestStack({ IDEMPOTENCY_KEY_REQUIRED: "true" });
    try {
      const missing = await strict.invoke(runEvent({}));
      expect(missing.statusCode).toBe(400);
      expect(JSON.parse(missing.body ?? "")).toMatchObject({ code: "INVALID_REQUEST" });
      expect(strict.model.requests).toHaveLength(0);
      strict.model.script([{ content: "ok" }]);
      const given = await strict.invoke(runEvent({ key: "required-1" }));
      expect(given.statusCode).toBe(200);
    } finally {
      await strict.stop();
    }
  });
});

describe("parseIdempotencyKey", () => {
  it("accepts quoted sf-strings and bare tokens of 1 to 255 characters", () => {
    expect(parseIdempotencyKey(undefined)).toBeUndefined();
    expect(parseIdempotencyKey(null)).toBeUndefined();
    expect(parseIdempotencyKey('"8e03978e-40d5-43e8-bc93-6894a57f9324"')).toBe(
      "8e03978e-40d5-43e8-bc93-6894a57f9324",
    );
    expect(parseIdempotencyKey("8e03978e-40d5-43e8-bc93-6894a57f9324")).toBe(
      "8e03978e-40d5-43e8-bc93-6894a57f9324",
    );
    expect(parseIdempotencyKey(' "a \\"quoted\\" key \\\\ here" ')).toBe('a "quoted" key \\ here');
    expect(parseIdempotencyKey("order:2026/11/30")).toBe("order:2026/11/30");
    expect(parseIdempotencyKey(`"${"k".repeat(255)}"`)).toHaveLength(255);
    expect(parseIdempotencyKey("k".repeat(255))).toHaveLength(255);
  });

  it.each([
    ["empty", ""],
    ["empty quoted", '""'],
    ["256 characters", "k".repeat(256)],
    ["256 characters quoted", `"${"k".repeat(256)}"`],
    ["unterminated", '"abc'],
    ["bad escape", '"a\\nb"'],
    ["non-ASCII", '"café"'],
    ["control character", '"a\u0007b"'],
    ["two values (two headers)", '"a", "b"'],
    ["parameters", '"abc";v=1'],
    ["space in a bare token", "a b"],
    ["bare non-ASCII", "clé"],
  ])("rejects %s with 400 INVALID_REQUEST", (_name, value) => {
    expect(() => parseIdempotencyKey(value)).toThrow(ProblemError);
    try {
      parseIdempotencyKey(value);
    } catch (error) {
      expect((error as ProblemError).status).toBe(400);
      expect((error as ProblemError).code).toBe("INVALID_REQUEST");
    }
  });
});

/** Polls `check` every 20 ms until it is true (at most 5 s). */
async function waitFor(check: () => Promise<boolean>): Promise<void> {
  const until = Date.now() + 5_000;
  while (Date.now() < until) {
    if (await check()) return;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error("condition not met within 5 s");
}
