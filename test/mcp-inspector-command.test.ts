/**
 * Every MCP Inspector command the docs and `npm run dev` give runs the pinned Inspector
 * (local/mcp-inspector.ts): unpinned, npx installs 0.15.0 on Node 20, which has no `--header`.
 * CI runs the README's command itself against `npm run dev` (.ci/mcp-inspector).
 */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { MCP_INSPECTOR, MCP_INSPECTOR_COMMAND } from "../local/mcp-inspector.js";

const read = (path: string) => readFileSync(new URL(`../${path}`, import.meta.url), "utf8");

/** The lines of `text` that run an Inspector through npx. */
const inspectorLines = (text: string) => text.split("\n").filter((line) => /npx .*inspector/.test(line));

describe("the MCP Inspector command", () => {
  it("pins a version past 0.15.0 (the last without --header)", () => {
    const version = MCP_INSPECTOR.split("@").at(-1) ?? "";
    const [major, minor] = version.split(".").map(Number);
    expect(major === 0 ? (minor ?? 0) > 15 : (major ?? 0) > 0).toBe(true);
  });

  it.each(["README.md", "docs/mcp.md", "local/dev-serve.ts"])(
    "%s runs only the pinned Inspector's CLI",
    (path) => {
      const text = read(path);
      const lines = inspectorLines(text);
      if (path === "local/dev-serve.ts") {
        expect(text).toMatch(
          /` {2}\$\{MCP_INSPECTOR_COMMAND\} \$\{mcpUrl\} --transport http --method tools\/list/,
        );
        return;
      }
      expect(lines.length).toBeGreaterThan(0);
      for (const line of lines) {
        expect(
          line.trim().startsWith(`${MCP_INSPECTOR_COMMAND} http://127.0.0.1:3000/mcp --transport http`),
        ).toBe(true);
      }
    },
  );

  it("CI runs the README's command against npm run dev", () => {
    // A step of its own (beside the first pass's timed files), awaited, its failure failing CI.
    const ci = read(".ci/run");
    expect(ci).toMatch(/^start_low_step inspector \.ci\/mcp-inspector$/m);
    expect(ci).toMatch(/^await_step inspector \|\| status=\$\?$/m);
    expect(read(".ci/mcp-inspector")).toContain("npm run -s dev -- --port 0");
  });
});
