/**
 * A durable start whose admission and run record straddle midnight UTC (docs/quotas.md "Admission",
 * "Durable runs wait"): one clock for the run and the quotas, moved 2 ms past midnight as the quotas read
 * it, so the start's reads land on both sides of midnight in the order the start makes them. The runner
 * takes the run's start for the day it was admitted in; whatever the order, its first model call is held
 * against the day's limits like any other. The real API handler, the durable runner on the SDK's local
 * runner, DynamoDB Local, the local model server.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { pollUntil } from "./support/approvals.js";
import { BUDGET_PROMPT } from "./support/budget-wait.js";
import { type DurableStack, runPathEvent, startAsyncRun, startDurableStack } from "./support/durable.js";
import { ManualClock } from "./support/streaming.js";

/** Midnight UTC starting 2030-01-16: far from any day this test runs on. */
const MIDNIGHT = Date.UTC(2030, 0, 16);
const clock = new ManualClock();
clock.advance(MIDNIGHT - 1 - clock.now());

let stack: DurableStack;
beforeAll(async () => {
  stack = await startDurableStack(
    { USER_TOKENS_PER_DAY: "100" },
    {
      clock,
      quotas: {
        now: () => {
          // The first read by the quotas crosses midnight: what the start read before is the day before.
          if (clock.now() < MIDNIGHT) clock.advance(2);
          return clock.now();
        },
      },
    },
  );
});
afterAll(async () => {
  await stack?.stop();
});

describe("a durable start across midnight UTC", () => {
  it("holds the run's first model call against the day's limit: too few tokens left, it waits for budget", async () => {
    const tenantId = "tenant_start_midnight";
    stack.model.script([{ content: "Nothing to do." }]);
    const started = await startAsyncRun(stack, tenantId, BUDGET_PROMPT);
    const run = await pollUntil(stack, started.runId, tenantId, ["running"]);
    expect(run.status).toBe("awaiting_quota");
    const cancelled = await stack.invoke(runPathEvent(started.runId, tenantId, "cancel"));
    expect(cancelled.statusCode, cancelled.body).toBe(200);
    await stack.executions.get(started.runId)?.done.catch(() => undefined);
  });
});
