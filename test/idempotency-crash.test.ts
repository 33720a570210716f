import type { ChildProcess } from "node:child_process";
import { randomUUID } from "node:crypto";
import { once } from "node:events";
import type { APIGatewayProxyStructuredResultV2 } from "aws-lambda";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RUN_ROUTE } from "../functions/api/run-idempotency.js";
import type { ToolResult } from "../shared/agent/result.js";
import { recordInvoiceArgs, runEvent } from "./support/idempotency.js";
import { spawnHandlerChild } from "./support/spawn-handler.js";
import { startTestStack, type TestStack } from "./support/stack.js";

/** The crashed run's budget, so its lease (= its deadline) ends this many ms after it started. */
const CHILD_RUN_TIMEOUT_MS = 4_000;

let stack: TestStack;
let child: ChildProcess | undefined;
beforeAll(async () => {
  stack = await startTestStack();
});
afterAll(async () => {
  child?.kill("SIGKILL");
  await stack?.stop();
});

/** Starts the real handler in its own Node process on the same table and model server. */
function startHandlerProcess(event: unknown): { process: ChildProcess; output: () => string } {
  return spawnHandlerChild("handler-child.ts", stack.config, event, {
    OPENAI_API_KEY: "",
    RUN_TIMEOUT_MS: String(CHILD_RUN_TIMEOUT_MS),
  });
}

async function waitFor(check: () => boolean | Promise<boolean>, what: string, ms = 30_000): Promise<void> {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    if (await check()) return;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  throw new Error(`timed out waiting for ${what}`);
}

const replayed = (response: APIGatewayProxyStructuredResultV2) => response.headers?.["idempotent-replayed"];

describe("a crash after the ledger write, before completion (PY #8049)", () => {
  it("the retry after the lease expires takes over, and no second invoice is written", async () => {
    const tenantId = `tenant_crash_${randomUUID().slice(0, 8)}`;
    const key = `crash-${randomUUID()}`;
    const store = stack.deps.idempotency;
    const args = await recordInvoiceArgs(stack.deps, tenantId);
    stack.model.script([
      // The process that will crash: records the invoice, then waits on the model until it is killed.
      { toolCalls: [{ id: "call_before_crash", name: "recordInvoice", arguments: args }] },
      { content: "never delivered", delayMs: 60_000 },
      // The retry: the model re-issues the same call under a new id, then answers.
      { toolCalls: [{ id: "call_after_crash", name: "recordInvoice", arguments: args }] },
      { content: "Recorded." },
    ]);
    const calls = stack.model.requests.length;
    const crashing = startHandlerProcess(runEvent({ key, tenantId }));
    child = crashing.process;
    // The second model request carries the recordInvoice tool result: the ledger item is written.
    await waitFor(() => stack.model.requests.length >= calls + 2, `the ledger write (${crashing.output()})`);
    const [invoice, ...others] = await stack.deps.ledger.list(tenantId);
    expect(others).toHaveLength(0);
    const held = await store.read(tenantId, "usr_idem", RUN_ROUTE, key);
    expect(held?.status).toBe("IN_PROGRESS");

    child.kill("SIGKILL");
    await once(child, "exit");
    expect(crashing.output()).not.toContain('"statusCode"');

    // Before the lease ends, a retry is told to wait.
    const early = await stack.invoke(runEvent({ key, tenantId }));
    expect(early.statusCode).toBe(409);
    expect(Number(early.headers?.["retry-after"])).toBeGreaterThanOrEqual(1);

    // After it, the retry takes over: it runs, and the invoice it reaches is the crashed run's.
    await waitFor(() => Date.now() > Number(held?.leaseExpiresAt) + 50, "the lease to expire", 10_000);
    const retry = await stack.invoke(runEvent({ key, tenantId }));
    expect([retry.statusCode, replayed(retry)]).toEqual([200, undefined]);
    const result = (JSON.parse(retry.body ?? "") as { toolResults: ToolResult[] }).toolResults[0];
    expect(result?.metadata.toolCallId).toBe("call_after_crash");
    expect(result?.metadata.idempotencyKey).toBe(invoice?.idempotencyKey);
    expect(result?.data).toMatchObject({ replayed: true, invoice: { invoiceId: invoice?.invoiceId } });
    expect(await stack.deps.ledger.list(tenantId)).toHaveLength(1);

    const completed = await store.read(tenantId, "usr_idem", RUN_ROUTE, key);
    expect(completed?.status).toBe("COMPLETED");
    expect(completed?.owner).not.toBe(held?.owner);
    expect(completed?.response?.body).toBe(retry.body);

    const again = await stack.invoke(runEvent({ key, tenantId }));
    expect([again.statusCode, replayed(again), again.body]).toEqual([200, "true", retry.body]);
    expect(stack.model.requests.length).toBe(calls + 4);
  }, 60_000);
});
