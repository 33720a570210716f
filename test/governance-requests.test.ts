/**
 * What quotas and policies add to a keyed run's DynamoDB requests (docs/quotas.md "Reservations",
 * docs/policies.md "Running totals"; bench/governance.ts reports the same figures): bench P3's keyed run
 * (one recordInvoice, 2 cycles) through the real handler on DynamoDB Local, in a warm container (its
 * first run reads the tenant's limits and policy set, later ones take them from the per-container
 * cache). Quotas add exactly two writes of the day's counter item (admission holding the run's calls,
 * the budget ample; the finish settling them) and no read; a policy
 * set adds its running totals' reservation and the facts' read of the quote. A replay adds nothing.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FIVE_POLICIES, QUOTA_LIMITS } from "../bench/governance.js";
import { quotedRecordInvoiceArgs } from "../local/fixtures.js";
import { countRequests, runEvent } from "./support/idempotency.js";
import { startTestStack, type TestStack } from "./support/stack.js";

const TENANT = "tenant_requests";

/** The requests of one keyed run and of its replay, each as `Operation sk-prefix` entries. */
async function keyedRun(stack: TestStack, key: string): Promise<{ first: string[]; replay: string[] }> {
  const args = await quotedRecordInvoiceArgs(stack.deps, TENANT);
  stack.model.script([
    { toolCalls: [{ id: "call_1", name: "recordInvoice", arguments: args }] },
    { content: "Recorded." },
  ]);
  const counter = countRequests(stack.deps.ddb);
  try {
    const first = await stack.invoke(runEvent({ tenantId: TENANT, key, prompt: "Record the invoice." }));
    expect(first.statusCode, first.body).toBe(200);
    expect(JSON.parse(String(first.body))).toMatchObject({ status: "completed", cycles: 2 });
    const firstLog = [...counter.log];
    counter.reset();
    const replay = await stack.invoke(runEvent({ tenantId: TENANT, key, prompt: "Record the invoice." }));
    expect(replay.headers?.["idempotent-replayed"]).toBe("true");
    return { first: firstLog, replay: [...counter.log] };
  } finally {
    counter.stop();
  }
}

/** How many of each operation a log holds. */
function tally(log: readonly string[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const name of log) counts[name] = (counts[name] ?? 0) + 1;
  return counts;
}

const stacks: Record<string, TestStack> = {};
beforeAll(async () => {
  stacks.off = await startTestStack({}, { quotas: false });
  // The quotas' clock runs from noon UTC: a first admission of a new UTC day also reads the day before's
  // runs in flight (docs/quotas.md "Admission"), one read the run measured here must not make.
  const noon = Math.floor(Date.now() / 86_400_000) * 86_400_000 + 43_200_000;
  const started = Date.now();
  stacks.quotas = await startTestStack(QUOTA_LIMITS, { quotas: { now: () => noon + Date.now() - started } });
  stacks.policies = await startTestStack({ POLICIES: FIVE_POLICIES }, { quotas: false });
  for (const stack of Object.values(stacks)) await keyedRun(stack, "warm-up");
});
afterAll(async () => {
  for (const stack of Object.values(stacks)) await stack.stop();
});

describe("DynamoDB requests of a keyed run in a warm container", () => {
  it("quotas off: 12 (7 PutItem, 1 GetItem, 4 UpdateItem); a replay 1 PutItem", async () => {
    const { first, replay } = await keyedRun(stacks.off as TestStack, "k-off");
    expect(tally(first)).toEqual({ PutItem: 7, GetItem: 1, UpdateItem: 4 });
    expect(replay).toEqual(["PutItem"]);
  });

  it("every quota limit: 2 more UpdateItem and no read (14, ÷ 12 = 1.17); a replay reserves nothing", async () => {
    const { first, replay } = await keyedRun(stacks.quotas as TestStack, "k-quotas");
    expect(tally(first)).toEqual({ PutItem: 7, GetItem: 1, UpdateItem: 6 });
    expect(replay).toEqual(["PutItem"]);
  });

  it("five policies with running totals: 1 UpdateItem more (the reservation); the quote is read once", async () => {
    const { first, replay } = await keyedRun(stacks.policies as TestStack, "k-policies");
    expect(tally(first)).toEqual({ PutItem: 7, GetItem: 1, UpdateItem: 5 });
    expect(replay).toEqual(["PutItem"]);
  });
});
