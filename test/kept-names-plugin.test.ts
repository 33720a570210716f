/**
 * infra/kept-names-plugin.ts: built with the API bundle's esbuild options (no `keepNames`), the classes
 * whose name is read at run time keep it: boundloop's error classes and the listed dependencies'.
 */
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import { pathToFileURL } from "node:url";
import { build, type Plugin } from "esbuild";
import { afterAll, describe, expect, it } from "vitest";
import { API_BUNDLE_OPTIONS, PROJECT_ROOT } from "../infra/bundle.js";
import { NAME_READERS, withClassNames } from "../infra/kept-names-plugin.js";

/** Every `export class X … extends …Error` of functions/ and shared/, by the file (from the root) that declares it. */
function ownErrorClasses(): Array<{ file: string; name: string }> {
  const found: Array<{ file: string; name: string }> = [];
  for (const folder of ["functions", "shared"]) {
    for (const entry of readdirSync(join(PROJECT_ROOT, folder), { recursive: true, withFileTypes: true })) {
      if (!entry.isFile() || !entry.name.endsWith(".ts")) continue;
      const path = join(entry.parentPath, entry.name);
      const source = readFileSync(path, "utf8");
      for (const match of source.matchAll(/^export (?:abstract )?class (\w+) extends [\w.]*Error\b/gm)) {
        found.push({ file: relative(PROJECT_ROOT, path), name: match[1] as string });
      }
    }
  }
  return found;
}

const outdirs: string[] = [];
afterAll(() => {
  for (const dir of outdirs) rmSync(dir, { recursive: true, force: true });
});

/** Builds `source` (an ESM entry at the project root) with the API bundle's options and `plugins`, and imports it. */
async function buildAndImport(source: string, plugins: Plugin[]) {
  const outdir = mkdtempSync(join(tmpdir(), "kept-names-"));
  outdirs.push(outdir);
  await build({
    ...API_BUNDLE_OPTIONS,
    plugins,
    stdin: { contents: source, resolveDir: PROJECT_ROOT, sourcefile: "entry.ts", loader: "ts" },
    outdir,
    sourcemap: false,
    logLevel: "error",
  });
  return (await import(pathToFileURL(join(outdir, "stdin.mjs")).href)) as Record<string, unknown>;
}

const errors = ownErrorClasses();
const entry = [
  'export { NoOpLogger } from "@smithy/core/client";',
  'export { OpenAI } from "openai";',
  'export * as jose from "jose/errors";',
  ...errors.map(
    ({ file, name }) => `export { ${name} } from ${JSON.stringify(`./${file.replace(/\.ts$/, ".js")}`)};`,
  ),
].join("\n");

describe("names kept where read (infra/kept-names-plugin.ts)", () => {
  it("finds boundloop's error classes to check", () => {
    expect(errors.map(({ name }) => name)).toEqual(
      expect.arrayContaining(["ConfigError", "ProblemError", "ToolBusinessError", "StoreContentionError"]),
    );
  });

  it("the API bundle's options keep no names but these: every error class, NoOpLogger, OpenAI (its User-Agent), jose's errors", async () => {
    expect(API_BUNDLE_OPTIONS.keepNames).toBe(false);
    const built = await buildAndImport(entry, API_BUNDLE_OPTIONS.plugins);
    for (const { name } of errors) expect((built[name] as { name: string }).name, name).toBe(name);
    expect((built.NoOpLogger as { name: string }).name).toBe("NoOpLogger");
    const OpenAI = built.OpenAI as new (options: object) => { getUserAgent(): string };
    expect(new OpenAI({ apiKey: "unused" }).getUserAgent()).toMatch(/^OpenAI\/JS \d+\.\d+\.\d+/);
    const jose = built.jose as Record<string, new (message: string) => Error>;
    expect(new (jose.JWTExpired as new (message: string, payload: object) => Error)("expired", {}).name).toBe(
      "JWTExpired",
    );
    expect(new (jose.JWSSignatureVerificationFailed as new () => Error)().name).toBe(
      "JWSSignatureVerificationFailed",
    );
    const config = new (built.ConfigError as new (message: string) => Error)("bad");
    expect(config.name).toBe("ConfigError");
    expect(config.stack).toMatch(/^ConfigError: bad\n/);
  });

  it("without the plugin the same build loses those names (what the plugin is for)", async () => {
    const plugins = API_BUNDLE_OPTIONS.plugins.filter((plugin) => plugin.name !== "names-kept-where-read");
    expect(plugins).toHaveLength(API_BUNDLE_OPTIONS.plugins.length - 1);
    const built = await buildAndImport(entry, plugins);
    expect((built.NoOpLogger as { name: string }).name).not.toBe("NoOpLogger");
    expect((built.ConfigError as { name: string }).name).not.toBe("ConfigError");
  });

  it("names each class a pattern finds once, after the module's code, and leaves a module without one as it is", () => {
    const pattern = /^(?:export )?class (\w+) extends \w*Error\b/gm;
    expect(withClassNames("const a = 1;\n", pattern)).toBe("const a = 1;\n");
    expect(withClassNames("export class AError extends Error {}\nclass B extends AError {}\n", pattern)).toBe(
      [
        "export class AError extends Error {}",
        "class B extends AError {}",
        "",
        'Object.defineProperty(AError, "name", { value: "AError", configurable: true });',
        'Object.defineProperty(B, "name", { value: "B", configurable: true });',
        "",
      ].join("\n"),
    );
  });

  it("each dependency file it names is installed", () => {
    for (const { pkg, file } of NAME_READERS) {
      expect(existsSync(join(PROJECT_ROOT, "node_modules", pkg, file)), `${pkg}/${file}`).toBe(true);
    }
  });
});
