/**
 * An esbuild plugin for the Lambda bundles (infra/bundle.ts): the A2A SDK's error classes that nothing in
 * the bundle uses drop out (docs/performance.md, P4). Unbundled code (local runs, tests) keeps the
 * package as published.
 */
import { readFile } from "node:fs/promises";
import type { Plugin } from "esbuild";

/** The A2A SDK's built entry points (`@a2a-js/sdk`, `/server`, `/errors`, …): `dist/**.js`. */
const A2A_SDK_FILE = /[\\/]node_modules[\\/]@a2a-js[\\/]sdk[\\/]dist[\\/].+\.js$/;

/**
 * `source` (one of the A2A SDK's built files) with a `/* @__PURE__ *\/` annotation before each top-level
 * `var X = makeSemantic(…)`, `makeRest(…)`, `makeJsonRpc(…)` and `Object.freeze(…)`: the calls that
 * build each A2A error once as a semantic, a REST and a JSON-RPC class, and the frozen tables of them.
 * Each only builds and returns a new class or object, but esbuild must assume a call may have side
 * effects, so it kept every class whether used or not: the REST binding's, which boundloop does not
 * serve, and the JSON-RPC ones neither the server's transport nor boundloop's adapter names. Marked
 * pure, a class nothing refers to is left out; one that is used is the same class as before. A line
 * of another form is left as it is.
 */
export function withPureErrorFactories(source: string): string {
  return source.replace(
    /^(var [\w$]+ = )(make(?:Semantic|Rest|JsonRpc)\(|Object\.freeze\()/gm,
    "$1/* @__PURE__ */ $2",
  );
}

/**
 * Gives esbuild each of the A2A SDK's built files as {@link withPureErrorFactories} writes it (~4.4 kB
 * less of the API bundle, minified, esbuild's metafile). The SDK's `server` and `errors` entry points each
 * carry their own copy of the error classes; what stays of each is what the JSON-RPC transport and
 * shared/a2a use. test/protocols-bundle.test.ts drives the official client against the bundle, errors
 * included (TaskNotFoundError, TaskNotCancelableError, a refused context).
 */
export const a2aSdkUnusedErrors: Plugin = {
  name: "a2a-sdk-unused-errors",
  setup(esbuild) {
    esbuild.onLoad({ filter: A2A_SDK_FILE }, async ({ path }) => ({
      contents: withPureErrorFactories(await readFile(path, "utf8")),
      loader: "js",
    }));
  },
};
