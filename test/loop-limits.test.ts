import { describe, expect, it } from "vitest";
import { clampRunLimits } from "../shared/agent/run-limits.js";
import { ConfigError, loadConfig } from "../shared/config.js";

describe("run limits", () => {
  it("the server's caps come from config, with documented defaults", () => {
    expect(loadConfig({}).limits).toEqual({
      maxCycles: 5,
      runTimeoutMs: 25_000,
      deadlineReserveMs: 1_500,
      maxTotalTokens: 100_000,
      maxToolCallsPerTurn: 8,
      maxToolCallsPerRun: 20,
      maxConcurrentToolCalls: 4,
      maxToolResultBytes: 16_384,
      loopBreakerThreshold: 2,
      summarizeOnMaxCycles: false,
    });
    const configured = loadConfig({
      MAX_TOTAL_TOKENS: "5000",
      MAX_TOOL_CALLS_PER_TURN: "3",
      MAX_TOOL_CALLS_PER_RUN: "9",
      MAX_PARALLEL_TOOL_CALLS: "2",
      MAX_TOOL_RESULT_BYTES: "4096",
      LOOP_BREAKER_THRESHOLD: "3",
      SUMMARIZE_ON_MAX_CYCLES: "true",
    }).limits;
    expect(configured).toMatchObject({
      maxTotalTokens: 5_000,
      maxToolCallsPerTurn: 3,
      maxToolCallsPerRun: 9,
      maxConcurrentToolCalls: 2,
      maxToolResultBytes: 4_096,
      loopBreakerThreshold: 3,
      summarizeOnMaxCycles: true,
    });
    expect(() => loadConfig({ MAX_PARALLEL_TOOL_CALLS: "0" })).toThrow(ConfigError);
    expect(() => loadConfig({ SUMMARIZE_ON_MAX_CYCLES: "yes" })).toThrow(/SUMMARIZE_ON_MAX_CYCLES/);
  });

  it("a request may lower a limit, never raise it", () => {
    const caps = { ...loadConfig({}).limits, summarizeOnMaxCycles: true };
    const limits = clampRunLimits(caps, { maxCycles: 3, runTimeoutMs: 60_000, maxTotalTokens: 10 });
    expect(limits).toMatchObject({
      maxCycles: 3,
      runTimeoutMs: 25_000,
      maxTotalTokens: 10,
      maxToolCallsPerRun: 20,
    });
    expect(clampRunLimits(caps, { summarizeOnMaxCycles: false }).summarizeOnMaxCycles).toBe(false);
    expect(
      clampRunLimits({ ...caps, summarizeOnMaxCycles: false }, { summarizeOnMaxCycles: true })
        .summarizeOnMaxCycles,
    ).toBe(false);
    expect(clampRunLimits(caps)).toEqual(caps);
    expect(caps.maxCycles).toBe(5); // the caps are not changed
    expect(() => clampRunLimits(caps, { maxCycles: 0 })).toThrow(RangeError);
    expect(() => clampRunLimits(caps, { runTimeoutMs: 1.5 })).toThrow(
      /runTimeoutMs must be a positive integer/,
    );
  });
});
