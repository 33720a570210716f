/**
 * Loading the Cedar engine (shared/cedar/wasm.ts): the V8 tiering budget it raises while the engine's
 * module compiles is set back to this Node.js's own default, read from `node --v8-options` of the running
 * binary (Node 20 here, Node 24 in CI's last pass), and a V8 whose default is not known is left alone.
 */
import { execFileSync } from "node:child_process";
import { describe, expect, it } from "vitest";
import { v8DefaultTieringBudget } from "../shared/cedar/wasm.js";

describe("the engine's V8 tiering budget", () => {
  it("is set back to the running V8's default, and left alone on a V8 not known", () => {
    const options = execFileSync(process.execPath, ["--v8-options"], { encoding: "utf8" });
    const listed = /--wasm-tiering-budget \(.*\)\n\s*type: int\s+default: --wasm-tiering-budget=(\d+)/.exec(
      options,
    );
    expect(listed?.[1]).toMatch(/^\d+$/);
    expect(v8DefaultTieringBudget()).toBe(Number(listed?.[1]));
    expect(v8DefaultTieringBudget("12.4.254.21-node.33")).toBeUndefined();
  });
});
