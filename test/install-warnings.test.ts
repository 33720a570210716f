/**
 * What `npm install` prints on Node 20 is what the README says: the packages of the
 * lockfile whose `engines.node` excludes Node 20 are exactly the ones the README counts and names, and no
 * install script waits for approval (package.json `allowScripts`), so npm's allowScripts warning is gone.
 */
import { readFileSync } from "node:fs";
import { satisfies } from "semver";
import { describe, expect, it } from "vitest";
import { REPO_ROOT } from "./support/scripts.js";

/** The oldest Node 20 the lockfile supports: vite's and rolldown's bindings ask for 20.19. */
const NODE_20 = "20.19.0";

interface LockEntry {
  version: string;
  engines?: { node?: string };
  scripts?: unknown;
  hasInstallScript?: boolean;
}
const lock = JSON.parse(readFileSync(`${REPO_ROOT}package-lock.json`, "utf8")) as {
  packages: Record<string, LockEntry>;
};
const pkg = JSON.parse(readFileSync(`${REPO_ROOT}package.json`, "utf8")) as {
  allowScripts?: Record<string, boolean>;
};
const readme = readFileSync(`${REPO_ROOT}README.md`, "utf8").replace(/\s+/g, " ");
const nameOf = (path: string) => path.replace(/^.*node_modules\//, "");

/** `name@version` of every installed copy whose engines exclude `node`: npm warns once per copy. */
function warningsOn(node: string): string[] {
  return Object.entries(lock.packages).flatMap(([path, entry]) =>
    path && entry.engines?.node && !satisfies(node, entry.engines.node)
      ? [`${nameOf(path)}@${entry.version}`]
      : [],
  );
}

/** `name@version` of every installed package whose engines exclude `node`. */
function warnedOn(node: string): string[] {
  return [...new Set(warningsOn(node))].sort();
}

describe("npm install on Node 20", () => {
  it("warns EBADENGINE for exactly the packages the README counts and names", () => {
    const warned = warnedOn(NODE_20);
    expect(readme).toContain(`for ${warned.length - 1} more packages, ${warned.length} in all`);
    const otel = warned.filter((p) => p.startsWith("@opentelemetry/"));
    const aiSdk = warned.filter((p) => p.startsWith("@ai-sdk/"));
    expect(readme).toContain(`OpenTelemetry (${otel.length} packages, Node 22.15)`);
    expect(readme).toContain(`\`@ai-sdk/*\` (${aiSdk.length})`);
    const rest = warned
      .filter((p) => !otel.includes(p) && !aiSdk.includes(p))
      .map((p) => p.replace(/@[^@]+$/, ""));
    expect(new Set(rest)).toEqual(
      new Set(["@aws/durable-execution-sdk-js", "@aws/durable-execution-sdk-js-testing", "ai", "openai"]),
    );
    // The nested openai is a major the project does not use itself (package.json pins 6.x).
    expect(warned).toContainEqual(expect.stringMatching(/^openai@7\./));
    // npm warns once per installed copy, so a package nested in several places warns several times.
    const warnings = warningsOn(NODE_20);
    const openaiCopies = warnings.filter((p) => /^openai@7\./.test(p)).length;
    const copies =
      ({ 2: "twice", 3: "three times" } as Record<number, string>)[openaiCopies] ?? `${openaiCopies} times`;
    expect(readme).toContain(`installed ${copies} and warns for each copy: ${warnings.length} warnings`);
  });

  it("warns for none on Node 22.15", () => {
    expect(warnedOn("22.15.0")).toEqual([]);
  });

  it("has every package with an install script approved in allowScripts", () => {
    const scripted = Object.entries(lock.packages)
      .filter(([path, entry]) => path && entry.hasInstallScript)
      .map(([path]) => nameOf(path));
    expect(scripted.length).toBeGreaterThan(0);
    for (const name of scripted) expect(pkg.allowScripts?.[name], name).toBe(true);
  });
});
