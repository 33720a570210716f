/**
 * Builds the operator console's browser assets with the project's esbuild: console/client/app.ts (ES
 * module, split so oidc-client-ts is a chunk of its own, loaded only on the OIDC sign-in path) and
 * console/client/console.css, minified, each named by its content hash (`app-<hash>.js`), so they can be
 * cached for a year. The API function's bundle carries them as files next to its code
 * (infra/bundle.ts writes `<outdir>/console/`); unbundled runs (`npm run dev`, tests) build them in
 * memory on the first request for the console (functions/api/console.ts).
 */
import { mkdir, writeFile } from "node:fs/promises";
import { basename, join } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";

/** The console's manifest: which hashed files the page links, and the content type of each file. */
export interface ConsoleManifest {
  script: string;
  style: string;
  files: Record<string, string>;
}

/**
 * Built assets: the manifest, each file's text by name, and which files each one imports (static
 * `import` and dynamic `import()` apart, by file name): how the page loads its views lazily.
 */
export interface ConsoleAssetSet {
  manifest: ConsoleManifest;
  bodies: Record<string, string>;
  imports: Record<string, { static: string[]; dynamic: string[] }>;
}

const CLIENT_DIR = fileURLToPath(new URL("./client/", import.meta.url));

/**
 * Builds the assets in memory (nothing written).
 * @throws esbuild's build failure with its messages
 */
export async function buildConsoleAssets(): Promise<ConsoleAssetSet> {
  const result = await build({
    entryPoints: { app: join(CLIENT_DIR, "app.ts"), console: join(CLIENT_DIR, "console.css") },
    bundle: true,
    format: "esm",
    splitting: true,
    platform: "browser",
    target: ["es2022"],
    minify: true,
    entryNames: "[name]-[hash]",
    chunkNames: "[name]-[hash]",
    outdir: "/console-assets",
    write: false,
    legalComments: "none",
    logLevel: "warning",
    metafile: true,
  });
  const bodies: Record<string, string> = {};
  const files: Record<string, string> = {};
  for (const output of result.outputFiles) {
    const name = basename(output.path);
    bodies[name] = output.text;
    files[name] = name.endsWith(".css") ? "text/css; charset=utf-8" : "text/javascript; charset=utf-8";
  }
  const imports: ConsoleAssetSet["imports"] = {};
  for (const [path, output] of Object.entries(result.metafile.outputs)) {
    const kinds = (kind: string) =>
      output.imports.filter((i) => i.kind === kind && !i.external).map((i) => basename(i.path));
    imports[basename(path)] = { static: kinds("import-statement"), dynamic: kinds("dynamic-import") };
  }
  const names = Object.keys(files);
  const script = names.find((name) => name.startsWith("app-") && name.endsWith(".js"));
  const style = names.find((name) => name.startsWith("console-") && name.endsWith(".css"));
  if (!script || !style) throw new Error(`The console build made no app script or stylesheet: ${names}`);
  return { manifest: { script, style, files }, bodies, imports };
}

/**
 * Builds the assets into `dir` (created): each file, and `manifest.json`.
 * @returns the manifest written
 */
export async function writeConsoleAssets(dir: string): Promise<ConsoleManifest> {
  const { manifest, bodies } = await buildConsoleAssets();
  await mkdir(dir, { recursive: true });
  for (const [name, body] of Object.entries(bodies)) await writeFile(join(dir, name), body);
  await writeFile(join(dir, "manifest.json"), `${JSON.stringify(manifest, null, 2)}\n`);
  return manifest;
}
