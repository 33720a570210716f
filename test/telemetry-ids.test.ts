import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { sha256Hex } from "../shared/hash.js";
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

describe("the service's one hash", () => {
  it("is SHA-256 as hex, for ASCII and non-ASCII text alike (FIPS 180-2 vectors; UTF-8 bytes)", () => {
    expect(sha256Hex("abc")).toBe("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    expect(sha256Hex("")).toBe("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    expect(sha256Hex("€")).toBe(
      createHash("sha256")
        .update(Buffer.from([0xe2, 0x82, 0xac]))
        .digest("hex"),
    );
  });
});
