/**
 * An esbuild plugin for the Lambda bundles built without esbuild's `keepNames` (infra/bundle.ts): the
 * classes whose own name is read at run time keep it. Unbundled code (local runs, tests) is unchanged.
 */
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import type { Plugin } from "esbuild";

/** A dependency file that reads its classes' own names at run time, and what reads them. */
interface NameReader {
  pkg: string;
  file: string;
  why: string;
}

/**
 * The files of the API bundle's dependencies whose classes' names are read at run time (found by
 * searching every input of the bundle, esbuild's metafile, for `constructor.name`, `new.target.name` and
 * comparisons with `.name`):
 * - `@smithy/core`'s `NoOpLogger`: the AWS SDK's middleware tells "no logger given" by
 *   `logger.constructor.name === "NoOpLogger"` and then warns on `console` (deserialization hints, a
 *   bad `userAgentAppId`, waiters).
 * - openai's client: its User-Agent header is `${this.constructor.name}/JS <version>` ("OpenAI/JS …").
 * - jose's errors: each sets `this.name = this.constructor.name` (JWTExpired, JWSInvalid, …), the name
 *   logs and error handlers see.
 * Not listed, because the name read is a built-in's or the result is the same either way: the A2A
 * SDK's errors (each subclass is named by a runtime string; the base class is matched by a brand, and
 * its name is looked up in tables that hold only the subclasses' names), `@aws-sdk/util-dynamodb`
 * (`Set`, `Map`, `Object`, typed arrays), `@smithy/core`'s stream checks (`ReadableStream`, `Blob`),
 * `ServiceException`'s `instanceof` (matched by `shapeId` first; every AWS error sets its `name`), zod
 * (its classes are named by strings; `constructor.name` only in messages about class instances, which
 * parsed JSON never holds), and error messages of code paths the functions never take.
 */
export const NAME_READERS: NameReader[] = [
  {
    pkg: "@smithy/core",
    file: "dist-es/submodules/client/smithy-client/NoOpLogger.js",
    why: 'logger.constructor.name === "NoOpLogger"',
  },
  { pkg: "openai", file: "client.mjs", why: "the User-Agent header" },
  { pkg: "jose", file: "dist/webapi/util/errors.js", why: "this.name = this.constructor.name" },
];

/** A class declared at the top level of a module (`class X`, `export class X`), its name captured. */
const TOP_LEVEL_CLASS = /^(?:export )?(?:default )?(?:abstract )?class ([A-Za-z_$][\w$]*)/gm;

/** A top-level class extending an error class (`class XError extends Error`, `… extends DomainError`). */
const TOP_LEVEL_ERROR_CLASS = /^(?:export )?(?:abstract )?class ([A-Za-z_$][\w$]*) extends [\w$.]*Error\b/gm;

/**
 * `source` with a statement after it per class `pattern` captures, giving the class its name back as
 * esbuild's `keepNames` would (`name`, configurable, not writable). Appended after the module's own code,
 * so the source map of every original line stays exact; a module reads none of these names while it
 * is being evaluated.
 */
export function withClassNames(source: string, pattern: RegExp): string {
  const names = [...new Set([...source.matchAll(pattern)].map((match) => match[1] as string))];
  if (names.length === 0) return source;
  const statements = names.map(
    (name) =>
      `Object.defineProperty(${name}, "name", { value: ${JSON.stringify(name)}, configurable: true });`,
  );
  return `${source}\n${statements.join("\n")}\n`;
}

/** Escapes `text` for a regular expression, each `/` matching either path separator. */
function pathPattern(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&").replaceAll("/", "[\\\\/]");
}

/**
 * Keeps the names that are read at run time in a bundle built without `keepNames` (which wraps every
 * function and class in a `__name` call: ~70 kB of the API bundle, minified, esbuild's metafile):
 * - every top-level class of {@link NAME_READERS}' files;
 * - every top-level error class of `functions/` and `shared/` under `projectRoot` (boundloop's errors set
 *   `this.name = new.target.name`, and Node prints an error by its class's name).
 * test/kept-names-plugin.test.ts checks these names through a real build; test/infra-synth.test.ts
 * runs the bundle (a cold-start error shows its class's name).
 */
export function namesKeptWhereRead(projectRoot: string): Plugin {
  const dependencies = new RegExp(
    `[\\\\/]node_modules[\\\\/](?:${NAME_READERS.map(({ pkg, file }) => pathPattern(`${pkg}/${file}`)).join("|")})$`,
  );
  const own = new RegExp(`^${pathPattern(join(projectRoot, "/"))}(?:functions|shared)[\\\\/].+\\.ts$`);
  return {
    name: "names-kept-where-read",
    setup(esbuild) {
      // A build that keeps every name (the runner's, one with the OpenTelemetry SDK) needs none of this.
      if (esbuild.initialOptions.keepNames) return;
      esbuild.onLoad({ filter: dependencies }, async ({ path }) => ({
        contents: withClassNames(await readFile(path, "utf8"), TOP_LEVEL_CLASS),
        loader: "js",
      }));
      esbuild.onLoad({ filter: own }, async ({ path }) => {
        const source = await readFile(path, "utf8");
        const named = withClassNames(source, TOP_LEVEL_ERROR_CLASS);
        return named === source ? undefined : { contents: named, loader: "ts" };
      });
    },
  };
}
