/**
 * What the bundles of `cdk synth` of the real app hold (test/support/bundle.ts synthesizedApp): ESM
 * chunks with source maps within the size budget, what a cold start and each route load, and the
 * packages left out. Registered by test/infra-synth.test.ts on the app it synthesizes (cdk-nag's
 * findings and the bundle run in node), so the real app is bundled and synthesized once for both.
 */
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { describe, expect, it } from "vitest";
import { REQUIRE_BANNER } from "../../infra/require-banner-plugin.js";
import { asyncOnlyChunks, chunksHolding, sourcesOf, staticallyLoaded, syncRequestPath } from "./bundle.js";

/**
 * Registers the checks of what the bundles hold, in the calling file, on `bundleDir` (synthesizedApp's:
 * the directory of a function's bundle once the calling file's synth has run).
 */
export function describeBundleContents(bundleDir: (functionId?: string) => string): void {
  describe("what the bundles of cdk synth of the real app hold", () => {
    it("bundles the handler with the local esbuild (infra/bundle.ts) as minified ESM chunks with source maps", () => {
      const dir = bundleDir();
      const code = readFileSync(join(dir, "index.mjs"), "utf8");
      expect(code).toMatch(/^\/\/# sourceMappingURL=index\.mjs\.map$/m);
      expect(sourcesOf(dir, "index.mjs").some((source) => source.endsWith("functions/api/handler.ts"))).toBe(
        true,
      );
      const chunks = readdirSync(join(dir, "chunks")).filter((name) => name.endsWith(".mjs"));
      expect(chunks.length).toBeGreaterThan(2);
      for (const chunk of chunks) expect(existsSync(join(dir, "chunks", `${chunk}.map`)), chunk).toBe(true);
      // The bundle goal (docs/performance.md P4): 1.2 MB of JavaScript with the AWS SDK bundled, all chunks,
      // the ones only an asynchronous start or a cancel loads (@aws-sdk/client-lambda and the durable port,
      // ~125 kB; the next test shows no other request loads them) included: ~1.09 MB since
      // infra/bundle.ts unreachableOnLambda. Lambda's limit is 250 MB.
      const sizeOf = (file: string) => statSync(join(dir, file)).size;
      const files = ["index.mjs", ...chunks.map((chunk) => `chunks/${chunk}`)];
      // The `require` banner is in the files that name `require` after it, and only in those
      // (infra/require-banner-plugin.ts); its line stays, empty, where it was left out.
      const withBanner = files.filter((file) =>
        readFileSync(join(dir, file), "utf8").startsWith(REQUIRE_BANNER),
      );
      for (const file of files) {
        const text = readFileSync(join(dir, file), "utf8");
        const rest = text.startsWith(REQUIRE_BANNER) ? text.slice(REQUIRE_BANNER.length) : text;
        expect(/\brequire\b/.test(rest), file).toBe(withBanner.includes(file));
        expect(rest.startsWith("\n"), file).toBe(true);
      }
      expect(withBanner.length).toBeGreaterThan(0);
      expect(withBanner.length).toBeLessThan(files.length / 4);
      const total = files.reduce((sum, file) => sum + sizeOf(file), 0);
      const asyncOnly = asyncOnlyChunks(dir);
      expect(asyncOnly.length).toBeGreaterThan(0);
      expect(total).toBeGreaterThan(500_000);
      expect(total - asyncOnly.reduce((sum, file) => sum + sizeOf(file), 0)).toBeLessThan(1_200_000);
      expect(total).toBeLessThan(1_200_000);
      expect(gzipSync(code).length).toBeLessThan(100_000);
      // The operator console: its browser assets are files beside the code (not server JavaScript), its
      // server side one small chunk that a cold start does not read.
      const manifest = JSON.parse(readFileSync(join(dir, "console", "manifest.json"), "utf8")) as {
        script: string;
        style: string;
        files: Record<string, string>;
      };
      for (const name of Object.keys(manifest.files))
        expect(existsSync(join(dir, "console", name)), name).toBe(true);
      expect(manifest.script).toMatch(/^app-[A-Z0-9]{8}\.js$/);
      expect(statSync(join(dir, "console", manifest.script)).size).toBeLessThan(30_000);
      const consoleChunks = chunks.filter((chunk) =>
        sourcesOf(dir, `chunks/${chunk}`).some((source) => source.endsWith("functions/api/console.ts")),
      );
      expect(consoleChunks).toHaveLength(1);
      expect(sizeOf(`chunks/${consoleChunks[0]}`)).toBeLessThan(10_000);
      expect(staticallyLoaded(dir)).not.toContain(`chunks/${consoleChunks[0]}`);
    });

    it("the Cedar engine travels as its own file: its WebAssembly module beside index.mjs, its glue a chunk no request reads until a decision needs it", () => {
      for (const functionId of ["ApiFunction", "RunnerFunction"]) {
        const dir = bundleDir(functionId);
        const wasm = join(dir, "cedar_wasm_bg.wasm");
        expect(existsSync(wasm), functionId).toBe(true);
        // A WebAssembly module (magic number \0asm), the package's own, not inlined into any JavaScript.
        expect(readFileSync(wasm).subarray(0, 4)).toEqual(Buffer.from([0, 0x61, 0x73, 0x6d]));
        expect(statSync(wasm).size).toBeGreaterThan(1_000_000);
      }
      const dir = bundleDir();
      const glue = chunksHolding(dir, "@cedar-policy/cedar-wasm/web/cedar_wasm.js");
      expect(glue).toHaveLength(1);
      expect(statSync(join(dir, glue[0] as string)).size).toBeLessThan(20_000);
      // Neither a cold start (/healthz) nor any route's static imports read it: only its dynamic import.
      expect(staticallyLoaded(dir)).not.toContain(glue[0]);
      expect(syncRequestPath(dir)).not.toContain(glue[0]);
    });

    it("the MCP SDK and the JOSE code are read only by an /mcp request: no other route loads them", () => {
      const dir = bundleDir();
      const otherRoutes = syncRequestPath(dir).flatMap((file) => sourcesOf(dir, file));
      const mcpOnly = staticallyLoaded(dir, [
        ...chunksHolding(dir, "shared/mcp/server.ts"),
        ...chunksHolding(dir, "shared/mcp/auth.ts"),
      ]).flatMap((file) => sourcesOf(dir, file));
      for (const heavy of ["node_modules/@modelcontextprotocol/sdk/", "node_modules/jose/"]) {
        expect(
          otherRoutes.filter((source) => source.includes(heavy)),
          heavy,
        ).toEqual([]);
        expect(
          mcpOnly.some((source) => source.includes(heavy)),
          heavy,
        ).toBe(true);
      }
    });

    it("a cold start reads none of zod's full API, the app, openai or the AWS SDK; requests load them", () => {
      const dir = bundleDir();
      const eager = staticallyLoaded(dir);
      const eagerSources = eager.flatMap((file) => sourcesOf(dir, file));
      const lazySources = readdirSync(join(dir, "chunks"))
        .filter((name) => name.endsWith(".mjs") && !eager.includes(`chunks/${name}`))
        .flatMap((name) => sourcesOf(dir, `chunks/${name}`));
      for (const heavy of [
        "node_modules/openai/",
        "node_modules/@aws-sdk/client-dynamodb/",
        "node_modules/zod/v4/classic/",
        "node_modules/@hono/zod-openapi/",
        "functions/api/app.ts",
        "shared/deps.ts",
      ]) {
        expect(
          eagerSources.filter((source) => source.includes(heavy)),
          heavy,
        ).toEqual([]);
        expect(
          lazySources.some((source) => source.includes(heavy)),
          heavy,
        ).toBe(true);
      }
      expect(eagerSources.some((source) => source.includes("shared/config.ts"))).toBe(true);
      // zod's other languages are not bundled (infra/bundle.ts zodEnglishOnly); English is.
      const all = [...eagerSources, ...lazySources];
      expect(all.some((source) => /node_modules\/zod\/v4\/locales\/en\.js$/.test(source))).toBe(true);
      expect(all.filter((source) => /node_modules\/zod\/v4\/locales\/(?!en\.js)/.test(source))).toEqual([]);
      // z.compile and z.fromJSONSchema are stubs (infra/bundle.ts zodUnusedApis): their code is not shipped.
      const code = readdirSync(join(dir, "chunks"))
        .filter((file) => file.endsWith(".mjs"))
        .map((file) => readFileSync(join(dir, "chunks", file), "utf8"))
        .join("\n");
      expect(code).toContain("z.compile is not in the Lambda bundle");
      expect(code).not.toContain("z.compile does not support");
      expect(code).not.toContain("unevaluatedProperties is not supported");
    });

    it("only an asynchronous start or a cancel loads the Lambda client: not a cold start, not a synchronous run", () => {
      const dir = bundleDir();
      const holding = (source: string) => chunksHolding(dir, source);
      const syncPath = syncRequestPath(dir);
      expect(syncPath.length).toBeGreaterThan(3);
      const lambdaClient = holding("node_modules/@aws-sdk/client-lambda/");
      expect(lambdaClient.length).toBeGreaterThan(0);
      for (const source of [
        "node_modules/@aws-sdk/client-lambda/",
        "shared/durable/lambda-executions.ts",
        "shared/runs/async-start.ts",
      ]) {
        expect(holding(source), source).not.toEqual([]);
        expect(
          holding(source).filter((file) => syncPath.includes(file)),
          source,
        ).toEqual([]);
      }
      // Only the commands the port sends: not the aggregated `Lambda` class, its waiters or other commands
      // (shared/durable/lambda-executions.ts builds the client from named imports).
      for (const unused of [
        "dist-es/Lambda.js",
        "dist-es/commands/CreateFunctionCommand.js",
        "dist-es/waiters/",
      ]) {
        expect(holding(`node_modules/@aws-sdk/client-lambda/${unused}`), unused).toEqual([]);
      }
      expect(holding("node_modules/@aws-sdk/client-lambda/dist-es/commands/InvokeCommand.js")).not.toEqual(
        [],
      );
      // The runner's SDK is not in the API's bundle at all.
      expect(holding("node_modules/@aws/durable-execution-sdk-js")).toEqual([]);
      expect(asyncOnlyChunks(dir)).toEqual(expect.arrayContaining(lambdaClient));
    });

    it("keeps every name in the runner's bundle (its durable execution SDK reads constructor names), in the API's only the names read at run time", () => {
      const code = (functionId?: string) => {
        const dir = bundleDir(functionId);
        const chunks = readdirSync(join(dir, "chunks")).filter((name) => name.endsWith(".mjs"));
        return ["index.mjs", ...chunks.map((chunk) => `chunks/${chunk}`)]
          .map((file) => readFileSync(join(dir, file), "utf8"))
          .join("\n");
      };
      // esbuild's keepNames helper, `__name(target, value)`, minified: it names whatever it is given.
      const keepNamesHelper = /"name",\{value:[A-Za-z_$][\w$]*,configurable:!0\}/;
      expect(code("RunnerFunction")).toMatch(keepNamesHelper);
      const api = code();
      expect(api).not.toMatch(keepNamesHelper);
      // infra/kept-names-plugin.ts: boundloop's error classes and the dependencies' classes whose name is read.
      for (const name of ["ConfigError", "ProblemError", "NoOpLogger", "OpenAI", "JWTExpired"]) {
        expect(api, name).toContain(`"name",{value:${JSON.stringify(name)},configurable:!0}`);
      }
    });

    it("leaves out the modules Node on Lambda never reaches (infra/bundle.ts unreachableOnLambda)", () => {
      const dir = bundleDir();
      const files = [
        "index.mjs",
        ...readdirSync(join(dir, "chunks"))
          .filter((name) => name.endsWith(".mjs"))
          .map((name) => `chunks/${name}`),
      ];
      const sources = files.flatMap((file) => sourcesOf(dir, file));
      for (const absent of [
        "node_modules/@aws-sdk/credential-provider-node/",
        "node_modules/@aws-sdk/credential-provider-sso/",
        "node_modules/@aws-sdk/credential-provider-ini/",
        "node_modules/@smithy/credential-provider-imds/",
        "node_modules/@aws-sdk/nested-clients/",
        "node_modules/bowser/",
        "node_modules/@fastify/busboy/",
        "node_modules/ajv/",
        "node_modules/ajv-formats/",
        // The openai client's parts the adapter never reaches (infra/openai-resources-plugin.ts).
        "node_modules/openai/core/streaming.mjs",
        "node_modules/openai/internal/decoders/line.mjs",
        "node_modules/openai/auth/workload-identity-auth.mjs",
        // hono's default routers: every app is built with its TrieRouter (infra/unreached-files-plugin.ts).
        "node_modules/hono/dist/router/reg-exp-router/",
        "node_modules/hono/dist/router/smart-router/",
      ]) {
        expect(
          sources.filter((source) => source.includes(absent)),
          absent,
        ).toEqual([]);
      }
      // The throwing replacements are in (the credential chain's is a bare re-export: no code of its own).
      for (const replaced of ["bowser", "@fastify/busboy"]) {
        expect(sources, replaced).toContain(`unreachable-on-lambda:${replaced}`);
      }
      for (const part of ["core/streaming.mjs", "auth/workload-identity-auth.mjs"]) {
        expect(sources, part).toContain(`without-unreached-openai-client-parts:${part}`);
      }
      // The files infra/unreached-files-plugin.ts replaces in place: their stand-ins, which name it, are in.
      const code = files.map((file) => readFileSync(join(dir, file), "utf8")).join("\n");
      for (const stub of [
        "fetchCurl (node-libcurl)",
        "the web-stream body mixin",
        "S3's endpoint parameters",
      ]) {
        expect(code, stub).toContain(`${stub} is not in the Lambda bundle (infra/unreached-files-plugin.ts)`);
      }
      // No region lookup in the instance metadata service (Lambda has none): its addresses are not in.
      expect(code).not.toContain("169.254.169.254");
      expect(code).not.toContain("fd00:ec2::254");
      expect(sources.some((source) => source.includes("node_modules/hono/dist/router/trie-router/"))).toBe(
        true,
      );
      // The default chain's first link, which finds Lambda's credentials, is what the clients get instead.
      expect(
        sources.some((source) => source.includes("node_modules/@aws-sdk/credential-provider-env/")),
      ).toBe(true);
    });
  });
}
