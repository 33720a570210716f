import { describe, expect, it } from "vitest";
import { presetAwareIds, randomHex } from "../shared/telemetry/sdk.js";

describe("span and trace ids", () => {
  it("are W3C trace-context ids: lower-case hex of 16 and 8 bytes, never all zero, all distinct", () => {
    const traces = Array.from({ length: 5_000 }, () => presetAwareIds.generateTraceId());
    const spans = Array.from({ length: 5_000 }, () => presetAwareIds.generateSpanId());
    for (const id of traces) expect(id).toMatch(/^(?!0{32})[0-9a-f]{32}$/);
    for (const id of spans) expect(id).toMatch(/^(?!0{16})[0-9a-f]{16}$/);
    // 5 000 of each span several refills of the random pool: no id repeats across them.
    expect(new Set(traces).size).toBe(traces.length);
    expect(new Set(spans).size).toBe(spans.length);
  });

  it("draw fresh bytes for every id, whatever its size", () => {
    const ids = Array.from({ length: 2_000 }, (_, i) => randomHex(1 + (i % 24)));
    expect(ids.every((id, i) => id.length === 2 * (1 + (i % 24)))).toBe(true);
    const long = ids.filter((id) => id.length >= 16);
    expect(new Set(long).size).toBe(long.length);
  });
});
