/**
 * `npm start -- --trace`'s tree (local/trace-tree.ts): with TRACE_CONTENT=true the content attributes a
 * span carries are printed under it (the usage says TRACE_CONTENT adds them), cut to a readable length;
 * without it the tree is names, durations and key attributes only.
 */
import { trace } from "@opentelemetry/api";
import { afterEach, describe, expect, it } from "vitest";
import { startTraceTree } from "../local/trace-tree.js";
import { ATTR, configureTracing, inSpan, Kind, setContent } from "../shared/tracing.js";

let shutdown: (() => Promise<void>) | undefined;
afterEach(async () => {
  await shutdown?.();
  configureTracing({ enabled: false, captureContent: false });
  trace.disable();
});

/** One tool span with arguments and a long result as content, printed by a tree started with `content`. */
async function treeWith(content: boolean): Promise<string[]> {
  const tree = startTraceTree(content);
  shutdown = () => tree.sdk.shutdown();
  await inSpan("execute_tool calculateTax", { kind: Kind.INTERNAL }, async (span) => {
    span?.setAttribute(ATTR.toolCallId, "call_1_0");
    setContent(span, ATTR.toolArguments, () => ({ amount: "1500", currency: "GBP" }));
    setContent(span, ATTR.toolResult, () => ({ note: "x".repeat(1_000) }));
  });
  const lines: string[] = [];
  tree.print((line) => lines.push(line));
  return lines;
}

describe("the --trace tree", () => {
  it("prints each content attribute under its span when content capture is on, long values cut", async () => {
    const lines = await treeWith(true);
    expect(lines[1]).toMatch(
      /^ {2}execute_tool calculateTax {2}[\d.]+ ms {2}gen_ai\.tool\.call\.id="call_1_0"$/,
    );
    expect(lines[2]).toBe(`      gen_ai.tool.call.arguments: {"amount":"1500","currency":"GBP"}`);
    const result = lines[3] ?? "";
    expect(result.startsWith(`      gen_ai.tool.call.result: {"note":"xxx`)).toBe(true);
    expect(result).toMatch(/… \(1011 characters\)$/);
    expect(result.length).toBeLessThan(400);
    expect(lines).toHaveLength(4);
  });

  it("prints no content without it", async () => {
    const lines = await treeWith(false);
    expect(lines).toHaveLength(2);
    expect(lines.join("\n")).not.toMatch(/gen_ai\.tool\.call\.(arguments|result)/);
  });
});
