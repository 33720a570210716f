/**
 * The real app as `cdk synth` builds it, for the files that check its output (test/infra-synth.test.ts:
 * cdk-nag, and the bundle run in node; test/support/bundle-contents.ts: what the bundles hold), and
 * readers of a bundle's files and source maps.
 */
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { CloudAssembly } from "aws-cdk-lib/cx-api";
import { afterAll, beforeAll, expect } from "vitest";
import { buildApp, STACK_ID } from "../../infra/build-app.js";

/** The deploy context of the synthesized app: a Cognito issuer and an app client id (no built-in pool). */
const SYNTH_CONTEXT = {
  jwtIssuer: "https://cognito-idp.eu-west-2.amazonaws.com/eu-west-2_AbCdEf123",
  jwtAudience: "3n4b5urk1ft4fl3mg5e62d9ado",
};

/**
 * The real app as `cdk synth` builds it (infra/build-app.ts): cdk-nag AwsSolutions registered, the
 * handler bundled by the local esbuild (no Docker), written to a temporary cloud assembly. Built when
 * called (as the calling file is collected), synthesized in the file's `beforeAll`, removed after its
 * tests.
 * @returns `built` (the app and stack), `outdir`, `context` (the deploy context), `assembly` and
 *   `synthError` (what synth returned or threw, once `beforeAll` has run), and `bundleDir`
 */
export function synthesizedApp() {
  const outdir = mkdtempSync(join(tmpdir(), "boundloop-cdk-"));
  const built = buildApp({ outdir, context: SYNTH_CONTEXT });
  const synthesized: { assembly?: CloudAssembly; error?: unknown } = {};

  beforeAll(() => {
    try {
      synthesized.assembly = built.app.synth();
    } catch (error) {
      synthesized.error = error;
    }
  }, 240_000);

  afterAll(() => rmSync(outdir, { recursive: true, force: true }));

  /** The cloud assembly synth wrote; throws when it has not run or failed. */
  const assembly = (): CloudAssembly => {
    if (!synthesized.assembly) throw new Error("no cloud assembly: synth has not run, or failed");
    return synthesized.assembly;
  };

  /**
   * The bundled handler's directory: the asset whose hash the function's S3Key names (the function whose
   * logical id starts with `functionId`: the API's by default, `RunnerFunction` for the durable runner).
   */
  function bundleDir(functionId = "ApiFunction"): string {
    const template = assembly().getStackArtifact(STACK_ID).template as {
      Resources: Record<string, { Type: string; Properties: { Code?: { S3Key?: string } } }>;
    };
    const fn = Object.entries(template.Resources).find(
      ([id, resource]) => resource.Type === "AWS::Lambda::Function" && id.startsWith(functionId),
    )?.[1];
    const key = fn?.Properties.Code?.S3Key;
    expect(key).toMatch(/^[0-9a-f]{64}\.zip$/);
    return join(outdir, `asset.${key?.replace(/\.zip$/, "")}`);
  }

  return {
    built,
    outdir,
    context: SYNTH_CONTEXT,
    get assembly() {
      return assembly();
    },
    get synthError() {
      return synthesized.error;
    },
    bundleDir,
  };
}

/** Every source path the source maps of a bundle's JavaScript files name (index.mjs and chunks/). */
export function bundleSources(dir: string): string[] {
  const chunks = existsSync(join(dir, "chunks")) ? readdirSync(join(dir, "chunks")) : [];
  return [
    "index.mjs",
    ...chunks.filter((name) => name.endsWith(".mjs")).map((name) => `chunks/${name}`),
  ].flatMap((file) => sourcesOf(dir, file));
}

/** The original source paths a built file's source map names (`file` relative to the bundle dir). */
export function sourcesOf(dir: string, file: string): string[] {
  return (JSON.parse(readFileSync(join(dir, `${file}.map`), "utf8")) as { sources: string[] }).sources;
}

/**
 * `from` (default index.mjs) and the chunks they import statically, transitively: what loading them reads
 * and evaluates (from index.mjs: what a cold start reads).
 */
export function staticallyLoaded(dir: string, from: string[] = ["index.mjs"]): string[] {
  const seen: string[] = [];
  const pending = [...from];
  while (pending.length > 0) {
    const file = pending.pop() as string;
    if (seen.includes(file)) continue;
    seen.push(file);
    const code = readFileSync(join(dir, file), "utf8");
    // Static imports (`import{a as b}from"./chunks/x.mjs"`, or `from"./x.mjs"` between chunks); dynamic
    // ones are `import("./chunks/x.mjs")` and are not followed.
    for (const match of code.matchAll(
      /(?:^|[;}\s])(?:import|export)\s*(?:[^"'();]*?from\s*)?["'](\.\/[^"']+\.mjs)["']/g,
    )) {
      const target = join(file, "..", match[1] as string);
      pending.push(target);
    }
  }
  return seen;
}

/** The chunks (`chunks/<name>.mjs`) whose source map lists a source path containing `source`. */
export function chunksHolding(dir: string, source: string): string[] {
  return readdirSync(join(dir, "chunks"))
    .filter((name) => name.endsWith(".mjs"))
    .map((name) => `chunks/${name}`)
    .filter((file) => sourcesOf(dir, file).some((path) => path.includes(source)));
}

/**
 * What a synchronous run and every other route load: index.mjs, the app, the dependencies and the run
 * service, with everything they import statically.
 */
export function syncRequestPath(dir: string): string[] {
  return staticallyLoaded(dir, [
    "index.mjs",
    ...chunksHolding(dir, "functions/api/app.ts"),
    ...chunksHolding(dir, "shared/deps.ts"),
    ...chunksHolding(dir, "shared/runs/lifecycle.ts"),
  ]);
}

/**
 * The chunks only the durable port loads (shared/runs/async-start.ts, shared/durable/lambda-executions.ts
 * and what they import statically), less those of {@link syncRequestPath}.
 */
export function asyncOnlyChunks(dir: string): string[] {
  const syncPath = syncRequestPath(dir);
  return staticallyLoaded(dir, [
    ...chunksHolding(dir, "shared/runs/async-start.ts"),
    ...chunksHolding(dir, "shared/durable/lambda-executions.ts"),
  ]).filter((file) => !syncPath.includes(file));
}
