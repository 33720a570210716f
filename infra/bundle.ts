/**
 * How the API function's code is built: one esbuild configuration for the stack (infra/stack.ts bundles
 * with it at synth) and the benchmarks (bench/bundle.ts measures exactly what is deployed).
 *
 * `node --import tsx infra/bundle.ts <outdir> [entry] [--tracing-sdk]` builds it into `<outdir>` (index.mjs,
 * chunks/, source maps) and prints its size: what the stack's local bundling runs.
 */
import { spawnSync } from "node:child_process";
import { copyFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { type BuildOptions, build, type Metafile, type Plugin } from "esbuild";
import { writeConsoleAssets } from "../console/build.js";
import { CEDAR_WASM_FILE } from "../shared/cedar/wasm.js";
import { a2aSdkUnusedErrors } from "./a2a-sdk-plugin.js";
import { awsSdkUnusedOnLambda } from "./aws-sdk-unused-plugin.js";
import { namesKeptWhereRead } from "./kept-names-plugin.js";
import {
  withoutUnreachedOpenAIClientParts,
  withoutUnusedOpenAIResources,
} from "./openai-resources-plugin.js";
import { REQUIRE_BANNER, requireBannerWhereUsed } from "./require-banner-plugin.js";
import { unreachedFiles } from "./unreached-files-plugin.js";

/** The project root: esbuild's working directory, where node_modules and tsconfig.json are. */
export const PROJECT_ROOT = fileURLToPath(new URL("..", import.meta.url));

/** The API function's entry point (exports `handler`), relative to {@link PROJECT_ROOT}. */
export const API_ENTRY = "functions/api/handler.ts";

/** The durable runner's entry point (exports `handler`), relative to {@link PROJECT_ROOT}; same build options. */
export const RUNNER_ENTRY = "functions/runner/handler.ts";

/** The streaming function's entry point (functions/stream/handler.ts; the function URL, docs/run-events.md). */
export const STREAM_ENTRY = "functions/stream/handler.ts";

/** The Lambda handler setting for the built code: `index.mjs`'s `handler` export. */
export const API_HANDLER = "index.handler";

/**
 * zod's `locales` namespace (every language's error messages, ~270 kB minified) stays in a bundle as soon
 * as a dependency imports zod's `z` object whole (@hono/zod-openapi does `import { z } from "zod"`), and
 * boundloop only ever uses English (zod classic sets it at load; shared/config.ts sets it for zod/mini).
 * This plugin gives zod's own `../locales/index.js` imports a module that re-exports English only, so
 * `z.locales` is `{ en }` in the bundle. Nothing else changes; tests run against the unbundled zod.
 */
export const zodEnglishOnly: Plugin = {
  name: "zod-english-only",
  setup(esbuild) {
    esbuild.onResolve({ filter: /^\.\.\/locales\/index\.js$/ }, ({ importer }) =>
      /[\\/]node_modules[\\/]zod[\\/]v4[\\/](classic|core|mini)[\\/][^\\/]+$/.test(importer)
        ? { path: importer.replace(/[\\/](classic|core|mini)[\\/][^\\/]+$/, "/locales"), namespace: "zod-en" }
        : undefined,
    );
    esbuild.onLoad({ filter: /.*/, namespace: "zod-en" }, ({ path }) => ({
      contents: 'export { default as en } from "./en.js";',
      resolveDir: path,
      loader: "js",
    }));
  },
};

/**
 * Two zod APIs boundloop never calls, kept in a bundle only because `z` (and its `z.core` namespace) is
 * imported whole (see {@link zodEnglishOnly}), replaced by modules whose functions throw an Error naming
 * this plugin (bytes of minified output, esbuild's metafile):
 * - `zod/v4/core/compile.js`, `z.compile`: the ahead-of-time parser compiler (~31 kB). Schemas parse
 *   with the runtime parser (`.parse`, `.safeParse`), which never imports it.
 * - `zod/v4/classic/from-json-schema.js`, `z.fromJSONSchema` (~12 kB): boundloop converts zod to JSON
 *   Schema, never back.
 * The stubs export the same names, so a new import of another name fails the build. Tests run the
 * unbundled zod.
 */
export const zodUnusedApis: Plugin = {
  name: "zod-unused-apis",
  setup(esbuild) {
    const unused = (api: string) =>
      `{ throw new Error(${JSON.stringify(`${api} is not in the Lambda bundle (infra/bundle.ts zodUnusedApis)`)}); }`;
    const stubs: Record<string, string> = {
      "core/compile.js": [
        'export const INVALID = Symbol.for("zod.compile.invalid");',
        "export class ZodCompileAsyncError extends Error {}",
        "export class ZodCompileUnsupportedError extends Error {}",
        ...["compile", "withParser", "compileFn"].map(
          (name) => `export function ${name}() ${unused(`z.${name}`)}`,
        ),
      ].join("\n"),
      "classic/from-json-schema.js": `export function fromJSONSchema() ${unused("z.fromJSONSchema")}`,
    };
    esbuild.onLoad(
      { filter: /[\\/]node_modules[\\/]zod[\\/]v4[\\/](core[\\/]compile|classic[\\/]from-json-schema)\.js$/ },
      ({ path }) => {
        const key = Object.keys(stubs).find((name) => path.replaceAll("\\", "/").endsWith(`/zod/v4/${name}`));
        return key === undefined ? undefined : { contents: stubs[key], loader: "js" };
      },
    );
  },
};

/**
 * Modules the deployed code (Node on Lambda) never reaches, replaced in the bundle by a module named here
 * (measured with esbuild's metafile, bytes of minified output; docs/performance.md "Bundle contents"):
 * - `@aws-sdk/credential-provider-node` (the default credential chain: env, SSO, ini, process, web
 *   identity, ECS/IMDS, and the STS/SSO/sign-in clients of @aws-sdk/nested-clients, ~125 kB) becomes its
 *   first link only, `fromEnv()` of @aws-sdk/credential-provider-env, resolved from the chain's own
 *   package so it is the version the chain would run. Lambda always puts the execution role's
 *   credentials in AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY / AWS_SESSION_TOKEN, where the chain's
 *   first link finds them, so the other links never run there. Clients given `credentials` (the local
 *   DynamoDB client, shared/store/dynamo.ts) never call it; without env credentials it throws the SDK's
 *   CredentialsProviderError "Unable to find environment variable credentials.". Unbundled code (local
 *   runs, tests) keeps the full chain.
 * - `bowser` (~38 kB), a browser user-agent parser that @aws-sdk/core's client barrel imports lazily
 *   for `createUserAgentStringParsingProvider`, which only the browser and React Native runtime configs
 *   call; Node clients build their user agent with util-user-agent-node.
 * - `@fastify/busboy` (~28 kB), the multipart parser @whatwg-node/node-fetch's Body uses only in
 *   `formData()` of a multipart body; the model client (shared/model-client.ts, through openai) reads
 *   responses with `json()`, `text()` and the body stream, never `formData()`.
 * - `ajv` and `ajv-formats` (~137 kB with fast-uri), the MCP SDK's default JSON Schema validator, which
 *   a server uses only to check an elicitation's answer; `/mcp` never elicits and gives its Server its
 *   own validator (shared/mcp/server.ts), so the default is never constructed.
 * The replacements throw a clear Error naming this plugin if ever called, so a reach would not go
 * unnoticed. test/support/bundle-contents.ts checks that none of these packages is in the bundle, and
 * test/infra-synth.test.ts that the bundle serves a run end to end. Tests of unbundled code run the real
 * packages.
 */
export const unreachableOnLambda: Plugin = {
  name: "unreachable-on-lambda",
  setup(esbuild) {
    const unreachable = (what: string) =>
      `throw new Error(${JSON.stringify(`${what} is not in the Lambda bundle (infra/bundle.ts unreachableOnLambda)`)});`;
    const replacements: Record<string, string> = {
      "@aws-sdk/credential-provider-node":
        'export { fromEnv as defaultProvider } from "@aws-sdk/credential-provider-env";',
      bowser: `export function parse() { ${unreachable("bowser (browser user-agent parsing)")} }\nexport default { parse };`,
      "@fastify/busboy": `export class Busboy { constructor() { ${unreachable("@fastify/busboy (multipart formData())")} } }`,
      // The MCP SDK's default JSON Schema validator (for elicitation, which /mcp never asks for):
      // shared/mcp/server.ts gives its Server its own validator, so Ajv is never built.
      ajv: `export default class Ajv { constructor() { ${unreachable("ajv (the MCP SDK's default validator)")} } }`,
      "ajv-formats": `export default function addFormats() { ${unreachable("ajv-formats")} }`,
    };
    esbuild.onResolve(
      { filter: /^(@aws-sdk\/credential-provider-node|bowser|@fastify\/busboy|ajv|ajv-formats)$/ },
      async (args) => {
        if (args.pluginData === "unreachable-on-lambda") return undefined;
        // Resolve the real package first: its directory is where the replacement's own imports resolve.
        const real = await esbuild.resolve(args.path, {
          kind: args.kind,
          importer: args.importer,
          resolveDir: args.resolveDir,
          pluginData: "unreachable-on-lambda",
        });
        // Named by the package name, so the bundle's source map shows `unreachable-on-lambda:<package>`.
        return { path: args.path, namespace: "unreachable-on-lambda", pluginData: dirname(real.path) };
      },
    );
    esbuild.onLoad({ filter: /.*/, namespace: "unreachable-on-lambda" }, ({ path, pluginData }) => ({
      contents: replacements[path],
      resolveDir: pluginData as string,
      loader: "js",
    }));
  },
};

/** The openai SDK's streaming helpers, by the file its resources import them from, and what each exports. */
const OPENAI_STREAM_HELPERS: Record<string, string[]> = {
  "lib/ChatCompletionStream.mjs": ["ChatCompletionStream"],
  "lib/ChatCompletionStreamingRunner.mjs": ["ChatCompletionStreamingRunner"],
  "lib/ChatCompletionRunner.mjs": ["ChatCompletionRunner"],
  "lib/AssistantStream.mjs": ["AssistantStream"],
  "lib/responses/ResponseStream.mjs": ["ResponseStream"],
};

/**
 * Leaves the openai SDK's streaming helpers out of the Lambda bundles (~45 kB: `chat.completions.stream()`
 * and `.runTools()`, the Assistants and Responses streams, and the event-stream classes under them). The
 * model adapter (shared/model/openai-chat.ts) only calls `chat.completions.create` without streaming, but
 * the SDK's resource classes import the helpers statically. Each is replaced by a class of the same name
 * whose constructor throws a clear Error naming this plugin, so a reach would not go unnoticed;
 * test/infra-synth.test.ts runs a model call through the bundle. Unbundled code keeps the real SDK.
 */
export const withoutOpenAIStreamHelpers: Plugin = {
  name: "without-openai-stream-helpers",
  setup(esbuild) {
    const filter =
      /(?:^|[\\/])lib[\\/](?:ChatCompletionStream|ChatCompletionStreamingRunner|ChatCompletionRunner|AssistantStream|responses[\\/]ResponseStream)\.mjs$/;
    esbuild.onResolve({ filter }, (args) => {
      if (!args.importer.replaceAll("\\", "/").includes("/node_modules/openai/")) return undefined;
      const file = Object.keys(OPENAI_STREAM_HELPERS).find((name) =>
        args.path.replaceAll("\\", "/").endsWith(name),
      );
      return file ? { path: file, namespace: "without-openai-stream-helpers" } : undefined;
    });
    esbuild.onLoad({ filter: /.*/, namespace: "without-openai-stream-helpers" }, ({ path }) => ({
      contents: (OPENAI_STREAM_HELPERS[path] ?? [])
        .map(
          (name) =>
            `export class ${name} { constructor() { throw new Error(${JSON.stringify(`openai's ${name} is not in the Lambda bundle (infra/bundle.ts withoutOpenAIStreamHelpers)`)}); } }`,
        )
        .join("\n"),
      loader: "js",
    }));
  },
};

/** The module that wires the OpenTelemetry SDK and exporters (loaded by shared/telemetry/entry.ts). */
export const TRACING_SDK_MODULE = "shared/telemetry/sdk.ts";

/**
 * Leaves the OpenTelemetry SDK out of a bundle built for a deployment that does not export from inside
 * the function (the deploy setting `tracing` is `off`, or `adot`, where a layer brings its own SDK; see
 * shared/telemetry/entry.ts `bundlesTracingSdk`): {@link TRACING_SDK_MODULE}, the one module that imports
 * `@opentelemetry/sdk-trace`, the OTLP exporter, resources and the context manager, becomes a module whose
 * `startTracing` throws a clear Error. What stays is `@opentelemetry/api` and boundloop's own
 * instrumentation (~20 kB), whose spans are no-ops until a tracer provider is registered. Built with
 * tracing `otlp` or `console`, the bundle has the real module (a chunk of its own, read on the first
 * invocation; docs/tracing.md gives both sizes).
 */
export const withoutTracingSdk: Plugin = {
  name: "without-tracing-sdk",
  setup(esbuild) {
    esbuild.onResolve({ filter: /[\\/]sdk\.js$/ }, async (args) => {
      if (args.pluginData === "without-tracing-sdk") return undefined;
      const real = await esbuild.resolve(args.path, {
        kind: args.kind,
        importer: args.importer,
        resolveDir: args.resolveDir,
        pluginData: "without-tracing-sdk",
      });
      if (real.errors.length > 0 || !real.path.replaceAll("\\", "/").endsWith(TRACING_SDK_MODULE)) {
        return undefined;
      }
      return { path: TRACING_SDK_MODULE, namespace: "without-tracing-sdk" };
    });
    esbuild.onLoad({ filter: /.*/, namespace: "without-tracing-sdk" }, () => ({
      contents: `export function startTracing() { throw new Error(${JSON.stringify(
        "The OpenTelemetry SDK is not in this bundle: it was built with the deploy setting tracing off or adot (infra/bundle.ts withoutTracingSdk); deploy with -c tracing=otlp or -c tracing=console to export from the function.",
      )}); }`,
      loader: "js",
    }));
  },
};

/**
 * The esbuild options of the API function (without entry and output):
 * - ESM for Node 24 (the function's runtime), `module` before `main` so dependencies come as ESM.
 * - Everything bundled, the AWS SDK included, so the deployed code runs the pinned versions the tests
 *   ran, not whatever SDK the runtime image carries.
 * - Split into chunks along the handler's dynamic `import()`s (functions/api/handler.ts): a cold start
 *   reads and parses only index.mjs and what it imports statically; the app, zod, openai and the AWS SDK
 *   are read when a request first needs them.
 * - Minified, and source maps without the sources (stack traces need the mappings, the original function
 *   names included; NODE_OPTIONS `--enable-source-maps` is set on the function).
 * - Names not kept (esbuild's `keepNames` wraps every function and class in a `__name` call: ~70 kB of
 *   the API bundle, and a `defineProperty` each time a named closure is made): only the classes whose
 *   name is read at run time keep it, boundloop's error classes and a few dependencies' (infra/
 *   kept-names-plugin.ts). Stack traces still map to the TypeScript source, the frames' function names
 *   being the minified ones. The durable runner's bundle, and one with the OpenTelemetry SDK, keep every
 *   name ({@link buildApiBundle}).
 * - Modules Node on Lambda never reaches replaced ({@link unreachableOnLambda}), zod's locales reduced,
 *   two zod APIs never called left out ({@link zodUnusedApis}), the openai SDK's streaming helpers and
 *   unused API resources and client parts left out ({@link withoutOpenAIStreamHelpers},
 *   infra/openai-resources-plugin.ts),
 *   the AWS SDK's unused runtime parts (infra/aws-sdk-unused-plugin.ts), the A2A SDK's unused error
 *   classes (infra/a2a-sdk-plugin.ts), and files of dependencies never run on Lambda
 *   (infra/unreached-files-plugin.ts).
 * - A `require` for CommonJS dependencies that still call it for Node built-ins inside ESM output, in
 *   the output files that name it only (infra/require-banner-plugin.ts).
 */
export const API_BUNDLE_OPTIONS = {
  absWorkingDir: PROJECT_ROOT,
  bundle: true,
  platform: "node",
  target: "node24",
  format: "esm",
  mainFields: ["module", "main"],
  splitting: true,
  entryNames: "[name]",
  chunkNames: "chunks/[name]-[hash]",
  outExtension: { ".js": ".mjs" },
  minify: true,
  keepNames: false,
  sourcemap: true,
  sourcesContent: false,
  banner: { js: REQUIRE_BANNER },
  plugins: [
    zodEnglishOnly,
    zodUnusedApis,
    unreachableOnLambda,
    withoutOpenAIStreamHelpers,
    withoutUnusedOpenAIResources,
    withoutUnreachedOpenAIClientParts,
    awsSdkUnusedOnLambda,
    a2aSdkUnusedErrors,
    namesKeptWhereRead(PROJECT_ROOT),
    unreachedFiles,
    requireBannerWhereUsed,
  ],
  metafile: true,
  logLevel: "warning",
} as const satisfies BuildOptions;

/** A built API bundle: where, and esbuild's metafile (inputs, outputs, imports, bytes). */
export interface ApiBundle {
  outdir: string;
  /** The entry file: `<outdir>/index.mjs`. */
  file: string;
  metafile: Metafile;
}

/**
 * How a bundle is built besides {@link API_BUNDLE_OPTIONS}:
 * - `entry`: the function's entry point (default {@link API_ENTRY}, e.g. {@link RUNNER_ENTRY})
 * - `splitting: false`: one file instead of chunks (the benchmarks compare it)
 * - `tracingSdk`: bundle the OpenTelemetry SDK (the deploy setting `tracing` is `otlp` or `console`), and
 *   keep every name (see {@link KEEPS_NAMES}); default false, as the stack deploys by default:
 *   {@link withoutTracingSdk} leaves it out
 */
export interface ApiBundleOptions {
  entry?: string;
  splitting?: boolean;
  tracingSdk?: boolean;
}

/**
 * Builds `options.entry` with {@link API_BUNDLE_OPTIONS} into `outdir` as `index.mjs` plus `chunks/`;
 * the API's also gets the console's browser assets in `console/` (console/build.ts).
 * @throws esbuild's build failure (unresolvable import, type-stripping error), with its messages
 */
export async function buildApiBundle(outdir: string, options: ApiBundleOptions = {}): Promise<ApiBundle> {
  const entry = options.entry ?? API_ENTRY;
  const result = await build({
    ...API_BUNDLE_OPTIONS,
    plugins: options.tracingSdk
      ? API_BUNDLE_OPTIONS.plugins
      : [...API_BUNDLE_OPTIONS.plugins, withoutTracingSdk],
    splitting: options.splitting ?? API_BUNDLE_OPTIONS.splitting,
    keepNames: KEEPS_NAMES.has(entry) || options.tracingSdk === true,
    entryPoints: { index: entry },
    outdir,
  });
  // The API function serves the operator console: its browser assets go next to the code as files
  // (read at run time from LAMBDA_TASK_ROOT/console), never into the server JavaScript.
  if (entry === API_ENTRY) await writeConsoleAssets(join(outdir, "console"));
  // The Cedar engine's WebAssembly module (4.3 MB) travels as its own file beside index.mjs, read only
  // when a tenant's policies are first evaluated (shared/cedar/wasm.ts), never part of the JavaScript.
  if (Object.keys(result.metafile.inputs).some((input) => input.endsWith(CEDAR_MODULE))) {
    await copyFile(cedarWasmSource(), join(outdir, CEDAR_WASM_FILE));
  }
  return { outdir, file: `${outdir}/index.mjs`, metafile: result.metafile };
}

/**
 * Entries whose bundle keeps every function's and class's name (esbuild's `keepNames`): the durable
 * runner's, whose durable execution SDK (@aws/durable-execution-sdk-js) reads constructor names at run
 * time, e.g. `event.constructor.name === "DurableExecutionInvocationInputWithClient"` and the
 * `errorType` of a checkpointed error. A bundle with the OpenTelemetry SDK keeps them too: the SDK names
 * a metric reader's `otel.component.type`, span processors and propagators by their classes' names.
 */
const KEEPS_NAMES = new Set<string>([RUNNER_ENTRY]);

/** The module that loads the Cedar engine: a bundle holding it gets the engine's WebAssembly file. */
const CEDAR_MODULE = "shared/cedar/wasm.ts";

/** The engine's WebAssembly module in node_modules (the `web` build's, which shared/cedar/wasm.ts loads). */
function cedarWasmSource(): string {
  return fileURLToPath(new URL(CEDAR_WASM_FILE, import.meta.resolve("@cedar-policy/cedar-wasm/web")));
}

/** The command-line flag of this file that bundles the tracing SDK ({@link ApiBundleOptions}.tracingSdk). */
const TRACING_SDK_FLAG = "--tracing-sdk";

/**
 * Builds the API bundle (or, with `entry`, another function's, e.g. {@link RUNNER_ENTRY}) into `outdir`
 * from synchronous code (the CDK's local bundling): runs this file in a child `node --import tsx`
 * (esbuild plugins need its asynchronous API).
 * @throws Error with the child's exit status when the build fails (its messages went to stderr)
 */
export function buildApiBundleSync(
  outdir: string,
  entry: string = API_ENTRY,
  options: { tracingSdk?: boolean } = {},
): void {
  const child = spawnSync(
    process.execPath,
    [
      "--import",
      "tsx",
      fileURLToPath(import.meta.url),
      outdir,
      entry,
      ...(options.tracingSdk ? [TRACING_SDK_FLAG] : []),
    ],
    { cwd: PROJECT_ROOT, stdio: ["ignore", "inherit", "inherit"] },
  );
  if (child.status !== 0) {
    throw new Error(`Bundling the API function failed (exit ${child.status ?? child.signal}); see above.`);
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const args = process.argv.slice(2);
  const tracingSdk = args.includes(TRACING_SDK_FLAG);
  const [outdir, entry = API_ENTRY] = args.filter((arg) => arg !== TRACING_SDK_FLAG);
  if (!outdir) {
    console.error(`usage: node --import tsx infra/bundle.ts <outdir> [entry] [${TRACING_SDK_FLAG}]`);
    process.exit(2);
  }
  const { metafile } = await buildApiBundle(outdir, { entry, tracingSdk });
  const code = Object.entries(metafile.outputs).filter(([path]) => !path.endsWith(".map"));
  const index = code.find(([path]) => path.endsWith("index.mjs"))?.[1].bytes ?? 0;
  const total = code.reduce((sum, [, output]) => sum + output.bytes, 0);
  console.log(
    `${entry}${tracingSdk ? " (tracing SDK bundled)" : ""} → index.mjs ${(index / 1000).toFixed(1)} kB + ${code.length - 1} chunks, ${(total / 1000).toFixed(1)} kB of JavaScript`,
  );
}
