/**
 * A durable run that crosses midnight UTC and is cancelled (docs/quotas.md "Reservations", "At a
 * cancel"), with injected clocks: admitted in a day's last millisecond, its record started (and its
 * model calls made) the next day, cancelled while it waits for approval: admission's slot in the first day is
 * given back when the run first holds in the second, and the cancel gives back its slot and the rest of its hold
 * there; neither day is left with a run in flight. The real API handler, the durable runner on the
 * SDK's local runner, DynamoDB Local and the local model server.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RunRecordSchema } from "../functions/api/contract.js";
import type { RecordedRequest, ScriptedReply } from "../local/model-server.js";
import { SYSTEM_CLOCK } from "../shared/clock.js";
import { GBP_RULES, json, pollUntil, SEED_PROMPT } from "./support/approvals.js";
import { type DurableStack, runPathEvent, startAsyncRun, startDurableStack } from "./support/durable.js";

/**
 * The next midnight UTC: the model call's timeout is the run's deadline less the wall clock, which a
 * timer must be able to wait (under 2^31 ms).
 */
const MIDNIGHT = Math.ceil(Date.now() / 86_400_000) * 86_400_000;
let now = MIDNIGHT - 1;
/**
 * The run's clock (its record's start, deadline) reads 00:00:00.002 while the quotas' read a day's last
 * second (after 23:59:59.000): the record is started just after the admission, across midnight.
 */
const runClock = {
  ...SYSTEM_CLOCK,
  now: () => (now > MIDNIGHT - 1_000 && now < MIDNIGHT ? MIDNIGHT + 2 : now),
};
let stack: DurableStack;
beforeAll(async () => {
  stack = await startDurableStack(
    { MAX_CYCLES: "5", APPROVAL_RULES: GBP_RULES, USER_TOKENS_PER_DAY: "100000" },
    { quotas: { now: () => now }, clock: runClock },
  );
});
afterAll(async () => {
  await stack?.stop();
});

/** calculateTax, then recordInvoice of its quote (1800.00 GBP gross: over GBP_RULES, so it waits for approval). */
function seedResponder(request: RecordedRequest): ScriptedReply {
  const tool = request.messages.filter((message) => message.role === "tool");
  const usage = { prompt_tokens: 1_000, completion_tokens: 50 };
  if (tool.length === 0) {
    const args = { amount: "1500.00", currency: "GBP", jurisdiction: "GB" };
    return { toolCalls: [{ id: "c1", name: "calculateTax", arguments: JSON.stringify(args) }], usage };
  }
  const quoteId = (JSON.parse(String(tool[0]?.content)) as { data: { quoteId: string } }).data.quoteId;
  const args = { clientName: "UK client", quoteId, clientReference: null, description: null };
  return { toolCalls: [{ id: "c2", name: "recordInvoice", arguments: JSON.stringify(args) }], usage };
}

/** The tenant's usage on the day of `at`, by the quotas' clock. */
async function usageAt(at: number, tenantId: string) {
  now = at;
  const usage = await stack.deps.quotas?.usage({ tenantId, userId: "usr_idem" }, true);
  if (!usage?.tenant) throw new Error("quotas are on");
  return usage;
}

/**
 * Starts the seed scenario as a durable run of `tenantId` at `admittedAt` (the quotas' clock), its first
 * model step after midnight, cancels it once it waits for approval, and checks both days: no slot, no
 * hold left in either; its calls (2 × 1,050 tokens) counted in the second.
 */
async function cancelledAcrossMidnight(tenantId: string, admittedAt: number, startedAt: number) {
  now = admittedAt;
  stack.model.respond(seedResponder);
  stack.faults.beforeStep = (name) => {
    if (name === "cycle-1:model") now = MIDNIGHT + 500;
  };
  const started = await startAsyncRun(stack, tenantId, SEED_PROMPT);
  expect(started.startedAt).toBe(new Date(startedAt).toISOString());
  const run = await pollUntil(stack, started.runId, tenantId, ["running"]);
  expect(run.status).toBe("awaiting_approval");
  stack.faults.beforeStep = undefined;
  expect((await usageAt(MIDNIGHT - 1, tenantId)).tenant?.inFlight.runs).toBe(0);
  const waiting = await usageAt(MIDNIGHT + 5_000, tenantId);
  expect(waiting.tenant?.inFlight.runs).toBe(1);
  expect(waiting.user.day.tokens.reserved).toBeGreaterThan(0);

  now = MIDNIGHT + 6_000;
  const cancelled = await stack.invoke(runPathEvent(run.runId, tenantId, "cancel"));
  expect(cancelled.statusCode, cancelled.body).toBe(200);
  expect(RunRecordSchema.parse(json(cancelled)).status).toBe("cancelled");
  await stack.executions.get(run.runId)?.done;

  const second = await usageAt(MIDNIGHT + 7_000, tenantId);
  expect(second.tenant?.inFlight.runs).toBe(0);
  expect(second.user.day.tokens).toEqual({ used: 2_100, reserved: 0, limit: 100_000 });
  const first = await usageAt(MIDNIGHT - 1, tenantId);
  expect(first.tenant?.inFlight.runs).toBe(0);
  expect(first.user.day).toMatchObject({ runs: 1, tokens: { used: 0, reserved: 0, limit: 100_000 } });
}

describe("a durable run that crosses midnight UTC, cancelled while it waits for approval", () => {
  it("admitted at 23:59:59.999 and started at 00:00:00.002: no slot is left in the first day; its slot and the rest of its hold in the second are given back", async () => {
    await cancelledAcrossMidnight("tenant_cancel_midnight", MIDNIGHT - 1, MIDNIGHT + 2);
  });

  it("admitted and started at 23:59:59, its calls made after midnight: the cancel gives back what it holds in the second day, by the quotas' clock", async () => {
    await cancelledAcrossMidnight("tenant_cancel_midnight_2", MIDNIGHT - 1_000, MIDNIGHT - 1_000);
  });
});

describe("a durable run admitted before midnight UTC, started after it, cancelled before its first model step", () => {
  it("admitted at 23:59:59.900, its record started at 00:00:00.002: the cancel gives back admission's slot in the first day", async () => {
    const tenantId = "tenant_cancel_midnight_3";
    now = MIDNIGHT - 100;
    stack.model.respond(seedResponder);
    let reached: () => void = () => {};
    const atModel = new Promise<void>((resolve) => {
      reached = resolve;
    });
    let release: () => void = () => {};
    const cancelled = new Promise<void>((resolve) => {
      release = resolve;
    });
    // The first model step waits for the cancel, then is cut off before its work (no reservation).
    stack.faults.beforeStep = async (name) => {
      if (name !== "cycle-1:model") return;
      reached();
      await cancelled;
      throw new Error("cut off before the model step's work");
    };
    const started = await startAsyncRun(stack, tenantId, SEED_PROMPT);
    expect(started.startedAt).toBe(new Date(MIDNIGHT + 2).toISOString());
    await atModel;
    expect((await usageAt(MIDNIGHT - 1, tenantId)).tenant?.inFlight.runs).toBe(1);

    now = MIDNIGHT + 6_000;
    try {
      const response = await stack.invoke(runPathEvent(started.runId, tenantId, "cancel"));
      expect(response.statusCode, response.body).toBe(200);
      expect(RunRecordSchema.parse(json(response)).status).toBe("cancelled");
    } finally {
      release();
      await stack.executions.get(started.runId)?.done;
      stack.faults.beforeStep = undefined;
    }

    const first = await usageAt(MIDNIGHT - 1, tenantId);
    expect(first.tenant?.inFlight.runs).toBe(0);
    expect(first.user.day.runs).toBe(1);
    const second = await usageAt(MIDNIGHT + 7_000, tenantId);
    expect(second.tenant?.inFlight.runs).toBe(0);
    expect(second.user.day.tokens.used).toBe(0);
  });
});
