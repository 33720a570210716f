/**
 * A durable run's budget wait (docs/quotas.md "Durable runs wait") with the run's clock and the quotas'
 * clock injected apart: the run's clock dates its record and keeps its time, the time it waited included,
 * which does not count against its deadline; the quotas' clock decides the windows and how long the wait
 * may last. The real API handler, the durable runner on the SDK's local runner, DynamoDB Local, the local
 * model server.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { pollUntil } from "./support/approvals.js";
import { BUDGET_PROMPT, budgetWaitScript, putLimitsEvent } from "./support/budget-wait.js";
import { type DurableStack, startAsyncRun, startDurableStack } from "./support/durable.js";
import { ManualClock } from "./support/streaming.js";

/** The quotas' clock: 09:00 UTC today, so a budget wait times out 15 h later, never during the test. */
const QUOTAS_NOW = (() => {
  const today = new Date();
  return Date.UTC(today.getUTCFullYear(), today.getUTCMonth(), today.getUTCDate(), 9);
})();
/**
 * The run's clock, a minute after the quotas' and moved by the test: the same UTC day, since the runner
 * takes the run's start for the day it was admitted in (shared/durable/runner.ts `admittedState`).
 */
const clock = new ManualClock();
clock.advance(QUOTAS_NOW + 60_000 - clock.now());
const ASYNC_RUN_TIMEOUT_S = 600;
const iso = (ms: number) => new Date(ms).toISOString();

let stack: DurableStack;
beforeAll(async () => {
  stack = await startDurableStack(
    { USER_TOKENS_PER_DAY: "3500", ASYNC_RUN_TIMEOUT_MS: String(ASYNC_RUN_TIMEOUT_S * 1000) },
    { clock, quotas: { now: () => QUOTAS_NOW } },
  );
});
afterAll(async () => {
  await stack?.stop();
});

describe("a durable run waiting for budget, its clock apart from the quotas'", () => {
  it("is dated by the run's clock, and the time it waited on that clock does not count against its deadline", async () => {
    const tenantId = "tenant_qwait_clock";
    stack.model.script(budgetWaitScript());
    const startMs = clock.now();
    const started = await startAsyncRun(stack, tenantId, BUDGET_PROMPT);
    const paused = await pollUntil(stack, started.runId, tenantId, ["running"]);
    expect(paused.status).toBe("awaiting_quota");
    expect(paused.updatedAt).toBe(iso(startMs));
    // The run waits longer than its whole timeout on its own clock: waiting is not running.
    const waitedMs = (ASYNC_RUN_TIMEOUT_S + 100) * 1000;
    clock.advance(waitedMs);
    const raised = await stack.invoke(putLimitsEvent(tenantId, { user: { tokensPerDay: 100_000 } }));
    expect(raised.statusCode, raised.body).toBe(200);
    const done = await pollUntil(stack, started.runId, tenantId, ["running", "awaiting_quota"]);
    expect(done).toMatchObject({
      status: "completed",
      answer: "The tax is 20.00 GBP.",
      finishedAt: iso(startMs + waitedMs),
    });
  });
});
