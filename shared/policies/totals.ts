/**
 * The running totals policies read (docs/policies.md `context.totals`), on the counters store
 * (shared/store/counters.ts): one counter item per (tenant, tool, currency, UTC day) holds every total a
 * call's decision needs (the tenant's and each user's count and gross for the day and for each hour), so
 * ONE conditional UpdateItem reserves a call and returns the totals at its own position: ten concurrent
 * calls see ten different positions, in the order DynamoDB serialized them.
 *
 * - The reservation's key is the effect's business key (recordInvoice: its quote, so a quote counts once
 *   whatever retries it, across runs and across REST and MCP), else the call's operation key; a replay
 *   or a retried durable step meets its marker and is not counted again (`fresh` false).
 * - An effect that happened keeps its reservation: no write (the marker stays, version 1).
 * - A refusal, an approval (the call runs later, and is reserved again then) or a failure without an
 *   effect releases it: one more write.
 * - A reservation whose holder crashed is released at worst when its day ends (the marker's expiry is the
 *   window's end, so a kept reservation is never pruned while it counts).
 */
import type { RunningTotal } from "../agent/result.js";
import { type CounterRef, type CounterStore, counterWindow, totalName } from "../store/counters.js";
import type { PolicyTotals, TotalsReservation } from "./decisions.js";

/** The counter family of a tool's totals in one currency (no `#`: tool names and ISO codes have none). */
function familyOf(toolName: string, currency: string): string {
  return `policy.${toolName}.${currency}`;
}

/** The item, the hour's metric prefix and the total names of a reservation. */
function placeOf(reservation: TotalsReservation) {
  const ref: CounterRef = {
    tenantId: reservation.tenantId,
    name: familyOf(reservation.toolName, reservation.currency),
    window: counterWindow("day", reservation.atMs),
  };
  const hour = `h${new Date(reservation.atMs).toISOString().slice(11, 13)}`;
  const tenant = { kind: "tenant" } as const;
  const user = { kind: "user", userId: reservation.userId } as const;
  const names = {
    tenantDay: [totalName(tenant, "dayCount"), totalName(tenant, "dayGross")],
    userDay: [totalName(user, "dayCount"), totalName(user, "dayGross")],
    tenantHour: [totalName(tenant, `${hour}Count`), totalName(tenant, `${hour}Gross`)],
    userHour: [totalName(user, `${hour}Count`), totalName(user, `${hour}Gross`)],
  } as const;
  const amounts: Record<string, number> = {};
  for (const [count, gross] of Object.values(names)) {
    amounts[count] = 1;
    amounts[gross] = reservation.grossMinor;
  }
  return { ref, names, amounts };
}

/** The four totals of `context.totals` from an item's totals (absent ones are 0). */
function totalsOf(names: ReturnType<typeof placeOf>["names"], totals: Record<string, number>) {
  const total = ([count, gross]: readonly [string, string]): RunningTotal => ({
    count: totals[count] ?? 0,
    grossMinor: totals[gross] ?? 0,
  });
  return {
    userDay: total(names.userDay),
    tenantDay: total(names.tenantDay),
    userHour: total(names.userHour),
    tenantHour: total(names.tenantHour),
  };
}

/** {@link PolicyTotals} on a {@link CounterStore}. */
export function counterTotals(store: CounterStore): PolicyTotals {
  return {
    async reserve(reservation) {
      const { ref, names, amounts } = placeOf(reservation);
      const result = await store.reserve(ref, {
        key: reservation.key,
        amounts,
        expiresAtSeconds: Math.floor(ref.window.endMs / 1000),
      });
      if (result.kind === "over_limit")
        throw new Error("A policy total has no limit, yet a reservation was refused.");
      return { fresh: result.kind === "reserved", totals: totalsOf(names, result.totals) };
    },
    async release(reservation) {
      const { ref, amounts } = placeOf(reservation);
      await store.release(ref, { key: reservation.key, reserved: amounts });
    },
  };
}
