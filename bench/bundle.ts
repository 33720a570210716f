/**
 * The benchmarks' builds. The deployed handler is built by infra/bundle.ts, the very function the stack's
 * synth runs (esbuild, ESM, split into chunks along the handler's dynamic imports, minified, source maps,
 * zod's locales reduced to English, nothing external); the peers' fixtures with the same esbuild options
 * minus what is boundloop's own (no plugin, one file), plus a metafile for the size figures.
 */
import { mkdir, rm } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import { type BuildOptions, build, type Metafile } from "esbuild";
import { API_BUNDLE_OPTIONS, buildApiBundle } from "../infra/bundle.js";

export { PROJECT_ROOT } from "../infra/bundle.js";

/** Where the benchmarks put their builds: inside node_modules, so bundles built with external packages resolve them. */
export const BUILD_DIR = fileURLToPath(new URL("../node_modules/.cache/boundloop-bench/", import.meta.url));

/**
 * infra/bundle.ts's esbuild options without boundloop's own build choices (no plugin, no splitting, names
 * kept: leaving them out is safe only with the plugin that keeps the names dependencies read): how the
 * comparison bundles (bare Hono, the naive eager bundle, the memory children) are built.
 */
export const PLAIN_BUNDLING = {
  ...API_BUNDLE_OPTIONS,
  plugins: [],
  splitting: false,
  keepNames: true,
  logLevel: "error",
} as const satisfies BuildOptions;

/**
 * How a benchmark bundle is built: `deployed` exactly as the stack deploys by default (infra/bundle.ts,
 * tracing off: no OpenTelemetry SDK), `deployed-traced` as it deploys with tracing `otlp` (the SDK
 * bundled), `one-file` the default without splitting (not deployed; shows what the chunks are worth),
 * `plain` with {@link PLAIN_BUNDLING}.
 */
export type BuildKind = "deployed" | "deployed-traced" | "one-file" | "plain";

/** A built bundle: its entry file, sizes in bytes (entry file, its source map, all JavaScript) and esbuild's metafile. */
export interface Bundle {
  name: string;
  file: string;
  bytes: number;
  mapBytes: number;
  /** JavaScript bytes of every output file (all chunks of a split build; source maps excluded). */
  totalBytes: number;
  metafile: Metafile;
}

/**
 * Builds `entry` (relative to the project root) into BUILD_DIR/<name>/index.mjs (plus chunks/ for a
 * split build) the way `kind` says.
 * @throws esbuild's build failure
 */
export async function bundle(name: string, entry: string, kind: BuildKind): Promise<Bundle> {
  const outdir = `${BUILD_DIR}${name}`;
  await rm(outdir, { recursive: true, force: true });
  await mkdir(outdir, { recursive: true });
  const metafile =
    kind === "plain"
      ? (await build({ ...PLAIN_BUNDLING, entryPoints: { index: entry }, outdir })).metafile
      : (
          await buildApiBundle(outdir, {
            entry,
            splitting: kind !== "one-file",
            tracingSdk: kind === "deployed-traced",
          })
        ).metafile;
  const outputs = Object.entries(metafile.outputs);
  const main = outputs.find(([path]) => path.endsWith("/index.mjs"));
  const map = outputs.find(([path]) => path.endsWith("/index.mjs.map"));
  if (!main) throw new Error(`esbuild wrote no index.mjs for ${entry}`);
  return {
    name,
    file: `${outdir}/index.mjs`,
    bytes: main[1].bytes,
    mapBytes: map?.[1].bytes ?? 0,
    totalBytes: outputs.filter(([path]) => !path.endsWith(".map")).reduce((sum, [, o]) => sum + o.bytes, 0),
    metafile,
  };
}

/** One package's (or one project folder's) bytes in the bundle: all, and what the cold start evaluates. */
export interface Contributor {
  name: string;
  bytes: number;
  eagerBytes: number;
}

/**
 * The bundle's bytes by package (node_modules) or project folder, largest first, split into what is
 * statically reachable from the entry (evaluated at cold start: `eagerBytes`) and what only a dynamic
 * `import()` reaches (evaluated on first use). `loadedBytes`: the JavaScript files a cold start reads
 * and parses (one file is parsed whole, lazy parts included; a split build reads index.mjs and the
 * chunks it imports statically).
 */
export function contributors(built: Bundle): {
  eagerBytes: number;
  lazyBytes: number;
  loadedBytes: number;
  top: Contributor[];
} {
  const { inputs, outputs } = built.metafile;
  const mainPath = Object.keys(outputs).find((path) => path.endsWith("/index.mjs")) as string;
  const entry = outputs[mainPath]?.entryPoint;
  const eager = new Set<string>();
  const stack = entry ? [entry] : [];
  while (stack.length > 0) {
    const path = stack.pop() as string;
    if (eager.has(path)) continue;
    eager.add(path);
    for (const imported of inputs[path]?.imports ?? []) {
      if (imported.kind !== "dynamic-import" && !imported.external && inputs[imported.path])
        stack.push(imported.path);
    }
  }
  const byName = new Map<string, Contributor>();
  let eagerBytes = 0;
  let lazyBytes = 0;
  for (const output of Object.values(outputs)) {
    for (const [path, { bytesInOutput }] of Object.entries(output.inputs)) {
      const name = packageOf(path);
      const item = byName.get(name) ?? { name, bytes: 0, eagerBytes: 0 };
      item.bytes += bytesInOutput;
      if (eager.has(path)) {
        item.eagerBytes += bytesInOutput;
        eagerBytes += bytesInOutput;
      } else {
        lazyBytes += bytesInOutput;
      }
      byName.set(name, item);
    }
  }
  const top = [...byName.values()].sort((a, b) => b.bytes - a.bytes);
  // Files the runtime reads and parses at cold start: index.mjs and the chunks it imports statically.
  const loaded = new Set<string>();
  const files = [mainPath];
  while (files.length > 0) {
    const path = files.pop() as string;
    if (loaded.has(path)) continue;
    loaded.add(path);
    for (const imported of outputs[path]?.imports ?? []) {
      if (imported.kind === "import-statement" && outputs[imported.path]) files.push(imported.path);
    }
  }
  const loadedBytes = [...loaded].reduce((sum, path) => sum + (outputs[path]?.bytes ?? 0), 0);
  return { eagerBytes, lazyBytes, loadedBytes, top };
}

/** "zod", "@aws-sdk/client-dynamodb", or the project folder ("shared/agent") of a metafile input path. */
function packageOf(path: string): string {
  const match = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(path);
  if (match?.[1]) return match[1];
  return path.split("/").slice(0, 2).join("/");
}
