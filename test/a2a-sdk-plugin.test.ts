import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { build } from "esbuild";
import { afterAll, describe, expect, it } from "vitest";
import { a2aSdkUnusedErrors, withPureErrorFactories } from "../infra/a2a-sdk-plugin.js";
import { API_BUNDLE_OPTIONS, PROJECT_ROOT } from "../infra/bundle.js";

// The A2A SDK's errors entry point built as the deployed bundle builds it, with and without the plugin:
// what the plugin marks, what it saves, and that the classes kept are the SDK's own.

const outdir = mkdtempSync(join(tmpdir(), "boundloop-a2a-plugin-"));
afterAll(() => rmSync(outdir, { recursive: true, force: true }));

/** Builds one file importing `TaskNotFoundError` and `A2AError` from @a2a-js/sdk/errors; its path and bytes. */
async function buildErrors(name: string, withPlugin: boolean) {
  const outfile = join(outdir, `${name}.mjs`);
  await build({
    ...API_BUNDLE_OPTIONS,
    plugins: withPlugin ? [a2aSdkUnusedErrors] : [],
    splitting: false,
    sourcemap: false,
    metafile: false,
    stdin: {
      contents: 'export { A2AError, TaskNotFoundError } from "@a2a-js/sdk/errors";',
      resolveDir: PROJECT_ROOT,
      loader: "js",
    },
    outfile,
    outdir: undefined,
  });
  return { outfile, bytes: readFileSync(outfile).length };
}

describe("infra/a2a-sdk-plugin.ts", () => {
  it("marks each error factory call and frozen table of the SDK's files pure, and nothing else", () => {
    const errors = readFileSync(join(PROJECT_ROOT, "node_modules/@a2a-js/sdk/dist/errors/index.js"), "utf8");
    const marked = withPureErrorFactories(errors);
    const annotations =
      marked.match(/\/\* @__PURE__ \*\/ (make(Semantic|Rest|JsonRpc)|Object\.freeze)\(/g) ?? [];
    // 10 semantic, 10 REST and 10 JSON-RPC classes, and the SDK's frozen tables.
    expect(annotations.filter((call) => call.includes("makeSemantic"))).toHaveLength(10);
    expect(annotations.filter((call) => call.includes("makeRest"))).toHaveLength(10);
    expect(annotations.filter((call) => call.includes("makeJsonRpc"))).toHaveLength(10);
    // Only annotations were added: every other byte is the SDK's.
    expect(marked.length - errors.length).toBe(annotations.length * "/* @__PURE__ */ ".length);
    expect(withPureErrorFactories('var x = makeRest("A");\n  var y = makeRest("B");')).toBe(
      'var x = /* @__PURE__ */ makeRest("A");\n  var y = makeRest("B");',
    );
  });

  it("leaves the unused classes out; the kept ones are the SDK's own, with their codes", async () => {
    const plain = await buildErrors("plain", false);
    const trimmed = await buildErrors("trimmed", true);
    expect(plain.bytes - trimmed.bytes).toBeGreaterThan(2_000);
    const sdk = (await import(pathToFileURL(trimmed.outfile).href)) as typeof import("@a2a-js/sdk/errors");
    const error = new sdk.TaskNotFoundError({ message: "There is no run run_1." });
    expect(error).toBeInstanceOf(sdk.A2AError);
    expect([error.name, error.message, error.reason]).toEqual([
      "TaskNotFoundError",
      "There is no run run_1.",
      "TASK_NOT_FOUND",
    ]);
  });
});
