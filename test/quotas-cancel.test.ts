/**
 * A cancelled run and the quotas (docs/quotas.md "Reservations", "At the end"), and what a run waiting
 * for approval shows of its model calls: a durable run cancelled while it waits for a decision is
 * charged what its calls used (tokens, cost, the run) and gives back only the rest of its hold, once;
 * the run record counts the call of the cycle that paused. The real API handler, the durable runner on
 * the SDK's local runner, DynamoDB Local and the local model server over HTTP.
 */
import { describe, expect, it } from "vitest";
import { LimitsResponseSchema, QuotaUsageSchema } from "../functions/api/contract/quotas.js";
import { RunRecordSchema } from "../functions/api/contract.js";
import { eventForRoute } from "../local/durable-runner.js";
import type { RecordedRequest, ScriptedReply } from "../local/model-server.js";
import { quotaRef, runKey } from "../shared/quotas/item.js";
import { markerName } from "../shared/store/counters.js";
import { decide, GBP_RULES, json, pollUntil, SEED_PROMPT } from "./support/approvals.js";
import { putLimitsEvent } from "./support/budget-wait.js";
import { durableStackForFile, runPathEvent, startAsyncRun } from "./support/durable.js";
import { runEvent } from "./support/idempotency.js";

const PRICES = JSON.stringify({
  "gpt-4o-mini": { inputPerMillion: "0.15", outputPerMillion: "0.60", currency: "USD" },
});
const stack = durableStackForFile({ MAX_CYCLES: "5", APPROVAL_RULES: GBP_RULES, MODEL_PRICES: PRICES });

/** The first call's usage (1,456 tokens) and the second's (1,814), the one that asks for approval. */
const FIRST = { prompt_tokens: 1_400, completion_tokens: 56 };
const SECOND = { prompt_tokens: 1_780, completion_tokens: 34 };
/** Their cost at the prices above, in micro-units: 1400 × 0.15 + 56 × 0.60 = 243.6 → 244; 267 + 20.4 → 287. */
const COST_MICRO = 244 + 287;

/**
 * The model of the seed scenario with fixed usage: calculateTax, then recordInvoice of the quote it
 * got (1800.00 GBP gross: over GBP_RULES, so it needs approval), then the answer.
 */
function seedResponder(request: RecordedRequest): ScriptedReply {
  const tool = request.messages.filter((message) => message.role === "tool");
  if (tool.length === 0) {
    const args = { amount: "1500.00", currency: "GBP", jurisdiction: "GB" };
    return { toolCalls: [{ id: "c1", name: "calculateTax", arguments: JSON.stringify(args) }], usage: FIRST };
  }
  if (tool.length === 1) {
    const quoteId = (JSON.parse(String(tool[0]?.content)) as { data: { quoteId: string } }).data.quoteId;
    const args = { clientName: "UK client", quoteId, clientReference: null, description: null };
    return {
      toolCalls: [{ id: "c2", name: "recordInvoice", arguments: JSON.stringify(args) }],
      usage: SECOND,
    };
  }
  return { content: "Recorded.", usage: { prompt_tokens: 2_000, completion_tokens: 10 } };
}

/** `GET /v1/usage` of the tenant, as its usr_idem with billing:read. */
async function usageOf(tenantId: string) {
  const event = eventForRoute(runEvent({ tenantId, scope: "billing:read" }), "GET", "/v1/usage");
  const response = await stack.invoke(event);
  expect(response.statusCode).toBe(200);
  return QuotaUsageSchema.parse(json(response));
}

/**
 * Expects the tenant's day (and its usr_idem's) to count one run, `tokens` used and `micro` micro-units
 * of cost, nothing reserved and no run in flight.
 */
async function charged(tenantId: string, used: { tokens: number; micro: number }) {
  const usage = await usageOf(tenantId);
  for (const scope of [usage.user, usage.tenant]) {
    expect(scope?.day.tokens).toMatchObject({ used: used.tokens, reserved: 0 });
    expect(scope?.day.cost.used).toBe(`0.${String(used.micro).padStart(6, "0")}`);
    expect(scope?.day.runs).toBe(1);
  }
  expect(usage.tenant?.inFlight.runs).toBe(0);
}

/** Starts the seed scenario as a durable run of `tenantId` and waits until it pauses for approval. */
async function pausedRun(tenantId: string) {
  stack.model.respond(seedResponder);
  const started = await startAsyncRun(stack, tenantId, SEED_PROMPT);
  const run = await pollUntil(stack, started.runId, tenantId, ["running"]);
  expect(run.status).toBe("awaiting_approval");
  return run;
}

describe("a durable run waiting for approval", () => {
  it("shows in its record the model call of the cycle that paused: two calls, two cycles", async () => {
    const run = await pausedRun("tenant_qc_paused");
    expect(run.usage.totalTokens).toBe(1_456 + 1_814);
    expect(run.usage).toMatchObject({ promptTokens: 1_400 + 1_780, completionTokens: 56 + 34 });
    expect(run.cycles ?? run.cyclesRecorded).toBe(2);
  });
});

describe("a durable run cancelled while it waits for approval", () => {
  it("is charged its calls' tokens and cost and the run, gives back the rest of its hold, once", async () => {
    const tenantId = "tenant_qc_cancel";
    const run = await pausedRun(tenantId);
    const cancel = () => stack.invoke(runPathEvent(run.runId, tenantId, "cancel"));
    const cancelled = await cancel();
    expect(cancelled.statusCode, cancelled.body).toBe(200);
    expect(RunRecordSchema.parse(json(cancelled)).status).toBe("cancelled");

    const expected = async () => charged(tenantId, { tokens: 1_456 + 1_814, micro: COST_MICRO });
    await expected();

    // A retried cancel, and a release made again (as a cancel that failed after it would), change nothing.
    expect((await cancel()).statusCode).toBe(409);
    const startedAt = Date.parse(run.startedAt);
    expect(await stack.deps.quotas?.releaseRun(tenantId, run.runId, [startedAt, Date.now()])).toBe(0);
    await stack.executions.get(run.runId)?.done;
    await expected();
  });
});

/** The seed scenario as a synchronous run of `tenantId`: it pauses for approval and is handed over. */
async function handedOver(tenantId: string) {
  stack.model.respond(seedResponder);
  const response = await stack.invoke(runEvent({ tenantId, prompt: SEED_PROMPT }));
  expect(response.statusCode, response.body).toBe(202);
  const run = RunRecordSchema.parse(json(response));
  expect(run.status).toBe("awaiting_approval");
  return run;
}

describe("a synchronous run handed over at an approval", () => {
  it("counts both calls while it waits; cancelled, it is charged for them and gives back the rest", async () => {
    const tenantId = "tenant_qc_sync_cancel";
    const run = await handedOver(tenantId);
    expect(run.usage.totalTokens).toBe(1_456 + 1_814);
    expect(run.cycles ?? run.cyclesRecorded).toBe(2);
    const cancelled = await stack.invoke(runPathEvent(run.runId, tenantId, "cancel"));
    expect(cancelled.statusCode, cancelled.body).toBe(200);
    await charged(tenantId, { tokens: 1_456 + 1_814, micro: COST_MICRO });
  });

  it("approved, completes with every call counted once, in its record and in the quotas", async () => {
    const tenantId = "tenant_qc_sync_done";
    const run = await handedOver(tenantId);
    const approvalId = run.pendingApprovals?.[0]?.approvalId ?? "";
    expect((await decide(stack, { runId: run.runId, approvalId, tenantId }, "approve")).statusCode).toBe(200);
    const done = await pollUntil(stack, run.runId, tenantId);
    expect(done).toMatchObject({ status: "completed", cycles: 3, cyclesRecorded: 3 });
    // The answer's call: 2000 × 0.15 + 10 × 0.60 = 306 micro-units.
    expect(done.usage.totalTokens).toBe(1_456 + 1_814 + 2_010);
    expect(done.cost).toEqual({ amount: `0.000${COST_MICRO + 306}`, currency: "USD" });
    await charged(tenantId, { tokens: 1_456 + 1_814 + 2_010, micro: COST_MICRO + 306 });
  });
});

describe("a durable run cancelled while it runs", () => {
  it("is charged for the cycles it recorded; the call cut off by the stop is not", async () => {
    const tenantId = "tenant_qc_running";
    let release: () => void = () => {};
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    stack.model.respond((request) => {
      const reply = seedResponder(request);
      return reply.usage === SECOND ? { ...reply, heldUntil: held } : reply;
    });
    const started = await startAsyncRun(stack, tenantId, SEED_PROMPT);
    const until = Date.now() + 20_000;
    let recorded = started;
    while (recorded.cyclesRecorded < 1 && Date.now() < until) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      recorded = RunRecordSchema.parse(json(await stack.invoke(runPathEvent(started.runId, tenantId))));
    }
    expect(recorded).toMatchObject({ status: "running", cyclesRecorded: 1 });
    try {
      const cancelled = await stack.invoke(runPathEvent(started.runId, tenantId, "cancel"));
      expect(cancelled.statusCode, cancelled.body).toBe(200);
    } finally {
      release();
    }
    await charged(tenantId, { tokens: 1_456, micro: 244 });
  });
});

describe("a durable run cancelled while it waits for budget", () => {
  it("is charged for the calls it made; nothing stays reserved", async () => {
    const tenantId = "tenant_qc_quota";
    const changed = await stack.invoke(putLimitsEvent(tenantId, { user: { tokensPerDay: 3_500 } }));
    expect(LimitsResponseSchema.parse(json(changed)).limits.user.tokensPerDay).toBe(3_500);
    // The second call's 1,814 tokens leave too few for the third's prompt: the run waits for budget.
    stack.model.respond((request) => {
      const reply = seedResponder(request);
      const calc = { amount: "100.00", currency: "GBP", jurisdiction: "GB" };
      return reply.usage === SECOND
        ? { toolCalls: [{ id: "c2", name: "calculateTax", arguments: JSON.stringify(calc) }], usage: SECOND }
        : reply;
    });
    const started = await startAsyncRun(stack, tenantId, SEED_PROMPT);
    const waiting = await pollUntil(stack, started.runId, tenantId, ["running"]);
    expect(waiting.status).toBe("awaiting_quota");
    const cancelled = await stack.invoke(runPathEvent(started.runId, tenantId, "cancel"));
    expect(cancelled.statusCode, cancelled.body).toBe(200);
    await charged(tenantId, { tokens: 1_456 + 1_814, micro: COST_MICRO });
  });
});

describe("a run's end and its cancel's release, in either order", () => {
  const quotas = () => {
    if (!stack.deps.quotas) throw new Error("the stack has quotas");
    return stack.deps.quotas;
  };
  const expiresAtSeconds = Math.floor(Date.now() / 1000) + 3_600;
  /** One call of 1,000 tokens: 900 × 0.15 + 100 × 0.60 = 195 micro-units. */
  const released = { userId: "usr_idem", usage: { tokens: 1_000, costMicro: 195 } };
  const days = [Date.now()];

  /** A run of `tenantId` admitted with a hold, and its one call made under that hold. */
  async function ranOnce(tenantId: string, runId: string) {
    const subject = { tenantId, userId: "usr_idem", runId };
    const firstCall = { promptTokens: 1_000, maxTokens: 2_000 };
    const admitted = await quotas().admit(subject, { expiresAtSeconds, firstCall });
    const budget = quotas().budget(subject, admitted.state, {
      expiresAtSeconds: () => expiresAtSeconds,
      onStoreFailure: "throw",
    });
    const call = { step: "cycle-1:model", cycle: 1, ...firstCall };
    budget.observe(await budget.reserve(call), {
      promptTokens: 900,
      completionTokens: 100,
      totalTokens: 1_000,
    });
    return budget;
  }

  it("count the run's calls once: whichever comes second finds the marker gone and changes nothing", async () => {
    const cancelFirst = await ranOnce("tenant_qc_order_a", "run_order_a");
    expect(await quotas().releaseRun("tenant_qc_order_a", "run_order_a", days, released)).toBe(1);
    await cancelFirst.finish();
    await charged("tenant_qc_order_a", { tokens: 1_000, micro: 195 });

    const finishFirst = await ranOnce("tenant_qc_order_b", "run_order_b");
    await finishFirst.finish();
    expect(await quotas().releaseRun("tenant_qc_order_b", "run_order_b", days, released)).toBe(0);
    await charged("tenant_qc_order_b", { tokens: 1_000, micro: 195 });
  });

  it("a marker written before markers kept what was counted gives its whole hold back, as before", async () => {
    const tenantId = "tenant_qc_legacy";
    await ranOnce(tenantId, "run_legacy");
    // The run's next write as code that kept no `counted` made it: version 2, the same hold.
    const ref = quotaRef(tenantId, Date.now());
    const marker = (await quotas().counters.read(ref)).markers.get(markerName(runKey("run_legacy")));
    const to = { version: 2, open: marker?.open ?? {}, expiresAtSeconds };
    const moved = await quotas().counters.change(ref, {
      reservation: { key: runKey("run_legacy"), from: 1, to },
    });
    expect(moved.kind).toBe("applied");
    expect(await quotas().releaseRun(tenantId, "run_legacy", days, released)).toBe(1);
    await charged(tenantId, { tokens: 0, micro: 0 });
  });
});
