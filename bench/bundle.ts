/**
 * Bundles a Lambda entry with esbuild exactly as infra/stack.ts has NodejsFunction do it for the deployed
 * handler (aws-cdk-lib/aws-lambda-nodejs runs `esbuild --bundle <entry> --target=node24 --platform=node
 * --format=esm --outfile=<dir>/index.mjs --minify --sourcemap --sources-content=false --keep-names
 * --banner:js=… --main-fields=module,main` from the project root, nothing external), plus a metafile
 * for the size figures. Keep {@link STACK_BUNDLING} in step with the `bundling` block of infra/stack.ts.
 */
import { mkdir, rm } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import { type BuildOptions, build, type Metafile } from "esbuild";

/** The project root (NodejsFunction's `projectRoot`, the esbuild working directory). */
export const PROJECT_ROOT = fileURLToPath(new URL("..", import.meta.url));

/** Where the benchmarks put their builds: inside node_modules, so bundles built with external packages resolve them. */
export const BUILD_DIR = fileURLToPath(new URL("../node_modules/.cache/boundloop-bench/", import.meta.url));

/** infra/stack.ts's `bundling` for the API function, as esbuild options (see the file comment). */
export const STACK_BUNDLING = {
  bundle: true,
  target: "node24",
  platform: "node",
  format: "esm",
  minify: true,
  sourcemap: true,
  sourcesContent: false,
  keepNames: true,
  mainFields: ["module", "main"],
  banner: { js: "import { createRequire } from 'module'; const require = createRequire(import.meta.url);" },
} as const satisfies BuildOptions;

/** A built bundle: its entry file, size in bytes (code and source map) and esbuild's metafile. */
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
 * Builds `entry` (relative to the project root) into BUILD_DIR/<name>/index.mjs with {@link STACK_BUNDLING}.
 * `splitting: true` builds the same code split into chunks (ESM code splitting, an outdir instead of
 * one file): not what the stack deploys; used to show what loading lazily from separate files would give.
 */
export async function bundle(
  name: string,
  entry: string,
  options: { splitting?: boolean } = {},
): Promise<Bundle> {
  const outdir = `${BUILD_DIR}${name}`;
  await rm(outdir, { recursive: true, force: true });
  await mkdir(outdir, { recursive: true });
  const result = await build({
    ...STACK_BUNDLING,
    absWorkingDir: PROJECT_ROOT,
    entryPoints: options.splitting ? { index: entry } : [entry],
    ...(options.splitting
      ? { splitting: true, outdir, outExtension: { ".js": ".mjs" } }
      : { outfile: `${outdir}/index.mjs` }),
    metafile: true,
    logLevel: "error",
  });
  const outputs = Object.entries(result.metafile.outputs);
  const main = outputs.find(([path]) => path.endsWith("/index.mjs"));
  const map = outputs.find(([path]) => path.endsWith("/index.mjs.map"));
  if (!main) throw new Error(`esbuild wrote no index.mjs for ${entry}`);
  return {
    name,
    file: `${outdir}/index.mjs`,
    bytes: main[1].bytes,
    mapBytes: map?.[1].bytes ?? 0,
    totalBytes: outputs.filter(([path]) => !path.endsWith(".map")).reduce((sum, [, o]) => sum + o.bytes, 0),
    metafile: result.metafile,
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
