/**
 * The UTC day's edges (docs/quotas.md "Reservations", "Usage"), with the quotas' injected clock: a run
 * admitted in the day's last instant whose call is made after midnight holds and settles that call in the
 * new day's item and gives back what it held in the old one; a call a daily limit cannot cover is
 * QUOTA_EXCEEDED on either side of midnight (never QUOTA_UNAVAILABLE), with the window of the day it was
 * refused in; GET /v1/usage's "today" is the day of the clock to the millisecond. Dec 31 → Jan 1 and a
 * leap day. DynamoDB Local, the real quotas.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { BudgetDecision } from "../shared/agent/budget.js";
import type { Quotas } from "../shared/quotas/service.js";
import { startTestStack, type TestStack } from "./support/stack.js";

let now = Date.now();
let stack: TestStack;
beforeAll(async () => {
  stack = await startTestStack(
    { USER_TOKENS_PER_DAY: "5000", POWERTOOLS_LOG_LEVEL: "SILENT" },
    { quotas: { now: () => now } },
  );
});
afterAll(async () => {
  await stack?.stop();
});

function quotasOf(): Quotas {
  const quotas = stack.deps.quotas;
  if (!quotas) throw new Error("quotas are on");
  return quotas;
}

const usage = (promptTokens: number, completionTokens: number) => ({
  promptTokens,
  completionTokens,
  totalTokens: promptTokens + completionTokens,
});

/** Admits a run at `at` (its marker expires an hour later) and gives it its budget. */
async function admitAt(
  at: number,
  subject: { tenantId: string; userId: string; runId: string },
  hold = false,
) {
  now = at;
  const quotas = quotasOf();
  const expiresAtSeconds = Math.floor(at / 1000) + 3_600;
  const admitted = await quotas.admit(subject, {
    expiresAtSeconds,
    firstCall: hold ? { promptTokens: 1_000, maxTokens: 512 } : undefined,
  });
  const budget = quotas.budget(subject, admitted.state, {
    expiresAtSeconds: () => expiresAtSeconds,
    onStoreFailure: "refuse",
  });
  return { admitted, budget };
}

/** The tenant's usage as GET /v1/usage shows it at `at`. */
async function usageAt(at: number, tenantId: string, userId: string) {
  now = at;
  const seen = await quotasOf().usage({ tenantId, userId }, true);
  if (!seen.tenant) throw new Error("the tenant's usage is asked for");
  return seen;
}

const refusalOf = (decision: BudgetDecision) => {
  if (decision.kind !== "refused") throw new Error(`refused expected, got ${decision.kind}`);
  return decision.refusal;
};

describe("a run that crosses midnight UTC", () => {
  it("admitted at 23:59:59.900 on Dec 31 with a hold, its call made after midnight: the hold goes back to Dec 31, the call is held and settled on Jan 1, its slot is freed", async () => {
    const midnight = Date.UTC(2027, 0, 1);
    const subject = { tenantId: "tenant_newyear", userId: "usr_ny", runId: "run_newyear" };
    const { admitted, budget } = await admitAt(midnight - 100, subject, true);
    expect(admitted.state).toMatchObject({ dayStartMs: Date.UTC(2026, 11, 31), hold: { tokens: 1_512 } });
    const before = await usageAt(midnight - 50, subject.tenantId, subject.userId);
    expect(before.user.day).toMatchObject({ start: "2026-12-31T00:00:00.000Z", runs: 1 });
    expect(before.user.day.tokens).toEqual({ used: 0, reserved: 1_512, limit: 5_000 });
    expect(before.tenant?.inFlight.runs).toBe(1);

    now = midnight + 100;
    const call = { step: "cycle-1:model", cycle: 1, promptTokens: 1_000, maxTokens: 512 };
    const decision = await budget.reserve(call);
    expect(decision).toMatchObject({ kind: "granted", maxTokens: 512, state: { dayStartMs: midnight } });
    budget.observe(decision, usage(1_000, 40));
    // Its slot in flight moved with its hold: counted on Jan 1, no longer on Dec 31.
    expect((await usageAt(midnight + 200, subject.tenantId, subject.userId)).tenant?.inFlight.runs).toBe(1);
    expect((await usageAt(midnight - 1, subject.tenantId, subject.userId)).tenant?.inFlight.runs).toBe(0);
    now = midnight + 2_000;
    await budget.finish();

    // Dec 31 keeps the run (admission counted it) and nothing else: no hold, no tokens, no slot.
    const dec31 = await usageAt(midnight - 1, subject.tenantId, subject.userId);
    expect(dec31.user.day).toMatchObject({ start: "2026-12-31T00:00:00.000Z", runs: 1 });
    expect(dec31.user.day.tokens).toEqual({ used: 0, reserved: 0, limit: 5_000 });
    expect(dec31.tenant?.inFlight.runs).toBe(0);
    // Jan 1 has the call, settled to what it used, and no slot left behind.
    const jan1 = await usageAt(midnight + 3_000, subject.tenantId, subject.userId);
    expect(jan1.user.day).toMatchObject({ start: "2027-01-01T00:00:00.000Z", runs: 0 });
    expect(jan1.user.day.tokens).toEqual({ used: 1_040, reserved: 0, limit: 5_000 });
    expect(jan1.tenant?.inFlight.runs).toBe(0);
  });

  it("a call no day's limit can cover is QUOTA_EXCEEDED before and after midnight (leap day), with that day's window, and the old day's slot is freed", async () => {
    const leapDay = Date.UTC(2028, 1, 29);
    const tenantId = "tenant_leap";
    // 4,900 tokens of prompt + MIN_COMPLETION_TOKENS (256) never fit the user's 5,000 a day.
    const call = { step: "cycle-1:model", cycle: 1, promptTokens: 4_900, maxTokens: 512 };
    const early = await admitAt(leapDay - 60_000, { tenantId, userId: "usr_leap", runId: "run_feb28" });
    now = leapDay - 100;
    expect(refusalOf(await early.budget.reserve(call))).toMatchObject({
      code: "QUOTA_EXCEEDED",
      limit: "user.tokensPerDay",
      quota: 5_000,
      windowEndsAt: "2028-02-29T00:00:00.000Z",
      retryAfterSeconds: 1,
    });
    now = leapDay - 50;
    await early.budget.finish();

    const late = await admitAt(leapDay - 100, { tenantId, userId: "usr_leap", runId: "run_feb29" });
    now = leapDay + 500;
    expect(refusalOf(await late.budget.reserve(call))).toMatchObject({
      code: "QUOTA_EXCEEDED",
      limit: "user.tokensPerDay",
      quota: 5_000,
      used: 0,
      windowEndsAt: "2028-03-01T00:00:00.000Z",
      retryAfterSeconds: 86_400,
    });
    await late.budget.finish();
    const feb28 = await usageAt(leapDay - 1, tenantId, "usr_leap");
    expect(feb28.tenant?.inFlight.runs).toBe(0);
    expect(feb28.tenant?.day).toMatchObject({ start: "2028-02-28T00:00:00.000Z", runs: 2 });
    const feb29 = await usageAt(leapDay + 1_000, tenantId, "usr_leap");
    expect(feb29.tenant?.inFlight.runs).toBe(0);
    expect(feb29.tenant?.day).toMatchObject({ start: "2028-02-29T00:00:00.000Z", runs: 0 });
    expect(feb29.tenant?.day.tokens).toEqual({ used: 0, reserved: 0, limit: null });
  });

  it("the new day's budget starts clean: a user who spent the day's limit by 23:59:59.999 is granted at 00:00:00.000", async () => {
    const midnight = Date.UTC(2027, 2, 1); // Feb 28 → Mar 1 of a common year
    const tenantId = "tenant_clean";
    const spender = await admitAt(midnight - 10_000, { tenantId, userId: "usr_c", runId: "run_spend" });
    now = midnight - 9_000;
    const spend = { step: "cycle-1:model", cycle: 1, promptTokens: 4_000, maxTokens: 1_000 };
    const spent = await spender.budget.reserve(spend);
    expect(spent).toMatchObject({ kind: "granted", maxTokens: 1_000 });
    spender.budget.observe(spent, usage(4_000, 900));
    await spender.budget.finish();

    const next = await admitAt(midnight - 1, { tenantId, userId: "usr_c", runId: "run_next" });
    const call = { step: "cycle-1:model", cycle: 1, promptTokens: 1_000, maxTokens: 512 };
    expect(refusalOf(await next.budget.reserve(call))).toMatchObject({
      limit: "user.tokensPerDay",
      used: 4_900,
      windowEndsAt: "2027-03-01T00:00:00.000Z",
      retryAfterSeconds: 1,
    });
    now = midnight;
    const granted = await next.budget.reserve(call);
    expect(granted).toMatchObject({ kind: "granted", maxTokens: 512, state: { dayStartMs: midnight } });
    next.budget.observe(granted, usage(1_000, 10));
    await next.budget.finish();
    const mar1 = await usageAt(midnight, tenantId, "usr_c");
    expect(mar1.user.day).toMatchObject({ start: "2027-03-01T00:00:00.000Z", runs: 0 });
    expect(mar1.user.day.tokens).toEqual({ used: 1_010, reserved: 0, limit: 5_000 });
    expect(mar1.tenant?.inFlight.runs).toBe(0);
    const feb28 = await usageAt(midnight - 1, tenantId, "usr_c");
    expect(feb28.user.day.tokens).toEqual({ used: 4_900, reserved: 0, limit: 5_000 });
    expect(feb28.tenant?.inFlight.runs).toBe(0);
  });
});

describe("GET /v1/usage at the day's and minute's edges", () => {
  it("today and this minute are the clock's to the millisecond: 23:59:59.999 is Dec 31's last minute, 00:00:00.000 Jan 1's first", async () => {
    const midnight = Date.UTC(2027, 0, 1);
    const tenantId = "tenant_usage_edge";
    await admitAt(midnight - 1, { tenantId, userId: "usr_u", runId: "run_last_ms" });
    await admitAt(midnight, { tenantId, userId: "usr_u", runId: "run_first_ms" });
    const last = await usageAt(midnight - 1, tenantId, "usr_u");
    expect(last.user.day).toMatchObject({ start: "2026-12-31T00:00:00.000Z", runs: 1 });
    expect(last.user.minute).toEqual({ start: "2026-12-31T23:59:00.000Z", runs: 1, limit: null });
    const first = await usageAt(midnight, tenantId, "usr_u");
    expect(first.user.day).toMatchObject({ start: "2027-01-01T00:00:00.000Z", runs: 1 });
    expect(first.user.minute).toEqual({ start: "2027-01-01T00:00:00.000Z", runs: 1, limit: null });
    // The next minute of the day counts afresh; the day does not.
    const later = await usageAt(midnight + 60_000, tenantId, "usr_u");
    expect(later.user.minute).toEqual({ start: "2027-01-01T00:01:00.000Z", runs: 0, limit: null });
    expect(later.user.day.runs).toBe(1);
  });
});

describe("the tenant's runs in flight across midnight", () => {
  const by = { userId: "usr_admin", at: "2026-12-31T12:00:00.000Z" };

  it("a run admitted at 23:59:59 still counts at 00:00:00.500: the next is 429 tenant-concurrent until it ends", async () => {
    const tenantId = "tenant_live_midnight";
    await quotasOf().setLimits(tenantId, { tenant: { concurrentRuns: 1 } }, by);
    const midnight = Date.UTC(2027, 0, 1);
    const first = await admitAt(midnight - 1_000, { tenantId, userId: "usr_a", runId: "run_before" });
    const refused = admitAt(midnight + 500, { tenantId, userId: "usr_b", runId: "run_after" });
    await expect(refused).rejects.toMatchObject({
      code: "RATE_LIMITED",
      refused: { id: "tenant-concurrent", quota: 1, remaining: 0 },
      counted: 1,
      message: "Your tenant has 1 run(s) in flight; its limit is 1. Nothing was started. Retry after 1 s.",
    });
    const waiting = await usageAt(midnight + 600, tenantId, "usr_b");
    expect(waiting.tenant?.inFlight).toEqual({ runs: 1, limit: 1 });
    expect(waiting.tenant?.day.runs).toBe(0);

    now = midnight + 1_000;
    await first.budget.finish();
    const after = await admitAt(midnight + 1_500, { tenantId, userId: "usr_b", runId: "run_after" });
    expect(after.admitted.state).toMatchObject({ dayStartMs: midnight, version: 1, live: true });
    expect(after.admitted.policies).toContainEqual(
      expect.objectContaining({ id: "tenant-concurrent", quota: 1, remaining: 0 }),
    );
    const jan1 = await usageAt(midnight + 1_600, tenantId, "usr_b");
    expect(jan1.tenant?.inFlight).toEqual({ runs: 1, limit: 1 });
    expect(jan1.tenant?.day.runs).toBe(1);
    const dec31 = await usageAt(midnight - 1, tenantId, "usr_b");
    expect(dec31.tenant?.inFlight).toEqual({ runs: 0, limit: 1 });
  });

  it("a run of the day before that crashed holding its slot is pruned once its marker expired, and the new day's run is admitted", async () => {
    const tenantId = "tenant_live_crashed";
    await quotasOf().setLimits(tenantId, { tenant: { concurrentRuns: 1 } }, by);
    const midnight = Date.UTC(2028, 2, 1); // after Feb 29
    now = midnight - 1_000;
    const crashed = { tenantId, userId: "usr_a", runId: "run_crashed_feb29" };
    await quotasOf().admit(crashed, { expiresAtSeconds: midnight / 1000 + 10 });
    await expect(
      admitAt(midnight + 5_000, { tenantId, userId: "usr_b", runId: "run_mar1" }),
    ).rejects.toMatchObject({
      refused: { id: "tenant-concurrent" },
    });
    const admitted = await admitAt(midnight + 11_000, { tenantId, userId: "usr_b", runId: "run_mar1" });
    expect(admitted.admitted.state.dayStartMs).toBe(midnight);
    expect((await usageAt(midnight - 1, tenantId, "usr_b")).tenant?.inFlight.runs).toBe(0);
    expect((await usageAt(midnight + 12_000, tenantId, "usr_b")).tenant?.inFlight.runs).toBe(1);
  });
});
