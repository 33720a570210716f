import { execFileSync } from "node:child_process";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";
import { describe, expect, it } from "vitest";

/**
 * Rules about the source text itself, checked over the files as committed: every line the service
 * writes goes through its Powertools logger (shared/observability.ts), comments explain code rather
 * than point at issue numbers, no TypeScript file is over 450 lines, and every browser test is left out of
 * CI's second pass on the deployed runtime (a minute each there, and no code Lambda runs).
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

/**
 * Every TypeScript file of the repository (.ts, .tsx, .mts, .cts; relative to its root): those git
 * tracks and the new ones it does not ignore, node_modules never.
 */
function typeScriptFiles(): string[] {
  const listed = execFileSync(
    "git",
    ["ls-files", "--cached", "--others", "--exclude-standard", "--", "*.ts", "*.tsx", "*.mts", "*.cts"],
    { cwd: ROOT, encoding: "utf8" },
  );
  return [...new Set(listed.split("\n"))]
    .filter((path) => path !== "" && !path.split("/").includes("node_modules"))
    .filter((path) => existsSync(join(ROOT, path)))
    .sort();
}

/** The most lines a TypeScript file may have (docs/architecture.md). */
const MAX_LINES = 450;

/** How many lines `text` has, as `wc -l` counts them (a last line without its newline counts too). */
const lineCount = (text: string): number =>
  text === "" ? 0 : text.split("\n").length - (text.endsWith("\n") ? 1 : 0);

/** `path: N lines` for each of `files` (read by `read`) over {@link MAX_LINES}. */
const overLong = (files: string[], read: (path: string) => string): string[] =>
  files.flatMap((path) => {
    const lines = lineCount(read(path));
    return lines > MAX_LINES ? [`${path}: ${lines} lines`] : [];
  });

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

  it("no TypeScript file of the repository is over 450 lines: entries, shared code, infra, the console, tooling, tests, benchmarks", () => {
    const files = typeScriptFiles();
    for (const dir of ["functions/", "shared/", "infra/", "console/", "local/", "test/", "bench/"]) {
      expect(
        files.some((path) => path.startsWith(dir)),
        dir,
      ).toBe(true);
    }
    expect(files).toContain("vitest.config.ts");
    const long = overLong(files, (path) => readFileSync(join(ROOT, path), "utf8"));
    expect(long, `over ${MAX_LINES} lines (split each along what it holds):\n${long.join("\n")}`).toEqual([]);
    // The rule does find a long file, and names it with its line count.
    const sample: Record<string, string> = { "a.ts": "x\n".repeat(451), "b.ts": "x\n".repeat(450) };
    expect(overLong(["a.ts", "b.ts"], (path) => sample[path] ?? "")).toEqual(["a.ts: 451 lines"]);
    expect([lineCount(""), lineCount("x"), lineCount("x\n"), lineCount("x\ny")]).toEqual([0, 1, 1, 2]);
  });

  it("every browser test is left out of CI's pass on the deployed runtime (vitest.config.ts NOT_DEPLOYED)", () => {
    const config = readFileSync(join(ROOT, "vitest.config.ts"), "utf8");
    const notDeployed = config.slice(
      config.indexOf("const NOT_DEPLOYED"),
      config.indexOf("];", config.indexOf("const NOT_DEPLOYED")),
    );
    const browserTests = sources("test").filter((path) =>
      /from "\.\/support\/(browser|console)\.js"/.test(readFileSync(join(ROOT, path), "utf8")),
    );
    expect(browserTests.length).toBeGreaterThanOrEqual(5);
    expect(browserTests.filter((path) => !notDeployed.includes(`"${path}"`))).toEqual([]);
  });
});
