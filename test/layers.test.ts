import { mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import { cruise } from "dependency-cruiser";
import { describe, expect, it } from "vitest";

// The layers' one-way flow (docs/architecture.md): checked over the source as committed, with
// dependency-cruiser's rules in .dependency-cruiser.cjs (also `npm run lint`). The size of every file:
// test/source-rules.test.ts.

const ROOT = new URL("..", import.meta.url).pathname;
const rules = createRequire(import.meta.url)(join(ROOT, ".dependency-cruiser.cjs")) as {
  forbidden: unknown[];
  options: Record<string, unknown>;
};

/** The rule violations dependency-cruiser finds in `paths` (relative to `cwd`), as "rule: from → to". */
async function violations(paths: string[], cwd: string): Promise<string[]> {
  const previous = process.cwd();
  process.chdir(cwd);
  try {
    const result = await cruise(paths, {
      ...rules.options,
      tsConfig: { fileName: join(ROOT, "tsconfig.json") },
      ruleSet: { forbidden: rules.forbidden },
      validate: true,
    } as never);
    const output = result.output as {
      summary: { violations: Array<{ rule: { name: string }; from: string; to: string }> };
    };
    return output.summary.violations.map((v) => `${v.rule.name}: ${v.from} → ${v.to}`);
  } finally {
    process.chdir(previous);
  }
}

/** Every .ts file under `dir` (relative to the repository root). */
function sources(dir: string): string[] {
  return readdirSync(join(ROOT, dir), { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile() && entry.name.endsWith(".ts"))
    .map((entry) => relative(ROOT, join(entry.parentPath, entry.name)));
}

describe("the layers", () => {
  it("functions/ and shared/ have no import cycle (type-only imports included) and flow one way", async () => {
    expect(await violations(["functions", "shared"], ROOT)).toEqual([]);
  }, 120_000);

  it("the check does find a type-only cycle and an upward import", async () => {
    const dir = mkdtempSync(join(tmpdir(), "layers-"));
    mkdirSync(join(dir, "shared", "agent"), { recursive: true });
    mkdirSync(join(dir, "shared", "runs"), { recursive: true });
    writeFileSync(
      join(dir, "shared", "agent", "a.ts"),
      'import type { B } from "./b.js";\nexport type A = B[];\n',
    );
    writeFileSync(
      join(dir, "shared", "agent", "b.ts"),
      'import type { A } from "./a.js";\nexport type B = A | 1;\n',
    );
    writeFileSync(
      join(dir, "shared", "agent", "c.ts"),
      'import { r } from "../runs/r.js";\nexport const c = r;\n',
    );
    writeFileSync(join(dir, "shared", "runs", "r.ts"), "export const r = 1;\n");
    const found = await violations(["shared"], dir);
    expect(found).toContain("no-circular: shared/agent/a.ts → shared/agent/b.ts");
    expect(found).toContain("engine-not-application: shared/agent/c.ts → shared/runs/r.ts");
  }, 120_000);

  it("nothing under shared/ imports HTTP problems: no ProblemError, no status table", () => {
    const imports = /^import[^;]*(\bProblemError\b|\bPROBLEM_STATUS\b|problem-details)/m;
    expect(sources("shared").filter((path) => imports.test(readFileSync(join(ROOT, path), "utf8")))).toEqual(
      [],
    );
    expect(imports.test('import { ProblemError } from "../errors.js";')).toBe(true);
  });
});
