/**
 * An Idempotency-Key belongs to one caller (tenant, user), on every path that reads it: the synchronous
 * replay, the durable start (`Prefer: respond-async`) and its takeover after a crashed start, and the
 * tool idempotency keys a run derives from it. Through the real handler, DynamoDB Local, the local model
 * server and (durable paths) the durable SDK's local runner.
 */
import { randomUUID } from "node:crypto";
import type { APIGatewayProxyStructuredResultV2 } from "aws-lambda";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { dispatchToolCall } from "../shared/agent/dispatcher.js";
import { toolIdempotencyKey } from "../shared/agent/idempotency-key.js";
import { type DurableStack, startDurableStack } from "./support/durable.js";
import { crashStarts, runEvent } from "./support/idempotency.js";
import { startTestStack, type TestStack } from "./support/stack.js";

type Result = APIGatewayProxyStructuredResultV2;
const json = (response: Result) => JSON.parse(response.body ?? "") as Record<string, unknown>;
const replayed = (response: Result) => response.headers?.["idempotent-replayed"];
const tenant = () => `tenant_${randomUUID().slice(0, 8)}`;
const TAX_ARGS = { amount: "100.00", currency: "GBP", jurisdiction: "GB", taxPointDate: null };
const BODY = JSON.stringify({ prompt: "What is the UK tax on 100.00 GBP?" });

/** The quoteId of the calculateTax result in a synchronous run's response. */
const quoteIdOf = (response: Result) =>
  (json(response).toolResults as Array<{ data: { quoteId?: string } | null }>)[0]?.data?.quoteId;

describe("synchronous runs", () => {
  let stack: TestStack;
  beforeAll(async () => {
    stack = await startTestStack();
  });
  afterAll(() => stack?.stop());

  const scriptQuote = () =>
    stack.model.script([
      { toolCalls: [{ id: "call_1", name: "calculateTax", arguments: JSON.stringify(TAX_ARGS) }] },
      { content: "The tax is 20.00 GBP." },
    ]);
  const post = (tenantId: string, userId: string, key: string) =>
    stack.invoke(runEvent({ key, tenantId, userId, body: BODY }));

  it("user B of the same tenant sending A's key and body runs its own run and gets its own quote, not A's stored answer", async () => {
    const tenantId = tenant();
    const key = `k-${randomUUID()}`;
    scriptQuote();
    const a = await post(tenantId, "usr_a", key);
    expect(a.statusCode, a.body).toBe(200);
    scriptQuote();
    const calls = stack.model.requests.length;
    const b = await post(tenantId, "usr_b", key);
    expect(b.statusCode, b.body).toBe(200);
    expect(replayed(b)).toBeUndefined();
    expect(stack.model.requests.length - calls).toBe(2);
    expect(json(b).runId).not.toBe(json(a).runId);
    // The tool keys derive from the caller too: B's calculateTax is another operation, another quote.
    expect(quoteIdOf(b)).toMatch(/^q/);
    expect(quoteIdOf(b)).not.toBe(quoteIdOf(a));
    expect((await stack.deps.runs.get(tenantId, String(json(b).runId)))?.run.userId).toBe("usr_b");
    // Each caller's retry replays its own answer.
    const againA = await post(tenantId, "usr_a", key);
    const againB = await post(tenantId, "usr_b", key);
    expect([replayed(againA), replayed(againB)]).toEqual(["true", "true"]);
    expect([json(againA).runId, json(againB).runId]).toEqual([json(a).runId, json(b).runId]);
    expect(stack.model.requests.length - calls).toBe(2);
  });

  it("the same tool call under the same run scope is another operation for another user or tenant (tool keys, quotes)", async () => {
    const base = {
      tenantId: "tenant_uk_01",
      userId: "usr_a",
      runScope: "order-42",
      toolName: "recordInvoice",
      args: { quoteId: "q_1", clientName: "Acme Ltd" },
      occurrence: 0,
    };
    const key = toolIdempotencyKey(base);
    expect(toolIdempotencyKey({ ...base, args: { clientName: "Acme Ltd", quoteId: "q_1" } })).toBe(key);
    expect(toolIdempotencyKey({ ...base, userId: "usr_b" })).not.toBe(key);
    expect(toolIdempotencyKey({ ...base, tenantId: "tenant_other" })).not.toBe(key);
    // Through the dispatcher and the quote store: calculateTax's quote id derives from its operation key.
    const tenantId = tenant();
    const runScope = `order-${randomUUID()}`;
    const quote = async (userId: string, tenantOf = tenantId) => {
      const result = await dispatchToolCall(
        { id: "call_1", name: "calculateTax", arguments: JSON.stringify(TAX_ARGS) },
        stack.deps.tools,
        { userId, tenantId: tenantOf, permissions: [] },
        { runId: `run_${randomUUID()}`, runScope, occurrence: 0, signal: new AbortController().signal },
      );
      expect(result.status).toBe("success");
      return (result.data as { quoteId: string }).quoteId;
    };
    const [a, aAgain, b, otherTenant] = [
      await quote("usr_a"),
      await quote("usr_a"),
      await quote("usr_b"),
      await quote("usr_a", tenant()),
    ];
    expect(aAgain).toBe(a);
    expect(b).not.toBe(a);
    expect(otherTenant).not.toBe(a);
  });
});

describe("durable runs (Prefer: respond-async)", () => {
  let stack: DurableStack;
  beforeAll(async () => {
    stack = await startDurableStack();
    stack.model.usePlanner();
  });
  afterAll(() => stack?.stop());

  const startAsync = (tenantId: string, userId: string, key: string) => {
    const event = runEvent({ key, tenantId, userId, body: BODY });
    event.headers = { ...event.headers, prefer: "respond-async" };
    return stack.invoke(event);
  };
  /** Waits until the durable run has left `running`/`awaiting_approval` (so teardown finds it settled). */
  const settled = async (tenantId: string, runId: string) => {
    for (const until = Date.now() + 25_000; Date.now() < until; ) {
      const found = await stack.deps.runs.get(tenantId, runId);
      if (found && found.run.status !== "running") return found.run;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    throw new Error(`run ${runId} did not finish`);
  };

  it("another user's, or another tenant's, start with A's key and body is its own run and execution, not A's 202 replayed", async () => {
    const tenantId = tenant();
    const key = `k-${randomUUID()}`;
    const a = await startAsync(tenantId, "usr_a", key);
    expect(a.statusCode, a.body).toBe(202);
    const b = await startAsync(tenantId, "usr_b", key);
    const other = await startAsync(tenant(), "usr_a", key);
    for (const response of [b, other]) {
      expect(response.statusCode, response.body).toBe(202);
      expect(replayed(response)).toBeUndefined();
      expect(json(response).runId).not.toBe(json(a).runId);
    }
    expect(json(b)).toMatchObject({ userId: "usr_b", tenantId });
    const againA = await startAsync(tenantId, "usr_a", key);
    expect(replayed(againA)).toBe("true");
    expect(json(againA).runId).toBe(json(a).runId);
    expect((await settled(tenantId, String(json(b).runId))).userId).toBe("usr_b");
    expect((await settled(tenantId, String(json(a).runId))).userId).toBe("usr_a");
    await settled(String(json(other).tenantId), String(json(other).runId));
  });

  it("the fingerprint is the route and body, not Prefer: the same key sent the other way replays the first answer", async () => {
    const tenantId = tenant();
    const syncKey = `k-${randomUUID()}`;
    const sync = await stack.invoke(runEvent({ key: syncKey, tenantId, userId: "usr_a", body: BODY }));
    expect(sync.statusCode, sync.body).toBe(200);
    const thenAsync = await startAsync(tenantId, "usr_a", syncKey);
    expect([thenAsync.statusCode, replayed(thenAsync), json(thenAsync).runId]).toEqual([
      200,
      "true",
      json(sync).runId,
    ]);
    const asyncKey = `k-${randomUUID()}`;
    const accepted = await startAsync(tenantId, "usr_a", asyncKey);
    expect(accepted.statusCode, accepted.body).toBe(202);
    const thenSync = await stack.invoke(runEvent({ key: asyncKey, tenantId, userId: "usr_a", body: BODY }));
    expect([thenSync.statusCode, replayed(thenSync), json(thenSync).runId]).toEqual([
      202,
      "true",
      json(accepted).runId,
    ]);
    await settled(tenantId, String(json(accepted).runId));
  });

  it("user B never takes over A's unfinished start (A's lease passed): B gets a run of its own, A's run stays A's", async () => {
    const tenantId = tenant();
    const key = `k-${randomUUID()}`;
    const a = await startAsync(tenantId, "usr_a", key);
    expect(a.statusCode, a.body).toBe(202);
    const runA = String(json(a).runId);
    await settled(tenantId, runA);
    // A's start "crashed" after starting its execution: its record is back to IN_PROGRESS, lease passed.
    expect(await crashStarts(stack, tenantId)).toHaveLength(1);
    const b = await startAsync(tenantId, "usr_b", key);
    expect(b.statusCode, b.body).toBe(202);
    expect(json(b)).toMatchObject({ userId: "usr_b" });
    expect(json(b).runId).not.toBe(runA);
    expect((await settled(tenantId, String(json(b).runId))).userId).toBe("usr_b");
    expect((await stack.deps.runs.get(tenantId, runA))?.run.userId).toBe("usr_a");
    // A's own retry takes its start over and gets its own run back.
    const againA = await startAsync(tenantId, "usr_a", key);
    expect(againA.statusCode, againA.body).toBe(202);
    expect(json(againA)).toMatchObject({ runId: runA, userId: "usr_a" });
  });
});
