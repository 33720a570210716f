import { readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";
import { describe, expect, it } from "vitest";

/**
 * Rules about the source text itself, checked over the files as committed: every line the service
 * writes goes through its Powertools logger (shared/observability.ts), and comments explain code rather
 * than point at issue numbers.
 */
const ROOT = new URL("..", import.meta.url).pathname;

/** Every .ts file under `dir` (relative to the repository root), node_modules excluded. */
function sources(dir: string): string[] {
  return readdirSync(join(ROOT, dir), { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile() && entry.name.endsWith(".ts"))
    .map((entry) => relative(ROOT, join(entry.parentPath, entry.name)))
    .filter((path) => !path.includes("node_modules"))
    .sort();
}

/** `line: text` of every line of `text` matching `pattern`. */
const hits = (text: string, pattern: RegExp): string[] =>
  text.split("\n").flatMap((line, index) => (pattern.test(line) ? [`${index + 1}: ${line.trim()}`] : []));

/** `path:line: text` of every line of `files` matching `pattern`. */
const matches = (files: string[], pattern: RegExp): string[] =>
  files.flatMap((path) =>
    hits(readFileSync(join(ROOT, path), "utf8"), pattern).map((hit) => `${path}:${hit}`),
  );

/** A call of any console method. */
const CONSOLE_CALL = /\bconsole\.(log|info|warn|error|debug|trace)\b/;
/** A comment line naming an issue by number ("issue 4", "issues #6"). */
const ISSUE_REFERENCE = /(\/\/|\/\*|^\s*\*).*\bissues? #?\d+/i;

describe("source rules", () => {
  it("functions/ and shared/ log only through the Powertools logger: no console.*", () => {
    const files = [...sources("functions"), ...sources("shared")];
    expect(files.length).toBeGreaterThan(20);
    expect(matches(files, CONSOLE_CALL)).toEqual([]);
    // The rule does find a console call.
    expect(hits('const a = 1;\n  console.error(JSON.stringify({ level: "ERROR" }));', CONSOLE_CALL)).toEqual([
      '2: console.error(JSON.stringify({ level: "ERROR" }));',
    ]);
  });

  it("comments do not point at issue numbers", () => {
    // This file is left out: its samples of the rule are what the rule finds.
    const files = ["functions", "shared", "local", "infra", "bench", "test"]
      .flatMap(sources)
      .filter((path) => path !== "test/source-rules.test.ts");
    expect(files.length).toBeGreaterThan(100);
    expect(matches(files, ISSUE_REFERENCE)).toEqual([]);
    // The rule does find one, in either comment style, and leaves code alone.
    const sample = "// see issue 8\n * retention of a record (issue 4);\nconst issue = issues[0];";
    expect(hits(sample, ISSUE_REFERENCE)).toEqual([
      "1: // see issue 8",
      "2: * retention of a record (issue 4);",
    ]);
  });
});
