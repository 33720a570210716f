/**
 * An esbuild plugin for the Lambda bundles (infra/bundle.ts): the `require` banner stays only in the
 * output files that use it. A split build gives its banner to every file (63 of the API bundle's), but
 * only the few holding CommonJS code that requires Node built-ins name `require`; the others carried
 * ~88 bytes each for nothing (~4 kB of the API bundle, P4).
 */
import { readFile, writeFile } from "node:fs/promises";
import { resolve } from "node:path";
import type { Plugin } from "esbuild";

/**
 * The banner (infra/bundle.ts API_BUNDLE_OPTIONS): a module-scoped `require` for CommonJS dependencies
 * bundled into ESM, which esbuild's `__require` helper and their own `require(…)` calls reach.
 */
export const REQUIRE_BANNER =
  "import { createRequire } from 'module'; const require = createRequire(import.meta.url);";

/**
 * `text` (one output file) without the banner when nothing after it names `require`, else unchanged.
 * The banner's line stays, empty, so the file's source map (mappings by line) still fits. A file that
 * names `require` only inside a string keeps it too: harmless, and the test is lexical, so no file that
 * does use it ever loses it (a reference to the binding must spell `require`; minifying renames
 * bindings of the bundle's own code, never this free one).
 */
export function withRequireBannerWhereUsed(text: string): string {
  if (!text.startsWith(REQUIRE_BANNER)) return text;
  const rest = text.slice(REQUIRE_BANNER.length);
  return /\brequire\b/.test(rest) ? text : rest;
}

/**
 * Rewrites each JavaScript output file with {@link withRequireBannerWhereUsed} once the build has
 * written it, and corrects the byte counts of esbuild's metafile (the bundle size P4 reports). Needs a
 * build that writes its files and asks for the metafile.
 */
export const requireBannerWhereUsed: Plugin = {
  name: "require-banner-where-used",
  setup(esbuild) {
    const root = esbuild.initialOptions.absWorkingDir ?? process.cwd();
    esbuild.onEnd(async (result) => {
      const outputs = result.metafile?.outputs ?? {};
      await Promise.all(
        Object.entries(outputs).map(async ([file, output]) => {
          if (!file.endsWith(".mjs")) return;
          const path = resolve(root, file);
          const text = await readFile(path, "utf8");
          const kept = withRequireBannerWhereUsed(text);
          if (kept === text) return;
          await writeFile(path, kept);
          output.bytes = Buffer.byteLength(kept);
        }),
      );
    });
  },
};
