/**
 * An esbuild plugin for the Lambda bundles (infra/bundle.ts): parts of the AWS SDK's shared runtime that
 * none of boundloop's AWS clients reaches on Node on Lambda are replaced by modules that throw an Error
 * naming this plugin if they ever are (docs/performance.md, P4). Unbundled code (local runs, tests) keeps
 * the real modules.
 */
import { readFileSync } from "node:fs";
import { dirname } from "node:path";
import type { Plugin } from "esbuild";

/** The namespace (and the source map's prefix) of the replacements. */
export const AWS_SDK_UNUSED_NAMESPACE = "aws-sdk-unused-on-lambda";

/** The Error a replacement throws: what was reached, and this plugin. */
const unreachable = (what: string) =>
  `throw new Error(${JSON.stringify(`${what} is not in the Lambda bundle (infra/aws-sdk-unused-plugin.ts)`)});`;

/**
 * The replacement of `@smithy/core/event-streams` (~14 kB of minified output): the event stream codec and
 * marshallers serve only event-stream operations (Lambda's InvokeWithResponseStream), which boundloop
 * never calls; its clients (DynamoDB, EventBridge, Secrets Manager, and Lambda's Invoke and durable
 * execution calls) send and read plain JSON bodies. The Lambda client still builds its marshaller at
 * construction (`resolveEventStreamSerdeConfig`, kept real), so the provider returns one whose methods
 * throw; `EventStreamSerde`, which HttpProtocol loads only for an event-stream operation, throws when built.
 */
const EVENT_STREAMS = (realDir: string) =>
  [
    `export { resolveEventStreamSerdeConfig } from ${JSON.stringify(`${realDir}/eventstream-serde-config-resolver/EventStreamSerdeConfig.js`)};`,
    `const reached = () => { ${unreachable("@smithy/core/event-streams (an event-stream operation)")} };`,
    "export const eventStreamSerdeProvider = () => ({ serialize: reached, deserialize: reached });",
    "export class EventStreamSerde { constructor() { reached(); } }",
  ].join("\n");

/**
 * The replacement of @smithy/core's pure-JavaScript SHA-256 (`Sha256Js`, ~3 kB), which `Sha256Node` uses
 * only when `node:crypto` has no sha256 (never on Node): the request signer hashes with node:crypto.
 */
const SHA256_JS = `export class Sha256Js { constructor() { ${unreachable("Sha256Js (SHA-256 without node:crypto)")} } }`;

/** A client's generated schema modules (`dist-es/schemas/schemas_0.js`). */
const SCHEMAS_FILE =
  /[\\/]node_modules[\\/]@aws-sdk[\\/]client-[a-z0-9-]+[\\/]dist-es[\\/]schemas[\\/]schemas_\d+\.js$/;

/**
 * A client's schema module with each computed key of a module string constant (`{ [_h]: ... }`, where
 * `const _h = "http";`) written as that string (`{ "http": ... }`): the same objects, but esbuild can
 * now see that building them has no side effects (a computed key may call `toString`) and leaves out
 * the schemas of the operations and shapes boundloop never uses — most of the Lambda client's
 * (~35 kB: all its operations were kept before). A key whose constant is not a plain string literal
 * of this module is left as it is.
 */
export function withLiteralKeys(source: string): string {
  const constants = new Map<string, string>();
  for (const [, name, literal] of source.matchAll(/^const (_\w+) = ("(?:[^"\\]|\\.)*");$/gm)) {
    constants.set(name as string, literal as string);
  }
  return source.replace(/\[(_\w+)\]:/g, (key, name: string) => {
    const literal = constants.get(name);
    return literal === undefined ? key : `${literal}:`;
  });
}

/**
 * Leaves out what the module comment says, and gives each `@aws-sdk/client-*` package.json (~2.2 kB each,
 * imported whole by its runtime config for one field) as `{ name, version }` only: the client puts its
 * version in the user agent and reads nothing else.
 */
export const awsSdkUnusedOnLambda: Plugin = {
  name: AWS_SDK_UNUSED_NAMESPACE,
  setup(esbuild) {
    esbuild.onResolve({ filter: /^@smithy\/core\/event-streams$/ }, async (args) => {
      if (args.pluginData === AWS_SDK_UNUSED_NAMESPACE) return undefined;
      const real = await esbuild.resolve(args.path, {
        kind: args.kind,
        importer: args.importer,
        resolveDir: args.resolveDir,
        pluginData: AWS_SDK_UNUSED_NAMESPACE,
      });
      return { path: args.path, namespace: AWS_SDK_UNUSED_NAMESPACE, pluginData: dirname(real.path) };
    });
    esbuild.onResolve({ filter: /^\.\/Sha256Js$/ }, ({ importer, path }) =>
      /[\\/]@smithy[\\/]core[\\/].*[\\/]checksum[\\/]sha256[\\/]Sha256Node\.js$/.test(importer)
        ? { path: `@smithy/core/checksum/${path.slice(2)}`, namespace: AWS_SDK_UNUSED_NAMESPACE }
        : undefined,
    );
    esbuild.onLoad({ filter: /.*/, namespace: AWS_SDK_UNUSED_NAMESPACE }, ({ path, pluginData }) => ({
      contents: path.endsWith("Sha256Js") ? SHA256_JS : EVENT_STREAMS(pluginData as string),
      resolveDir: (pluginData as string | undefined) ?? process.cwd(),
      loader: "js",
    }));
    esbuild.onLoad({ filter: SCHEMAS_FILE }, ({ path }) => ({
      contents: withLiteralKeys(readFileSync(path, "utf8")),
      loader: "js",
    }));
    esbuild.onLoad(
      { filter: /[\\/]node_modules[\\/]@aws-sdk[\\/]client-[a-z0-9-]+[\\/]package\.json$/ },
      ({ path }) => {
        const { name, version } = JSON.parse(readFileSync(path, "utf8")) as { name: string; version: string };
        return { contents: JSON.stringify({ name, version }), loader: "json" };
      },
    );
  },
};
