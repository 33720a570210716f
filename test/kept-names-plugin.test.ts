/**
 * infra/kept-names-plugin.ts: built with the API bundle's esbuild options (no `keepNames`), the classes
 * whose name is read at run time keep it: boundloop's error classes and the listed dependencies'.
 */
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import { pathToFileURL } from "node:url";
import { build, type Plugin } from "esbuild";
import { afterAll, describe, expect, it } from "vitest";
import { API_BUNDLE_OPTIONS, buildApiBundle, PROJECT_ROOT, STREAM_ENTRY } from "../infra/bundle.js";
import { NAME_READERS, withClassNames } from "../infra/kept-names-plugin.js";

/** Every `export class X … extends …Error` of functions/ and shared/, by the file (from the root) that declares it. */
function ownErrorClasses(): Array<{ file: string; name: string }> {
  const found: Array<{ file: string; name: string }> = [];
  for (const folder of ["functions", "shared"]) {
    for (const entry of readdirSync(join(PROJECT_ROOT, folder), { recursive: true, withFileTypes: true })) {
      if (!entry.isFile() || !entry.name.endsWith(".ts")) continue;
      const path = join(entry.parentPath, entry.name);
      const source = readFileSync(path, "utf8");
      for (const match of source.matchAll(/^export (?:abstract )?class (\w+) extends [\w.]*Error\b/gm)) {
        found.push({ file: relative(PROJECT_ROOT, path), name: match[1] as string });
      }
    }
  }
  return found;
}

const outdirs: string[] = [];
afterAll(() => {
  for (const dir of outdirs) rmSync(dir, { recursive: true, force: true });
});

/** Builds `source` (an ESM entry at the project root) with the API bundle's options and `plugins`, and imports it. */
async function buildAndImport(source: string, plugins: Plugin[]) {
  const outdir = mkdtempSync(join(tmpdir(), "kept-names-"));
  outdirs.push(outdir);
  await build({
    ...API_BUNDLE_OPTIONS,
    plugins,
    stdin: { contents: source, resolveDir: PROJECT_ROOT, sourcefile: "entry.ts", loader: "ts" },
    outdir,
    sourcemap: false,
    logLevel: "error",
  });
  return (await import(pathToFileURL(join(outdir, "stdin.mjs")).href)) as Record<string, unknown>;
}

const errors = ownErrorClasses();
const entry = [
  'export { NoOpLogger } from "@smithy/core/client";',
  'export { OpenAI } from "openai";',
  'export * as jose from "jose/errors";',
  ...errors.map(
    ({ file, name }) => `export { ${name} } from ${JSON.stringify(`./${file.replace(/\.ts$/, ".js")}`)};`,
  ),
].join("\n");

describe("names kept where read (infra/kept-names-plugin.ts)", () => {
  it("finds boundloop's error classes to check", () => {
    expect(errors.map(({ name }) => name)).toEqual(
      expect.arrayContaining(["ConfigError", "ProblemError", "ToolBusinessError", "StoreContentionError"]),
    );
  });

  it("the API bundle's options keep no names but these: every error class, NoOpLogger, OpenAI (its User-Agent), jose's errors", async () => {
    expect(API_BUNDLE_OPTIONS.keepNames).toBe(false);
    const built = await buildAndImport(entry, API_BUNDLE_OPTIONS.plugins);
    for (const { name } of errors) expect((built[name] as { name: string }).name, name).toBe(name);
    expect((built.NoOpLogger as { name: string }).name).toBe("NoOpLogger");
    const OpenAI = built.OpenAI as new (options: object) => { getUserAgent(): string };
    expect(new OpenAI({ apiKey: "unused" }).getUserAgent()).toMatch(/^OpenAI\/JS \d+\.\d+\.\d+/);
    const jose = built.jose as Record<string, new (message: string) => Error>;
    expect(new (jose.JWTExpired as new (message: string, payload: object) => Error)("expired", {}).name).toBe(
      "JWTExpired",
    );
    expect(new (jose.JWSSignatureVerificationFailed as new () => Error)().name).toBe(
      "JWSSignatureVerificationFailed",
    );
    const config = new (built.ConfigError as new (message: string) => Error)("bad");
    expect(config.name).toBe("ConfigError");
    expect(config.stack).toMatch(/^ConfigError: bad\n/);
  });

  it("without the plugin the same build loses those names (what the plugin is for)", async () => {
    const plugins = API_BUNDLE_OPTIONS.plugins.filter((plugin) => plugin.name !== "names-kept-where-read");
    expect(plugins).toHaveLength(API_BUNDLE_OPTIONS.plugins.length - 1);
    const built = await buildAndImport(entry, plugins);
    expect((built.NoOpLogger as { name: string }).name).not.toBe("NoOpLogger");
    expect((built.ConfigError as { name: string }).name).not.toBe("ConfigError");
  });

  it("names each class a pattern finds once, after the module's code, and leaves a module without one as it is", () => {
    const pattern = /^(?:export )?class (\w+) extends \w*Error\b/gm;
    expect(withClassNames("const a = 1;\n", pattern)).toBe("const a = 1;\n");
    expect(withClassNames("export class AError extends Error {}\nclass B extends AError {}\n", pattern)).toBe(
      [
        "export class AError extends Error {}",
        "class B extends AError {}",
        "",
        'Object.defineProperty(AError, "name", { value: "AError", configurable: true });',
        'Object.defineProperty(B, "name", { value: "B", configurable: true });',
        "",
      ].join("\n"),
    );
  });

  it("each dependency file it names is installed", () => {
    for (const { pkg, file } of NAME_READERS) {
      expect(existsSync(join(PROJECT_ROOT, "node_modules", pkg, file)), `${pkg}/${file}`).toBe(true);
    }
  });
});

/**
 * Every dependency file in the API and stream bundles that reads a class's own name at run time
 * (`constructor.name`, `new.target.name`), reviewed: either the class whose name it reads keeps it
 * (NAME_READERS), or what it reads is a built-in's name, or it only words an error message. A dependency
 * update that adds a reader fails the test below until it is reviewed and listed here.
 */
const REVIEWED_NAME_READS: Record<string, string> = {
  "@smithy/core/dist-es/submodules/client/smithy-client/NoOpLogger.js": "kept (NAME_READERS)",
  "@aws-sdk/lib-dynamodb/dist-es/DynamoDBDocumentClient.js": "NoOpLogger's, kept",
  "@smithy/core/dist-es/submodules/protocols/protocol-http/extensions/httpExtensionConfiguration.js":
    "NoOpLogger's, kept",
  "@smithy/core/dist-es/submodules/client/util-waiter/poller.js": "NoOpLogger's, kept",
  "@aws-sdk/core/dist-es/submodules/client/middleware-user-agent/configurations.js": "NoOpLogger's, kept",
  "@smithy/core/dist-es/submodules/serde/middleware-serde/deserializerMiddleware.js": "NoOpLogger's, kept",
  "@smithy/core/dist-es/submodules/schema/middleware/schemaDeserializationMiddleware.js":
    "NoOpLogger's, kept",
  "@smithy/core/dist-es/submodules/client/smithy-client/exceptions.js":
    "instanceof by prototype and shapeId first; AWS errors set their name",
  "@smithy/core/dist-es/submodules/protocols/HttpProtocol.js": "an error message",
  "@smithy/core/dist-es/submodules/cbor/cbor-encode.js": "an error message",
  "@smithy/core/dist-es/submodules/serde/util-stream/checksum/ChecksumStream.js": "an error message",
  "@smithy/core/dist-es/submodules/serde/util-stream/checksum/createChecksumStream.browser.js":
    "built-ins' (ReadableStream)",
  "@smithy/core/dist-es/submodules/serde/util-stream/stream-type-check.js":
    "built-ins' (ReadableStream, Blob)",
  "@smithy/core/dist-es/submodules/serde/util-stream/sdk-stream-mixin.js": "built-ins' and error messages",
  "@smithy/core/dist-es/submodules/serde/util-stream/sdk-stream-mixin.browser.js":
    "built-ins' and error messages",
  "@aws-sdk/util-dynamodb/dist-es/convertToAttr.js": "built-ins' (typed arrays, Set, Map)",
  "openai/client.mjs": "kept (NAME_READERS: the User-Agent)",
  "openai/internal/to-file.mjs": "an error message",
  "jose/dist/webapi/util/errors.js": "kept (NAME_READERS)",
  "jose/dist/webapi/lib/key.js": "an error message",
  "zod/v4/core/util.js": "classes of values a schema parses; parsed JSON holds none",
  "zod/v4/core/schemas.js": "an error message",
  "zod/v4/classic/schemas.js": "an error message",
  "zod/v4/core/compile.js": "a built-in's (AsyncFunction)",
  "@a2a-js/sdk/dist/errors/index.js": "subclasses named by strings; the base matched by a brand",
  "@a2a-js/sdk/dist/server/index.js": "the errors' table of subclass names",
};

describe("the dependencies' reads of class names are all reviewed", () => {
  it("no file of the API or stream bundle reads a class's own name unless REVIEWED_NAME_READS lists it", async () => {
    const reads = new Set<string>();
    for (const entry of [undefined, STREAM_ENTRY]) {
      const outdir = mkdtempSync(join(tmpdir(), "name-reads-"));
      outdirs.push(outdir);
      const { metafile } = await buildApiBundle(outdir, entry ? { entry } : {});
      for (const input of Object.keys(metafile?.inputs ?? {})) {
        const at = input.lastIndexOf("node_modules/");
        if (at < 0 || !existsSync(join(PROJECT_ROOT, input))) continue;
        const source = readFileSync(join(PROJECT_ROOT, input), "utf8");
        if (/constructor\??\.name\b|new\.target\??\.name\b/.test(source)) {
          reads.add(input.slice(at + "node_modules/".length));
        }
      }
    }
    // The scan sees the readers it is meant to (the NoOpLogger checks), not an empty list.
    expect(reads).toContain("@aws-sdk/lib-dynamodb/dist-es/DynamoDBDocumentClient.js");
    expect([...reads].filter((file) => !(file in REVIEWED_NAME_READS))).toEqual([]);
  }, 120_000);
});
