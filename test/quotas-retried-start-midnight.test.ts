/**
 * A durable start retried across midnight UTC (docs/quotas.md "Admission"), with the quotas' clock
 * injected: a run admitted and run in a day's last second, whose start "crashed" after starting its
 * execution (its Idempotency-Key record back to IN_PROGRESS, lease passed), is taken over by the client's
 * retry after midnight. The retry is the same run: it is not admitted again, so the new day counts no run
 * and holds no slot in flight. The real API handler, the durable runner on the SDK's local runner,
 * DynamoDB Local and the local model server.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RunRecordSchema } from "../functions/api/contract.js";
import { json, pollUntil } from "./support/approvals.js";
import { type DurableStack, startDurableStack } from "./support/durable.js";
import { crashStarts, runEvent } from "./support/idempotency.js";

const MIDNIGHT = Math.ceil(Date.now() / 86_400_000) * 86_400_000;
let now = MIDNIGHT - 1_000;
let stack: DurableStack;
beforeAll(async () => {
  stack = await startDurableStack({ TENANT_CONCURRENT_RUNS: "5" }, { quotas: { now: () => now } });
});
afterAll(async () => {
  await stack?.stop();
});

/** `POST /v1/runs` with `Prefer: respond-async` and the Idempotency-Key `key`. */
async function startWithKey(tenantId: string, key: string) {
  const event = runEvent({ key, tenantId, prompt: "hello" });
  event.headers = { ...event.headers, prefer: "respond-async" };
  return stack.invoke(event);
}

/** The tenant's usage on the day of `at`, by the quotas' clock. */
async function usageAt(at: number, tenantId: string) {
  now = at;
  const usage = await stack.deps.quotas?.usage({ tenantId, userId: "usr_idem" }, true);
  if (!usage?.tenant) throw new Error("quotas are on");
  return usage;
}

/** The user's runs and the tenant's runs in flight, as each day (the first, the second) counts them. */
async function counted(tenantId: string) {
  const of = async (at: number) => {
    const usage = await usageAt(at, tenantId);
    return { runs: usage.user.day.runs, inFlight: usage.tenant?.inFlight.runs };
  };
  return { first: await of(MIDNIGHT - 1), second: await of(MIDNIGHT + 2_000) };
}

describe("a durable start retried after midnight UTC", () => {
  it("taken over after midnight, the run admitted at 23:59:59 is not admitted again: the new day counts no run and no slot in flight", async () => {
    const tenantId = "tenant_retried_midnight";
    stack.model.script([{ content: "Nothing to do." }]);
    now = MIDNIGHT - 1_000;
    const first = await startWithKey(tenantId, "start-1");
    expect(first.statusCode, first.body).toBe(202);
    const runId = RunRecordSchema.parse(json(first)).runId;
    expect((await pollUntil(stack, runId, tenantId, ["running"])).status).toBe("completed");

    expect(await crashStarts(stack, tenantId)).toHaveLength(1);
    now = MIDNIGHT + 1_000;
    const retried = await startWithKey(tenantId, "start-1");
    expect(retried.statusCode, retried.body).toBe(202);
    expect(RunRecordSchema.parse(json(retried)).runId).toBe(runId);
    expect(retried.headers?.["idempotent-replayed"]).toBeUndefined();

    expect(await counted(tenantId)).toEqual({
      first: { runs: 1, inFlight: 0 },
      second: { runs: 0, inFlight: 0 },
    });
  });

  it("a start admitted at 23:59:59 that failed before writing its run record, retried after midnight, is admitted once: by its marker in the day before", async () => {
    const quotas = stack.deps.quotas;
    if (!quotas) throw new Error("quotas are on");
    const tenantId = "tenant_retried_midnight_2";
    const subject = { tenantId, userId: "usr_idem", runId: "run_retried_midnight_2" };
    const admitAt = (at: number) => {
      now = at;
      return quotas.admit(subject, { expiresAtSeconds: Math.floor(at / 1000) + 3_600, retried: true });
    };
    expect((await admitAt(MIDNIGHT - 1_000)).state.dayStartMs).toBe(MIDNIGHT - 86_400_000);
    const again = await admitAt(MIDNIGHT + 1_000);
    expect(again.state).toMatchObject({ dayStartMs: MIDNIGHT - 86_400_000, version: 1, live: true });

    // Its one slot, still in the day before's item, counted among the tenant's runs in flight once.
    expect(await counted(tenantId)).toEqual({
      first: { runs: 1, inFlight: 1 },
      second: { runs: 0, inFlight: 1 },
    });
  });
});
