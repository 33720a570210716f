/**
 * Loading the Cedar engine (`@cedar-policy/cedar-wasm`, the engine Amazon Verified Permissions and
 * AgentCore Policy run): its JavaScript glue is imported and its WebAssembly module compiled on first use
 * only, never at cold start, so a container that serves `/healthz` or a tenant without policies never
 * reads the 4.3 MB module. Loaded once per container; a failed load is retried by the next caller.
 *
 * Where the module file is: in the Lambda bundle it travels as its own file next to `index.mjs`
 * (infra/bundle.ts copies it, {@link CEDAR_WASM_FILE}), found through `LAMBDA_TASK_ROOT` or beside the
 * bundle's own files; unbundled (tests, local runs) it is the package's own file, from node_modules.
 */
import { existsSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { setFlagsFromString } from "node:v8";
import { onceUntilFailed } from "../lazy.js";

/** The engine's functions this service calls (the package's `web` build, initialized with our bytes). */
export type CedarWasm = typeof import("@cedar-policy/cedar-wasm/web");

/** The file name of the engine's WebAssembly module, beside `index.mjs` in the Lambda bundle. */
export const CEDAR_WASM_FILE = "cedar_wasm_bg.wasm";

/**
 * Where the WebAssembly module is read from: `CEDAR_WASM_PATH` when set, the first of
 * `<LAMBDA_TASK_ROOT>/cedar_wasm_bg.wasm` and the file beside the bundle (this module's directory or its
 * parent: index.mjs or chunks/) that exists, else the package's own file next to its `web` glue in
 * node_modules.
 */
export function cedarWasmPath(): string {
  const explicit = process.env.CEDAR_WASM_PATH;
  if (explicit) return explicit;
  const root = process.env.LAMBDA_TASK_ROOT;
  // In a bundle this module is in index.mjs or in chunks/, and the module file beside index.mjs.
  const candidates = [
    ...(root ? [join(root, CEDAR_WASM_FILE)] : []),
    fileURLToPath(new URL(`./${CEDAR_WASM_FILE}`, import.meta.url)),
    fileURLToPath(new URL(`../${CEDAR_WASM_FILE}`, import.meta.url)),
  ];
  const bundled = candidates.find((path) => existsSync(path));
  if (bundled) return bundled;
  return fileURLToPath(new URL(CEDAR_WASM_FILE, import.meta.resolve("@cedar-policy/cedar-wasm/web")));
}

/**
 * `WebAssembly.compile`: the global Node has, which the project's TypeScript libraries (no DOM) do not
 * declare as a value.
 */
const compileWasm = (bytes: Uint8Array): Promise<never> =>
  (
    globalThis as unknown as { WebAssembly: { compile(bytes: Uint8Array): Promise<never> } }
  ).WebAssembly.compile(bytes);

/**
 * V8's dynamic-tiering budget (roughly bytes of WebAssembly executed per function before it is
 * recompiled by the optimizing compiler) for the engine's instance, and V8's default it is set back to
 * (by V8 major version: Node 20's V8 11 and Node 24's V8 13, as `node --v8-options` lists them).
 * With the default, the first parse and the first decision of a container tier up the engine's parser and
 * evaluator while they run: on 2 loaded cores the first parse, pre-parse and decision took 200–500 ms of
 * main-thread time instead of 45–70 ms (bench/results/governance.md, docs/performance.md). A budget 100×
 * the default keeps a container's first runs on the baseline compiler; a warm decision then costs ~15 %
 * more. V8 reads the budget when it compiles a module, so the flag is set while the engine's module
 * is compiled and instantiated, and set back after (other modules keep V8's default).
 */
export const CEDAR_TIERING_BUDGET = {
  engine: 180_000_000,
  v8Defaults: { "11": 1_800_000, "13": 13_000_000 } as Readonly<Record<string, number>>,
};

/**
 * V8's default tiering budget on this Node.js, or undefined on a V8 whose default is not known here:
 * the budget is then left alone (setting it back to another version's default would change every other
 * module's tiering, e.g. undici's HTTP parser).
 */
export function v8DefaultTieringBudget(v8Version = process.versions.v8): number | undefined {
  return CEDAR_TIERING_BUDGET.v8Defaults[v8Version.split(".")[0] ?? ""];
}

/** Whether this container ever started loading the engine. */
let loadStarted = false;

/**
 * Whether this container ever started loading the engine (a container whose tenants have no policy set
 * never does; test/policies-no-engine.test.ts).
 */
export function cedarLoadStarted(): boolean {
  return loadStarted;
}

/** How long the last load took, in ms (read by the benchmarks and the load's log line). */
export const cedarLoadTimings = { importMs: 0, compileMs: 0, initMs: 0 };

/**
 * The engine, loaded on first call: the glue by dynamic `import()` (its own chunk in the bundle), the
 * module read and compiled asynchronously (`WebAssembly.compile` off the main thread's parse path), then
 * instantiated. Concurrent callers share one load.
 * @throws the import's, the read's or the compile's error (the caller fails closed)
 */
export const loadCedar: () => Promise<CedarWasm> = onceUntilFailed(async () => {
  loadStarted = true;
  const started = performance.now();
  const [glue, bytes] = await Promise.all([
    import("@cedar-policy/cedar-wasm/web"),
    readFile(cedarWasmPath()),
  ]);
  const imported = performance.now();
  let compiled = imported;
  const v8Default = v8DefaultTieringBudget();
  if (v8Default !== undefined) setFlagsFromString(`--wasm-tiering-budget=${CEDAR_TIERING_BUDGET.engine}`);
  try {
    const module = await compileWasm(bytes);
    compiled = performance.now();
    await glue.default({ module_or_path: module });
  } finally {
    if (v8Default !== undefined) setFlagsFromString(`--wasm-tiering-budget=${v8Default}`);
  }
  cedarLoadTimings.importMs = imported - started;
  cedarLoadTimings.compileMs = compiled - imported;
  cedarLoadTimings.initMs = performance.now() - compiled;
  return glue;
});

/** Whether {@link loadCedar} has finished (a caller that must not wait asks this first). */
let loaded: CedarWasm | undefined;

/** The engine when it is already loaded, else undefined (and the load is started, not awaited). */
export function cedarIfLoaded(): CedarWasm | undefined {
  if (!loaded) {
    loadCedar().then(
      (engine) => {
        loaded = engine;
      },
      () => undefined,
    );
  }
  return loaded;
}

/** Loads the engine and remembers it for {@link cedarIfLoaded}. */
export async function cedar(): Promise<CedarWasm> {
  loaded ??= await loadCedar();
  return loaded;
}
