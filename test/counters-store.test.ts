/**
 * The counters store (shared/store/counters.ts) on the suite's local DynamoDB and, for every case, on
 * dynalite too (the pure-JS fallback returns no item with a failed condition, so the store reads it):
 * windows, one conditional write per change, positions under concurrency, idempotent reserve / settle /
 * release, versioned markers, pruning of crashed reservations, isolation across tenants and users, and
 * the 400 KB bound failing closed.
 */
import { randomUUID } from "node:crypto";
import type { DynamoDBDocumentClient } from "@aws-sdk/lib-dynamodb";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { type LocalDynamo, startLocalDynamo } from "../local/dynamo.js";
import {
  type CounterRef,
  CounterStore,
  counterWindow,
  markerName,
  secondsUntilEnd,
  totalName,
} from "../shared/store/counters.js";
import { createDocumentClient } from "../shared/store/dynamo.js";
import { CounterItemFullError } from "../shared/store/errors.js";
import { ensureTable } from "../shared/store/table.js";
import { countRequests } from "./support/idempotency.js";

const T0 = Date.parse("2026-03-04T13:05:42.250Z");

describe("counterWindow", () => {
  it("aligns minute, hour and day windows to UTC and names them", () => {
    expect(counterWindow("minute", T0)).toEqual({
      kind: "minute",
      startMs: Date.parse("2026-03-04T13:05:00Z"),
      endMs: Date.parse("2026-03-04T13:06:00Z"),
      id: "m202603041305",
    });
    expect(counterWindow("hour", T0).id).toBe("h2026030413");
    const day = counterWindow("day", T0);
    expect([day.id, new Date(day.startMs).toISOString(), new Date(day.endMs).toISOString()]).toEqual([
      "d20260304",
      "2026-03-04T00:00:00.000Z",
      "2026-03-05T00:00:00.000Z",
    ]);
    expect(counterWindow("day", day.endMs).id).toBe("d20260305");
    expect(counterWindow("day", day.endMs - 1).id).toBe("d20260304");
  });

  it("says how many whole seconds are left until the window admits again, at least 1", () => {
    expect(secondsUntilEnd(counterWindow("minute", T0), T0)).toBe(18); // 17.75 s, rounded up
    expect(secondsUntilEnd(counterWindow("day", T0), T0)).toBe(39_258);
    const minute = counterWindow("minute", T0);
    expect(secondsUntilEnd(minute, minute.endMs - 1)).toBe(1);
    expect(secondsUntilEnd(minute, minute.endMs + 5_000)).toBe(1);
  });

  it("names totals compactly per scope, never with the user id itself", () => {
    expect(totalName({ kind: "tenant" }, "tokens")).toBe("t_tokens");
    const user = totalName({ kind: "user", userId: "usr_9918" }, "tokens");
    expect(user).toMatch(/^u[0-9a-f]{12}_tokens$/);
    expect(user).not.toContain("9918");
    expect(totalName({ kind: "user", userId: "usr_9919" }, "tokens")).not.toBe(user);
    expect(() => totalName({ kind: "tenant" }, "to#kens")).toThrow(RangeError);
    expect(markerName("run_1#3")).toMatch(/^r_[0-9a-f]{16}$/);
  });
});

let dynalite: LocalDynamo;
beforeAll(async () => {
  dynalite = await startLocalDynamo({ backend: "dynalite", log: () => {} });
});
afterAll(async () => {
  await dynalite?.stop();
});

const backends = [
  { name: `the suite's ${inject("dynamoBackend")}`, endpoint: () => inject("dynamoEndpoint") },
  { name: "dynalite", endpoint: () => dynalite.endpoint },
];

describe.each(backends)("CounterStore on $name", ({ endpoint }) => {
  let ddb: DynamoDBDocumentClient;
  let tableName: string;
  let now = T0;
  let store: CounterStore;
  beforeAll(async () => {
    tableName = `test-${randomUUID()}`;
    ddb = createDocumentClient({
      name: tableName,
      endpoint: endpoint(),
      region: "us-east-1",
      requestTimeoutMs: 3_000,
    });
    await ensureTable(ddb, tableName);
    store = new CounterStore(ddb, tableName, { now: () => now });
  });
  afterAll(() => ddb?.destroy());

  const ref = (tenantId = `tenant_${randomUUID()}`, name = "tool:recordInvoice:GBP"): CounterRef => ({
    tenantId,
    name,
    window: counterWindow("day", now),
  });
  const tenant = totalName({ kind: "tenant" }, "gross");
  const user = (id: string) => totalName({ kind: "user", userId: id }, "gross");
  const expiry = () => Math.floor(now / 1000) + 60;

  it("ten concurrent reservations of 400 under a limit of 2000: exactly five, each at its own position", async () => {
    const day = ref();
    const results = await Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        store.reserve(day, {
          key: `call_${i}`,
          amounts: { [tenant]: 400 },
          limits: { [tenant]: 2_000 },
          expiresAtSeconds: expiry(),
        }),
      ),
    );
    const reserved = results.filter((result) => result.kind === "reserved");
    expect(reserved).toHaveLength(5);
    expect(reserved.map((result) => result.totals[tenant]).sort((a, b) => (a ?? 0) - (b ?? 0))).toEqual([
      400, 800, 1_200, 1_600, 2_000,
    ]);
    for (const refused of results.filter((result) => result.kind !== "reserved")) {
      expect(refused).toEqual({
        kind: "over_limit",
        total: tenant,
        limit: 2_000,
        value: 2_000,
        retryAfterSeconds: secondsUntilEnd(day.window, now),
      });
    }
    expect((await store.read(day)).totals).toEqual({ [tenant]: 2_000 });
  });

  it("reserves once per key: a retry is already_reserved with the totals as they stand, and one request each", async () => {
    const day = ref();
    const counted = countRequests(ddb);
    try {
      const first = await store.reserve(day, {
        key: "k",
        amounts: { [tenant]: 7 },
        expiresAtSeconds: expiry(),
      });
      expect(first).toEqual({ kind: "reserved", totals: { [tenant]: 7 } });
      const again = await store.reserve(day, {
        key: "k",
        amounts: { [tenant]: 7 },
        expiresAtSeconds: expiry(),
      });
      expect(again).toEqual({ kind: "already_reserved", totals: { [tenant]: 7 } });
      expect(counted.log.filter((name) => name === "UpdateItem")).toHaveLength(2);
    } finally {
      counted.stop();
    }
  });

  it("settles to the actual amount once, and releases once, taking the reservation back", async () => {
    const day = ref();
    const amounts = { [tenant]: 1_000, [user("usr_a")]: 1_000 };
    await store.reserve(day, { key: "a", amounts, expiresAtSeconds: expiry() });
    await store.reserve(day, { key: "b", amounts, expiresAtSeconds: expiry() });
    const actual = { [tenant]: 640, [user("usr_a")]: 640 };
    expect(await store.settle(day, { key: "a", reserved: amounts, actual })).toBe("settled");
    expect(await store.settle(day, { key: "a", reserved: amounts, actual })).toBe("not_open");
    expect(await store.release(day, { key: "b", reserved: amounts })).toBe("released");
    expect(await store.release(day, { key: "b", reserved: amounts })).toBe("not_open");
    expect(await store.release(day, { key: "a", reserved: amounts })).toBe("not_open");
    const state = await store.read(day);
    expect(state.totals).toEqual({ [tenant]: 640, [user("usr_a")]: 640 });
    expect(state.markers.has(markerName("b"))).toBe(false);
    expect(state.markers.get(markerName("a"))).toEqual({ version: 2, open: {}, expiresAtSeconds: 0 });
  });

  it("limits a user and the tenant in the same write, each user on its own total", async () => {
    const day = ref();
    const limits = { [tenant]: 300, [user("usr_a")]: 200, [user("usr_b")]: 200 };
    const reserve = (key: string, userId: string) =>
      store.reserve(day, {
        key,
        amounts: { [tenant]: 100, [user(userId)]: 100 },
        limits: { [tenant]: limits[tenant] as number, [user(userId)]: limits[user(userId)] as number },
        expiresAtSeconds: expiry(),
      });
    expect((await reserve("1", "usr_a")).kind).toBe("reserved");
    expect((await reserve("2", "usr_a")).kind).toBe("reserved");
    expect(await reserve("3", "usr_a")).toMatchObject({
      kind: "over_limit",
      total: user("usr_a"),
      limit: 200,
    });
    expect((await reserve("4", "usr_b")).kind).toBe("reserved");
    expect(await reserve("5", "usr_b")).toMatchObject({
      kind: "over_limit",
      total: tenant,
      limit: 300,
      value: 300,
    });
    expect((await store.read(day)).totals).toEqual({
      [tenant]: 300,
      [user("usr_a")]: 200,
      [user("usr_b")]: 100,
    });
  });

  it("keeps tenants apart: the same counter, window and key in another tenant is another item", async () => {
    const a = ref();
    const b = ref();
    await store.reserve(a, {
      key: "same",
      amounts: { [tenant]: 5 },
      limits: { [tenant]: 5 },
      expiresAtSeconds: expiry(),
    });
    expect(
      await store.reserve(b, {
        key: "same",
        amounts: { [tenant]: 5 },
        limits: { [tenant]: 5 },
        expiresAtSeconds: expiry(),
      }),
    ).toEqual({
      kind: "reserved",
      totals: { [tenant]: 5 },
    });
    expect((await store.read(a)).totals).toEqual({ [tenant]: 5 });
  });

  it("moves a versioned marker one step at a time: a retried step is refused with the marker already past it", async () => {
    const day = ref();
    const key = "run_1";
    const step = (from: number | null, version: number, amount: number) =>
      store.change(day, {
        reservation: { key, from, to: { version, open: { [tenant]: amount }, expiresAtSeconds: expiry() } },
        add: { [tenant]: amount },
        conditions: [{ total: tenant, op: "<=", value: 100 - amount }],
      });
    expect(await step(null, 1, 10)).toEqual({ kind: "applied", totals: { [tenant]: 10 } });
    expect(await step(1, 2, 20)).toEqual({ kind: "applied", totals: { [tenant]: 30 } });
    const retried = await step(1, 2, 20);
    expect(retried).toMatchObject({
      kind: "refused",
      failed: [],
      marker: { version: 2, open: { [tenant]: 20 } },
    });
    const over = await step(2, 3, 80);
    expect(over).toMatchObject({
      kind: "refused",
      marker: { version: 2 },
      failed: [{ total: tenant, op: "<=", value: 20 }],
    });
    const removed = await store.change(day, {
      reservation: { key, from: 2, to: null },
      add: { [tenant]: -30 },
    });
    expect(removed).toEqual({ kind: "applied", totals: { [tenant]: 0 } });
    expect((await store.read(day)).markers.size).toBe(0);
  });

  it("sets a total in the same write, guarded by a condition on it (a fixed sub-window's reset)", async () => {
    const day = ref();
    const slot = totalName({ kind: "tenant" }, "minute");
    const write = (key: string, value: number) =>
      store.change(day, {
        reservation: { key, from: null, to: null },
        set: { [slot]: value },
        conditions: [{ total: slot, op: "<", value: 5_000_000 }],
      });
    expect(await write("x", 5_000_001)).toEqual({ kind: "applied", totals: { [slot]: 5_000_001 } });
    expect(await write("y", 5_000_001)).toMatchObject({ kind: "refused", failed: [{ total: slot }] });
  });

  it("prunes reservations whose holders are presumed crashed, leaving live ones and settled markers", async () => {
    const day = ref();
    const amounts = { [tenant]: 50, [user("usr_a")]: 50 };
    await store.reserve(day, {
      key: "crashed",
      amounts,
      limits: { [tenant]: 120 },
      expiresAtSeconds: Math.floor(now / 1000) + 5,
    });
    await store.reserve(day, {
      key: "live",
      amounts,
      limits: { [tenant]: 120 },
      expiresAtSeconds: Math.floor(now / 1000) + 3_600,
    });
    const refused = await store.reserve(day, {
      key: "third",
      amounts,
      limits: { [tenant]: 120 },
      expiresAtSeconds: expiry(),
    });
    expect(refused.kind).toBe("over_limit");
    const before = await store.read(day);
    expect(await store.prune(day, before)).toBe(0); // nobody's expiry has passed yet
    now += 6_000;
    try {
      expect(await store.prune(day, before)).toBe(1);
      expect(await store.prune(day, before)).toBe(0); // the same state again: its marker is gone
      const after = await store.read(day);
      expect(after.totals).toEqual({ [tenant]: 50, [user("usr_a")]: 50 });
      expect([...after.markers.keys()]).toEqual([markerName("live")]);
      expect(
        (
          await store.reserve(day, {
            key: "third",
            amounts,
            limits: { [tenant]: 120 },
            expiresAtSeconds: expiry(),
          })
        ).kind,
      ).toBe("reserved");
    } finally {
      now = T0;
    }
  });

  it("refuses names that are not totals, and counter names with a #, before writing", async () => {
    const day = ref();
    await expect(
      store.change(day, { reservation: { key: "k", from: null, to: null }, add: { pk: 1 } }),
    ).rejects.toThrow(RangeError);
    await expect(
      store.reserve(
        { ...day, name: "a#b" },
        { key: "k", amounts: { [tenant]: 1 }, expiresAtSeconds: expiry() },
      ),
    ).rejects.toThrow(RangeError);
    expect((await store.read(day)).totals).toEqual({});
  });

  it("fails closed with COUNTER_ITEM_FULL when a write would pass 400 KB, and writes nothing", async () => {
    const day = ref();
    // Each marker carries 1000 open amounts of ~40-byte names: ~45 KB a write.
    const open = Object.fromEntries(
      Array.from({ length: 1_000 }, (_, i) => [
        totalName({ kind: "user", userId: `u${i}` }, `m${"x".repeat(20)}${i}`),
        1,
      ]),
    );
    let error: unknown;
    for (let i = 0; i < 12 && !error; i++) {
      try {
        await store.change(day, {
          reservation: { key: `big_${i}`, from: null, to: { version: 1, open, expiresAtSeconds: expiry() } },
          add: { [tenant]: 1 },
        });
      } catch (thrown) {
        error = thrown;
      }
    }
    expect(error).toBeInstanceOf(CounterItemFullError);
    expect((error as CounterItemFullError).code).toBe("COUNTER_ITEM_FULL");
    const state = await store.read(day);
    expect(state.totals[tenant]).toBe(state.markers.size);
  });
});
