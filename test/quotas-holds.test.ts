/**
 * How much a run holds (docs/quotas.md "Reservations", shared/quotas/holds.ts): under an ample budget a
 * run holds its remaining calls' worst case once, at admission, grants its calls from that hold without
 * a write and settles once at its end; under a tight one (the run's worst case more than a tenth of what
 * is left) it holds one call's worst case at a time; a crashed run's hold is taken back once its marker
 * expired. DynamoDB Local, the real handler and the quotas.
 */
import type { APIGatewayProxyStructuredResultV2 } from "aws-lambda";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RunResponseSchema } from "../functions/api/contract.js";
import type { BudgetDecision } from "../shared/agent/budget.js";
import { runEvent } from "./support/idempotency.js";
import { startTestStack, type TestStack } from "./support/stack.js";

const body = (response: APIGatewayProxyStructuredResultV2) => JSON.parse(response.body ?? "{}");
const PROMPT = "Calculate tax on 100 GBP for a client in the UK.";
const GB_TAX = JSON.stringify({ amount: "100.00", currency: "GBP", jurisdiction: "GB" });
const taxCall = (id: string) => ({ id, name: "calculateTax", arguments: GB_TAX });
const bounds = { maxCycles: 5, maxTotalTokens: 100_000 };
const firstCall = { promptTokens: 1_000, maxTokens: 512 };
const usage = (promptTokens: number, completionTokens: number) => ({
  promptTokens,
  completionTokens,
  totalTokens: promptTokens + completionTokens,
});

let stack: TestStack;
beforeAll(async () => {
  stack = await startTestStack({
    TENANT_TOKENS_PER_DAY: "1000000",
    USER_TOKENS_PER_DAY: "30000",
    POWERTOOLS_LOG_LEVEL: "SILENT",
  });
});
afterAll(async () => {
  await stack?.stop();
});

/** The quotas of the stack (on: limits are set). */
function quotasOf() {
  const quotas = stack.deps.quotas;
  if (!quotas) throw new Error("quotas are on");
  return quotas;
}

/** Records the commands of every request to a day's quota item until `stop()`. */
function countQuotaRequests(): { writes: string[]; stop: () => void } {
  const writes: string[] = [];
  const name = "countQuotaRequests";
  stack.deps.ddb.middlewareStack.add(
    (next, context) => async (args) => {
      if (JSON.stringify((args as { input?: unknown }).input).includes("COUNTER#quota"))
        writes.push(String(context.commandName));
      return next(args);
    },
    { step: "initialize", name },
  );
  return { writes, stop: () => stack.deps.ddb.middlewareStack.remove(name) };
}

describe("a run under an ample budget", () => {
  it("writes its quota twice (admission holding its calls, the finish settling them) however many calls it makes", async () => {
    await quotasOf().setLimits(
      "tenant_ample",
      { user: { tokensPerDay: 1_000_000 } },
      { userId: "usr_admin", at: new Date().toISOString() },
    );
    const { writes, stop } = countQuotaRequests();
    try {
      stack.model.script([
        { toolCalls: [taxCall("c1")], usage: { prompt_tokens: 1_100, completion_tokens: 40 } },
        { toolCalls: [taxCall("c2")], usage: { prompt_tokens: 1_200, completion_tokens: 45 } },
        { content: "Done.", usage: { prompt_tokens: 1_300, completion_tokens: 12 } },
      ]);
      const outcome = RunResponseSchema.parse(
        body(await stack.invoke(runEvent({ tenantId: "tenant_ample", userId: "usr_a", prompt: PROMPT }))),
      );
      expect(outcome.status).toBe("completed");
      expect(outcome.cycles).toBe(3);
      // The user's million tokens leave more than ten times the run's worst case: admission and finish only.
      expect(writes).toEqual(["UpdateItemCommand", "UpdateItemCommand"]);
      // max_tokens stays the cap (MODEL_MAX_TOKENS 4096): the hold covers every call's worst case.
      expect(stack.model.requests.slice(-3).map((request) => request.body.max_tokens)).toEqual([
        4_096, 4_096, 4_096,
      ]);
    } finally {
      stop();
    }
    const view = await quotasOf().usage({ tenantId: "tenant_ample", userId: "usr_a" }, true);
    expect(view.user.day.tokens).toEqual({ used: 1_140 + 1_245 + 1_312, reserved: 0, limit: 1_000_000 });
    expect(view.tenant?.inFlight.runs).toBe(0);
  });

  it("under a tight budget holds one call at a time: one write for each call its hold does not cover, after a single refused try at admission", async () => {
    const { writes, stop } = countQuotaRequests();
    try {
      // Each call spends more than its hold leaves for the next one: every later call needs a write.
      const spend = { prompt_tokens: 1_000, completion_tokens: 4_000 };
      stack.model.script([
        { toolCalls: [taxCall("t1")], usage: spend },
        { toolCalls: [taxCall("t2")], usage: spend },
        { content: "Done.", usage: spend },
      ]);
      const outcome = RunResponseSchema.parse(
        body(await stack.invoke(runEvent({ tenantId: "tenant_tight", userId: "usr_t", prompt: PROMPT }))),
      );
      expect(outcome.status).toBe("completed");
      // Admission: the run's 5 calls (> a tenth of the user's 30000) refused, then the first call's own;
      // calls 2 and 3: one settle-and-hold each (the totals admission and call 2 saw say the run's calls
      // would not fit, so no write tries them); the finish.
      expect(writes.filter((command) => command === "UpdateItemCommand")).toHaveLength(2 + 1 + 1 + 1);
    } finally {
      stop();
    }
    const view = await quotasOf().usage({ tenantId: "tenant_tight", userId: "usr_t" }, false);
    expect(view.user.day.tokens).toEqual({ used: 15_000, reserved: 0, limit: 30_000 });
  });

  it("holds its remaining calls' worst case, grants from a partly spent hold, and GET /v1/usage shows held as reserved until the finish settles what was spent", async () => {
    const quotas = quotasOf();
    const subject = { tenantId: "tenant_hold", userId: "usr_h", runId: "run_hold" };
    const admitted = await quotas.admit(subject, { expiresAtSeconds: 2_000_000_000, firstCall, bounds });
    // 5 calls × (1000 + 512) = 7560 ≤ a tenth of the user's 30000? No: 3000 — so one call's 1512.
    expect(admitted.state.hold).toEqual({ tokens: 1_512, costMicro: 0 });
    const wide = { tenantId: "tenant_hold", userId: "usr_wide", runId: "run_wide" };
    const wider = await quotas.admit(wide, {
      expiresAtSeconds: 2_000_000_000,
      firstCall: { promptTokens: 100, maxTokens: 400 },
      bounds,
    });
    // 5 × 500 = 2500 ≤ 3000: the run's calls at once.
    expect(wider.state.hold).toEqual({ tokens: 2_500, costMicro: 0 });
    const budget = quotas.budget(wide, wider.state, {
      expiresAtSeconds: () => 2_000_000_000,
      onStoreFailure: "refuse",
      bounds,
    });
    const calls: BudgetDecision[] = [];
    const call = async (cycle: number, promptTokens: number, spent: number) => {
      const decision = await budget.reserve({
        step: `cycle-${cycle}:model`,
        cycle,
        promptTokens,
        maxTokens: 400,
      });
      calls.push(decision);
      budget.observe(decision, usage(promptTokens, spent - promptTokens));
    };
    await call(1, 100, 300);
    await call(2, 450, 700);
    // 2500 − 1000 spent − a 1300-token prompt leaves 200: fewer than 256, so a new hold (one write).
    await call(3, 1_300, 1_400);
    expect(calls.map((decision) => decision.kind === "granted" && decision.maxTokens)).toEqual([
      400, 400, 400,
    ]);
    const mid = await quotas.usage({ tenantId: "tenant_hold", userId: "usr_wide" }, false);
    // Calls 1-2 settled (1000) by the third's write; the run's 3 calls left (3 × 1700) are more than a
    // tenth of what the user has left (29000), so it holds the call's own 1700.
    expect(mid.user.day.tokens).toEqual({ used: 1_000, reserved: 1_700, limit: 30_000 });
    await budget.finish();
    const after = await quotas.usage({ tenantId: "tenant_hold", userId: "usr_wide" }, false);
    expect(after.user.day.tokens).toEqual({ used: 2_400, reserved: 0, limit: 30_000 });
  });

  it("a crashed run's hold is taken back once its marker expired, when the limit is next hit", async () => {
    const quotas = quotasOf();
    const tenantId = "tenant_crash";
    await quotas.setLimits(
      tenantId,
      { user: { tokensPerDay: 20_000 } },
      { userId: "usr_admin", at: new Date().toISOString() },
    );
    const now = Math.floor(Date.now() / 1000);
    const crashed = { tenantId, userId: "usr_c", runId: "run_crashed" };
    // Its run's calls are more than a tenth of what is left: it holds its first call's 16000 and dies.
    const dead = await quotas.admit(crashed, {
      expiresAtSeconds: now - 1,
      firstCall: { promptTokens: 1_000, maxTokens: 15_000 },
      bounds,
    });
    expect(dead.state.hold).toEqual({ tokens: 16_000, costMicro: 0 });
    const live = { tenantId, userId: "usr_c", runId: "run_live" };
    const admitted = await quotas.admit(live, {
      expiresAtSeconds: now + 600,
      firstCall: { promptTokens: 1_000, maxTokens: 4_000 },
      bounds,
    });
    // 16000 held + 5000 > 20000: admitted holding nothing; its call's write prunes the dead marker.
    expect(admitted.state.hold).toBeNull();
    const budget = quotas.budget(live, admitted.state, {
      expiresAtSeconds: () => now + 600,
      onStoreFailure: "refuse",
      bounds,
    });
    const decision = await budget.reserve({
      step: "cycle-1:model",
      cycle: 1,
      promptTokens: 1_000,
      maxTokens: 4_000,
    });
    expect(decision).toMatchObject({ kind: "granted", maxTokens: 4_000 });
    const view = await quotas.usage({ tenantId, userId: "usr_c" }, true);
    expect(view.user.day.tokens).toEqual({ used: 0, reserved: 5_000, limit: 20_000 });
    expect(view.tenant?.inFlight.runs).toBe(1);
  });
});
