/**
 * The price table's arithmetic (shared/quotas/prices.ts, docs/quotas.md "Cost"): a call's cost exact and
 * rounded half-up to the micro-unit, a hold's worst case rounded up, and how many completion tokens what
 * is left of a cost pays for, rounded down — hand-calculated values.
 */
import { describe, expect, it } from "vitest";
import { affordableTokens, callCostMicro, worstCaseMicro } from "../shared/quotas/prices.js";

const MINI = { inputPerMillion: "0.075", outputPerMillion: "0.30", currency: "USD" };

describe("prices", () => {
  it("a call's cost is exact, rounded half-up to a micro-unit", () => {
    // 1234 × 0.075 + 567 × 0.30 = 92.55 + 170.1 = 262.65 → 263
    expect(callCostMicro(MINI, { promptTokens: 1_234, completionTokens: 567 })).toBe(263);
    // 2001 × 0.075 + 35 × 0.30 = 150.075 + 10.5 = 160.575 → 161
    expect(callCostMicro(MINI, { promptTokens: 2_001, completionTokens: 35 })).toBe(161);
    const half = { inputPerMillion: "0.5", outputPerMillion: "0.000001", currency: "EUR" };
    expect(callCostMicro(half, { promptTokens: 1, completionTokens: 0 })).toBe(1); // 0.5 → 1
    expect(callCostMicro(half, { promptTokens: 0, completionTokens: 499_999 })).toBe(0); // 0.499999 → 0
    const whole = { inputPerMillion: "2500", outputPerMillion: "10000", currency: "JPY" };
    expect(callCostMicro(whole, { promptTokens: 3, completionTokens: 2 })).toBe(27_500);
  });

  it("a worst case is rounded up: never under-reserved", () => {
    // 1000 × 0.075 + 4096 × 0.30 = 75 + 1228.8 = 1303.8 → 1304
    expect(worstCaseMicro(MINI, 1_000, 4_096)).toBe(1_304);
    expect(worstCaseMicro(MINI, 1, 0)).toBe(1); // 0.075 → 1
    expect(worstCaseMicro(MINI, 0, 0)).toBe(0);
  });

  it("what is left pays for this many completion tokens once the prompt is paid, rounded down", () => {
    // 1000 − 1000 × 0.075 = 925 micro-units ÷ 0.30 = 3083.33 → 3083
    expect(affordableTokens(MINI, 1_000, 1_000)).toBe(3_083);
    expect(affordableTokens(MINI, 75, 1_000)).toBe(0); // the prompt alone takes it all
    expect(affordableTokens(MINI, -5, 0)).toBe(0);
    const free = { inputPerMillion: "0.1", outputPerMillion: "0", currency: "USD" };
    expect(affordableTokens(free, 1, 1)).toBe(Number.POSITIVE_INFINITY);
  });
});
