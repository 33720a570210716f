import { describe, expect, it } from "vitest";
import { loadConfig } from "../shared/config.js";
import { amountOfMicro, microOf } from "../shared/money/micro.js";
import { LimitsChangeSchema } from "../shared/quotas/limits.js";

// A cost limit is counted in micro-units (10⁻⁶ of the price table's currency) as a JavaScript number
// (shared/quotas/prices.ts). Above 2⁵³ micro-units a number is no longer exact: 123456789012.345678
// was held and shown as 123456789012.345680. So a limit has at most 9 integer digits, in the
// environment (USER_COST_PER_DAY, TENANT_COST_PER_DAY) and in PUT /v1/limits alike.

const PRICED = {
  MODEL_PRICES: '{"gpt-4o-mini":{"inputPerMillion":"0.15","outputPerMillion":"0.60","currency":"USD"}}',
};
const RULE = 'must be a decimal string of at most 9 integer digits and 6 decimal places, e.g. "25.00"';

describe("cost limits are exact in micro-units", () => {
  it("the largest accepted limit round-trips through micro-units exactly", () => {
    for (const limit of ["999999999.999999", "0.000001", "25.00"]) {
      const micro = Number(microOf(limit));
      expect(Number.isSafeInteger(micro), limit).toBe(true);
      expect(amountOfMicro(micro)).toBe(
        `${limit.split(".")[0]}.${(limit.split(".")[1] ?? "").padEnd(6, "0")}`,
      );
    }
    expect(
      loadConfig({ ...PRICED, USER_COST_PER_DAY: "999999999.999999" }).quotas.limits.user.costPerDay,
    ).toBe("999999999.999999");
  });

  it("refuses a limit of 10 or more integer digits at cold start, naming the variable", () => {
    for (const name of ["USER_COST_PER_DAY", "TENANT_COST_PER_DAY"]) {
      expect(() => loadConfig({ ...PRICED, [name]: "123456789012.345678" })).toThrow(
        `Invalid configuration: ${name}: ${RULE}`,
      );
      expect(() => loadConfig({ ...PRICED, [name]: "1000000000" })).toThrow(`${name}: ${RULE}`);
    }
  });

  it("refuses it in PUT /v1/limits' body too", () => {
    const parsed = LimitsChangeSchema.safeParse({ tenant: { costPerDay: "123456789012.345678" } });
    expect(parsed.success).toBe(false);
    expect(parsed.error?.issues.map((issue) => issue.message)).toEqual([RULE.replace(/^must be /, "")]);
    expect(LimitsChangeSchema.safeParse({ user: { costPerDay: "999999999.999999" } }).success).toBe(true);
  });
});

// One parser reads every amount back into micro-units (shared/money/micro.ts microOf): the price table's
// prices, cost limits, a cancelled run's cost and the console's sums. It is exact on the digits and
// refuses what no schema lets through instead of rounding it.
describe("microOf: an amount of at most six decimal places in micro-units", () => {
  it("reads each form exactly, beyond 2⁵³ too", () => {
    expect(microOf("2.5")).toBe(2_500_000n);
    expect(microOf("0.000020")).toBe(20n);
    expect(microOf("0")).toBe(0n);
    expect(microOf("25")).toBe(25_000_000n);
    expect(microOf("999999999999.999999")).toBe(999_999_999_999_999_999n);
    expect(amountOfMicro(Number(microOf("0.15")))).toBe("0.150000");
  });

  it("refuses a sign, a seventh decimal place, an exponent or no digits, never rounding them", () => {
    for (const amount of ["-1.00", "0.0000001", "1e3", "", ".5", "1.", " 1", "1,00"]) {
      expect(() => microOf(amount), amount).toThrow(RangeError);
    }
  });
});
