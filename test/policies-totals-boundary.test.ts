/**
 * The policies' running totals at the UTC hour's and day's edges (docs/policies.md `context.totals`,
 * "Running totals, race-free"; shared/policies/totals.ts): a call counts in the day and hour of its
 * reservation's instant, to the millisecond (hour 0, Dec 31 → Jan 1, a leap day); a reservation made
 * before an edge and released after it is taken back from the window it was counted in, and the next
 * window is not touched. The counters store on the suite's local DynamoDB.
 */
import { randomUUID } from "node:crypto";
import type { DynamoDBDocumentClient } from "@aws-sdk/lib-dynamodb";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import type { TotalsReservation } from "../shared/policies/decisions.js";
import { counterTotals } from "../shared/policies/totals.js";
import { CounterStore } from "../shared/store/counters.js";
import { createDocumentClient } from "../shared/store/dynamo.js";
import { ensureTable } from "../shared/store/table.js";

let ddb: DynamoDBDocumentClient;
let store: CounterStore;
beforeAll(async () => {
  const tableName = `test-${randomUUID()}`;
  ddb = createDocumentClient({
    name: tableName,
    endpoint: inject("dynamoEndpoint"),
    region: "us-east-1",
    requestTimeoutMs: 3_000,
  });
  await ensureTable(ddb, tableName);
  store = new CounterStore(ddb, tableName);
});
afterAll(() => ddb?.destroy());

/** A recordInvoice reservation of 120.00 GBP for `key` at `at` (as PolicyDecisions builds it). */
const invoiceAt = (tenantId: string, key: string, at: string, userId = "usr_1"): TotalsReservation => ({
  tenantId,
  userId,
  toolName: "recordInvoice",
  currency: "GBP",
  grossMinor: 12_000,
  key: `recordInvoice:${key}`,
  atMs: Date.parse(at),
});

const one = (count: number) => ({ count, grossMinor: count * 12_000 });
/** The four totals, as counts of 120.00 GBP invoices. */
const counts = (userDay: number, tenantDay: number, userHour: number, tenantHour: number) => ({
  userDay: one(userDay),
  tenantDay: one(tenantDay),
  userHour: one(userHour),
  tenantHour: one(tenantHour),
});

describe("a call counts in the UTC hour and day of its reservation", () => {
  it("23:59:59.999 on Dec 31 is that day's hour 23; 00:00:00.000 starts Jan 1 and its hour 0; 01:00:00.000 hour 1", async () => {
    const totals = counterTotals(store);
    const tenantId = `tenant_${randomUUID()}`;
    const last = await totals.reserve(invoiceAt(tenantId, "q1", "2026-12-31T23:59:59.999Z"));
    expect(last).toEqual({
      fresh: true,
      totals: counts(1, 1, 1, 1),
    });
    const first = await totals.reserve(invoiceAt(tenantId, "q2", "2027-01-01T00:00:00.000Z"));
    expect(first.totals).toEqual(counts(1, 1, 1, 1));
    const hour0 = await totals.reserve(invoiceAt(tenantId, "q3", "2027-01-01T00:59:59.999Z", "usr_2"));
    expect(hour0.totals).toEqual(counts(1, 2, 1, 2));
    const hour1 = await totals.reserve(invoiceAt(tenantId, "q4", "2027-01-01T01:00:00.000Z"));
    expect(hour1.totals).toEqual(counts(2, 3, 1, 1));
  });

  it("Feb 28 → Feb 29 → Mar 1 of a leap year are three days", async () => {
    const totals = counterTotals(store);
    const tenantId = `tenant_${randomUUID()}`;
    for (const [key, at] of [
      ["q1", "2028-02-28T23:59:59.999Z"],
      ["q2", "2028-02-29T00:00:00.000Z"],
      ["q3", "2028-02-29T23:59:59.999Z"],
      ["q4", "2028-03-01T00:00:00.000Z"],
    ] as const) {
      const day = (await totals.reserve(invoiceAt(tenantId, key, at))).totals.tenantDay;
      expect([key, day]).toEqual([key, key === "q3" ? one(2) : one(1)]);
    }
  });
});

describe("a reservation made before an edge and released after it", () => {
  it("is taken back from the hour and day it was counted in; the next hour's and day's totals stay as they are", async () => {
    const totals = counterTotals(store);
    const tenantId = `tenant_${randomUUID()}`;
    // Reserved at 23:59:59.900 (the call then waited on its facts, or for a person) ...
    const early = invoiceAt(tenantId, "q1", "2026-12-31T23:59:59.900Z");
    expect((await totals.reserve(early)).totals.tenantHour).toEqual(one(1));
    const next = await totals.reserve(invoiceAt(tenantId, "q2", "2027-01-01T00:00:00.100Z"));
    expect(next.totals).toEqual(counts(1, 1, 1, 1));
    // ... and released after midnight: PolicyDecisions releases the reservation it made, at its instant.
    await totals.release(early);
    const dec31 = await totals.reserve(invoiceAt(tenantId, "q3", "2026-12-31T23:59:59.950Z"));
    expect(dec31.totals).toEqual(counts(1, 1, 1, 1));
    const jan1 = await totals.reserve(invoiceAt(tenantId, "q4", "2027-01-01T00:00:01.000Z"));
    expect(jan1.totals).toEqual(counts(2, 2, 2, 2));
  });

  it("an hour's edge inside one day: released from hour 10, hour 11 keeps its own", async () => {
    const totals = counterTotals(store);
    const tenantId = `tenant_${randomUUID()}`;
    const early = invoiceAt(tenantId, "q1", "2027-06-15T10:59:59.900Z");
    await totals.reserve(early);
    await totals.reserve(invoiceAt(tenantId, "q2", "2027-06-15T11:00:00.100Z"));
    await totals.release(early);
    const hour10 = await totals.reserve(invoiceAt(tenantId, "q3", "2027-06-15T10:59:59.950Z"));
    expect(hour10.totals).toMatchObject({ tenantHour: one(1), tenantDay: one(2) });
    const hour11 = await totals.reserve(invoiceAt(tenantId, "q4", "2027-06-15T11:00:02.000Z"));
    expect(hour11.totals).toMatchObject({ tenantHour: one(2), tenantDay: one(3) });
  });
});
