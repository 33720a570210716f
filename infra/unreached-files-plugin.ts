import type { Plugin } from "esbuild";

/**
 * A file of a dependency the Lambda bundles replace: the package, the file's path inside it, and the
 * module that stands in for it (`unreached`: the error thrown if it ever runs).
 */
interface Replacement {
  pkg: string;
  file: string;
  contents: (unreached: (what: string) => string) => string;
}

/**
 * Files of dependencies the deployed functions never run, or run only through a default they never use,
 * each replaced by a smaller module (measured with esbuild's metafile, minified output):
 * - hono's `Hono` with its default router, `SmartRouter` over `RegExpRouter` and `TrieRouter` (~4.5 kB of
 *   routers): every Hono app of the functions is built with hono's own `TrieRouter` (functions/api/routes/
 *   deps.ts `routeGroup`, functions/api/handler.ts, functions/stream/entry.ts: the router SmartRouter falls
 *   back to, hono's documented option), so the default is never built; here it is that `TrieRouter` too.
 * - `@whatwg-node/node-fetch`'s `fetchCurl` (~2.3 kB), used only when a `globalThis.libcurl` (node-libcurl)
 *   exists, which Node on Lambda has not: the model client fetches through `node:http`.
 * - `@smithy/core`'s web-stream body mixin (~1.3 kB), used only for a response body that is not a Node
 *   `Readable`: the AWS clients send over `@smithy/node-http-handler`, whose bodies are.
 * - `@smithy/core`'s S3 endpoint parameters (~0.9 kB), applied only to a client whose service is S3: the
 *   functions have no S3 client.
 * - `@smithy/core`'s region lookup in the EC2 instance metadata service (~1.3 kB), the last resort when
 *   no `AWS_REGION` is set: Lambda always sets it and has no instance metadata service, so there the
 *   lookup finds nothing (after a connection attempt); its stand-in finds nothing at once.
 * Each stand-in throws a clear Error naming this plugin if it ever runs. test/infra-synth.test.ts runs a
 * run, a model call and DynamoDB through the bundle; tests of unbundled code run the real files.
 */
const REPLACEMENTS: Replacement[] = [
  {
    pkg: "hono",
    file: "dist/hono.js",
    contents: () =>
      [
        'import { HonoBase } from "./hono-base.js";',
        'import { TrieRouter } from "./router/trie-router/router.js";',
        "export class Hono extends HonoBase {",
        "  constructor(options = {}) { super(options); this.router = options.router ?? new TrieRouter(); }",
        "}",
      ].join("\n"),
  },
  {
    pkg: "@whatwg-node/node-fetch",
    file: "esm/fetchCurl.js",
    contents: (unreached) => `export function fetchCurl() { ${unreached("fetchCurl (node-libcurl)")} }`,
  },
  {
    pkg: "@smithy/core",
    file: "dist-es/submodules/serde/util-stream/sdk-stream-mixin.browser.js",
    contents: (unreached) =>
      `export const sdkStreamMixin = () => { ${unreached("the web-stream body mixin")} };`,
  },
  {
    pkg: "@smithy/core",
    file: "dist-es/submodules/endpoints/middleware-endpoint/service-customizations/s3.js",
    contents: (unreached) =>
      [
        `const s3 = () => { ${unreached("S3's endpoint parameters")} };`,
        "export const resolveParamsForS3 = s3, isArnBucketName = s3, isDnsCompatibleBucketName = s3;",
        "export const DOT_PATTERN = /\\./;",
        "export const S3_HOSTNAME_PATTERN = /^(.+\\.)?s3(-fips)?(\\.dualstack)?[.-]([a-z0-9-]+)\\./;",
      ].join("\n"),
  },
  {
    pkg: "@smithy/core",
    file: "dist-es/submodules/config/config-resolver/regionConfig/getInstanceMetadataRegion.js",
    contents: () =>
      [
        "// Lambda has no instance metadata service (infra/unreached-files-plugin.ts).",
        "export const getInstanceMetadataRegion = async () => undefined;",
      ].join("\n"),
  },
];

/** The replacement of the file at `path` (a resolved path), if it is one of {@link REPLACEMENTS}. */
function replacementOf(path: string): Replacement | undefined {
  const normalized = path.replaceAll("\\", "/");
  return REPLACEMENTS.find((entry) => normalized.endsWith(`/node_modules/${entry.pkg}/${entry.file}`));
}

/** See {@link REPLACEMENTS}. */
export const unreachedFiles: Plugin = {
  name: "unreached-files",
  setup(esbuild) {
    const unreached = (what: string) =>
      `throw new Error(${JSON.stringify(`${what} is not in the Lambda bundle (infra/unreached-files-plugin.ts)`)});`;
    esbuild.onLoad({ filter: /\.js$/ }, ({ path }) => {
      const replacement = replacementOf(path);
      return replacement ? { contents: replacement.contents(unreached), loader: "js" } : undefined;
    });
  },
};
