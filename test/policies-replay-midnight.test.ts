/**
 * A replay of a metered call after midnight UTC (docs/policies.md, "Running totals, race-free"): a durable
 * tools step that recorded an invoice at 23:59:59 and was cut off before its checkpoint is replayed at
 * 00:00:30 with the same operation key. The new day's item has no marker for the quote, so the decision
 * makes a fresh reservation there; the ledger answers the first recording (`replayed`), and the
 * reservation is released: the quote counts in the day it was recorded, not in both. The real tools,
 * ledger, counters and Cedar engine on the suite's local DynamoDB; the decisions' clock injected.
 */
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { quotedRecordInvoiceArgs } from "../local/fixtures.js";
import { prepareToolCall, runPreparedCall } from "../shared/agent/dispatcher.js";
import { loadConfig } from "../shared/config.js";
import { type ApiDeps, createApiDeps } from "../shared/deps.js";
import type { SecurityContext } from "../shared/identity.js";
import { PolicyDecisions } from "../shared/policies/decisions.js";
import { PolicySets } from "../shared/policies/sets.js";
import { counterTotals } from "../shared/policies/totals.js";
import { CounterStore } from "../shared/store/counters.js";
import { ensureTable } from "../shared/store/table.js";

let deps: ApiDeps;
let tableName: string;
beforeAll(async () => {
  tableName = `test-replay-${randomUUID()}`;
  const config = loadConfig({ DYNAMODB_ENDPOINT: inject("dynamoEndpoint"), TABLE_NAME: tableName });
  deps = createApiDeps(config);
  await ensureTable(deps.ddb, tableName);
});
afterAll(() => deps?.ddb.destroy());

describe("a recordInvoice replayed after midnight UTC", () => {
  it("counts its quote in the day it was recorded only: the new day's fresh reservation is released", async () => {
    const tenantId = `tenant_replay_${randomUUID()}`;
    const security: SecurityContext = { tenantId, userId: "usr_w", permissions: ["billing:write"] };
    let now = Date.parse("2026-12-31T23:59:59.000Z");
    const sets = new PolicySets({
      store: deps.policies.store,
      tools: deps.tools,
      defaultText: '@id("base") permit (principal, action, resource);',
      now: () => now,
    });
    const totals = counterTotals(new CounterStore(deps.ddb, tableName));
    const decisions = new PolicyDecisions({
      sets,
      totals,
      recordShadow: async () => {},
      logger: { error: () => {}, warn: () => {} },
      now: () => now,
    });
    const args = await quotedRecordInvoiceArgs(deps, { tenantId, userId: "usr_w" });
    const context = {
      runId: "run_replay",
      runScope: "run_replay",
      occurrence: 0,
      signal: new AbortController().signal,
    };
    /** One attempt of the step: the decision at `now`, the call, the decision settled with its result. */
    const attempt = async () => {
      const prepared = prepareToolCall(
        { id: "call_record", name: "recordInvoice", arguments: args },
        deps.tools,
        security,
      );
      if (prepared.kind !== "ready") throw new Error(JSON.stringify(prepared));
      const decision = await decisions.decide({
        prepared,
        security,
        runId: context.runId,
        operationKey: () => "op_replay",
        approved: false,
        signal: context.signal,
      });
      if (decision.kind !== "run") throw new Error(JSON.stringify(decision));
      const result = await runPreparedCall(prepared, security, context);
      await decision.settle?.(result);
      return { result, totals: decision.audit?.totals };
    };
    const first = await attempt();
    expect(first.result.status).toBe("success");
    expect((first.result.data as { replayed: boolean }).replayed).toBe(false);
    expect(first.totals?.tenantDay).toEqual({ count: 1, grossMinor: 12_000 });

    now = Date.parse("2027-01-01T00:00:30.000Z");
    const replay = await attempt();
    expect(replay.result.status).toBe("success");
    expect((replay.result.data as { replayed: boolean }).replayed).toBe(true);
    expect((replay.result.data as { invoice: unknown }).invoice).toEqual(
      (first.result.data as { invoice: unknown }).invoice,
    );
    // Another quote's reservation on Jan 1 sees only itself: the replay was not kept there.
    const probe = {
      tenantId,
      userId: "usr_w",
      toolName: "recordInvoice",
      currency: "GBP",
      grossMinor: 12_000,
      key: "recordInvoice:probe",
      atMs: now,
    };
    expect((await totals.reserve(probe)).totals.tenantDay).toEqual({ count: 1, grossMinor: 12_000 });
    // Dec 31 still counts the recording.
    const dec31 = {
      ...probe,
      key: "recordInvoice:probe-dec31",
      atMs: Date.parse("2026-12-31T23:59:59.500Z"),
    };
    expect((await totals.reserve(dec31)).totals.tenantDay).toEqual({ count: 2, grossMinor: 24_000 });
  });
});
