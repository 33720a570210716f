import { execFile } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { gzipSync } from "node:zlib";
import { Stack, Validations } from "aws-cdk-lib";
import { Bucket } from "aws-cdk-lib/aws-s3";
import type { CloudAssembly } from "aws-cdk-lib/cx-api";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildApp, STACK_ID } from "../infra/build-app.js";
import { startBedrockStandIn } from "../local/bedrock-stand-in.js";
import { createDevIssuer, mintToken } from "../local/dev-auth.js";
import { toHttpApiEvent } from "../local/dev-event.js";
import { TRACING_SDK_PACKAGES } from "./support/spans.js";
import { seedEvent, startTestStack } from "./support/stack.js";

const run = promisify(execFile);

/**
 * The real app as `cdk synth` builds it (infra/build-app.ts): cdk-nag AwsSolutions registered, the
 * handler bundled by the local esbuild (no Docker), written to a temporary cloud assembly. Built once.
 */
const outdir = mkdtempSync(join(tmpdir(), "boundloop-cdk-"));
const context = {
  jwtIssuer: "https://cognito-idp.eu-west-2.amazonaws.com/eu-west-2_AbCdEf123",
  jwtAudience: "3n4b5urk1ft4fl3mg5e62d9ado",
};
const built = buildApp({ outdir, context });
let assembly: CloudAssembly;
let synthError: unknown;

beforeAll(() => {
  try {
    assembly = built.app.synth();
  } catch (error) {
    synthError = error;
  }
}, 240_000);

afterAll(() => rmSync(outdir, { recursive: true, force: true }));

/**
 * The bundled handler's directory: the asset whose hash the function's S3Key names (the function whose
 * logical id starts with `functionId`: the API's by default, `RunnerFunction` for the durable runner).
 */
function bundleDir(functionId = "ApiFunction"): string {
  const template = assembly.getStackArtifact(STACK_ID).template as {
    Resources: Record<string, { Type: string; Properties: { Code?: { S3Key?: string } } }>;
  };
  const fn = Object.entries(template.Resources).find(
    ([id, resource]) => resource.Type === "AWS::Lambda::Function" && id.startsWith(functionId),
  )?.[1];
  const key = fn?.Properties.Code?.S3Key;
  expect(key).toMatch(/^[0-9a-f]{64}\.zip$/);
  return join(outdir, `asset.${key?.replace(/\.zip$/, "")}`);
}

/** Every source path the source maps of a bundle's JavaScript files name (index.mjs and chunks/). */
function bundleSources(dir: string): string[] {
  const chunks = existsSync(join(dir, "chunks")) ? readdirSync(join(dir, "chunks")) : [];
  return [
    "index.mjs",
    ...chunks.filter((name) => name.endsWith(".mjs")).map((name) => `chunks/${name}`),
  ].flatMap((file) => sourcesOf(dir, file));
}

/** The original source paths a built file's source map names (`file` relative to the bundle dir). */
function sourcesOf(dir: string, file: string): string[] {
  return (JSON.parse(readFileSync(join(dir, `${file}.map`), "utf8")) as { sources: string[] }).sources;
}

/**
 * `from` (default index.mjs) and the chunks they import statically, transitively: what loading them reads
 * and evaluates (from index.mjs: what a cold start reads).
 */
function staticallyLoaded(dir: string, from: string[] = ["index.mjs"]): string[] {
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
function chunksHolding(dir: string, source: string): string[] {
  return readdirSync(join(dir, "chunks"))
    .filter((name) => name.endsWith(".mjs"))
    .map((name) => `chunks/${name}`)
    .filter((file) => sourcesOf(dir, file).some((path) => path.includes(source)));
}

/**
 * What a synchronous run and every other route load: index.mjs, the app, the dependencies and the run
 * service, with everything they import statically.
 */
function syncRequestPath(dir: string): string[] {
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
function asyncOnlyChunks(dir: string): string[] {
  const syncPath = syncRequestPath(dir);
  return staticallyLoaded(dir, [
    ...chunksHolding(dir, "shared/runs/async-start.ts"),
    ...chunksHolding(dir, "shared/durable/lambda-executions.ts"),
  ]).filter((file) => !syncPath.includes(file));
}

/** A v2 `GET /healthz` event as API Gateway sends it (the route is public: no authorizer). */
function healthzEvent() {
  return {
    version: "2.0",
    routeKey: "GET /healthz",
    rawPath: "/healthz",
    rawQueryString: "",
    headers: { host: "abc123.execute-api.eu-west-2.amazonaws.com" },
    requestContext: {
      accountId: "123456789012",
      apiId: "abc123",
      domainName: "abc123.execute-api.eu-west-2.amazonaws.com",
      domainPrefix: "abc123",
      http: {
        method: "GET",
        path: "/healthz",
        protocol: "HTTP/1.1",
        sourceIp: "203.0.113.10",
        userAgent: "vitest",
      },
      requestId: "req-1",
      routeKey: "GET /healthz",
      stage: "$default",
      time: "30/Nov/2025:06:00:00 +0000",
      timeEpoch: 1764482400000,
    },
    isBase64Encoded: false,
  };
}

/** Runs the bundle in a fresh `node --enable-source-maps` (as NODE_OPTIONS does in Lambda). */
async function runBundle(script: string, env: Record<string, string>) {
  const entry = join(bundleDir(), "index.mjs");
  const source = `const { handler } = await import(${JSON.stringify(entry)});\n${script}`;
  return run(process.execPath, ["--enable-source-maps", "--input-type=module", "-e", source], {
    env: { PATH: process.env.PATH ?? "", AWS_REGION: "eu-west-2", ...env },
    timeout: 60_000,
  }).then(
    (result) => ({ code: 0, ...result }),
    (error: { code?: number; stdout: string; stderr: string }) => ({
      code: error.code ?? 1,
      stdout: error.stdout,
      stderr: error.stderr,
    }),
  );
}

describe("cdk synth of the real app", () => {
  it("synthesizes with cdk-nag AwsSolutions and no unacknowledged finding", () => {
    expect(synthError).toBeUndefined();
    const report = JSON.parse(readFileSync(join(outdir, "validation-report.json"), "utf8")) as {
      pluginReports: Array<{ violations?: unknown[] }>;
    };
    expect(report.pluginReports.flatMap((plugin) => plugin.violations ?? [])).toEqual([]);
    const messages = assembly.getStackArtifact(STACK_ID).messages;
    expect(messages.filter((message) => message.level === "error")).toEqual([]);
    expect(messages.filter((message) => message.level === "warning")).toEqual([]);
  });

  it("acknowledges findings only on their own constructs, each with a reason", () => {
    const acknowledged: Record<string, Record<string, string>> = {};
    for (const construct of built.app.node.findAll()) {
      for (const entry of construct.node.metadata) {
        if (entry.type === Validations.ACKNOWLEDGED_RULES_METADATA_KEY) {
          acknowledged[construct.node.path] = { ...acknowledged[construct.node.path], ...entry.data };
        }
      }
    }
    expect(Object.keys(acknowledged).sort()).toEqual([
      "Boundloop/ApiFunctionRole",
      "Boundloop/HttpApi/GET--.well-known--agent-card.json",
      "Boundloop/HttpApi/GET--.well-known--oauth-protected-resource",
      "Boundloop/HttpApi/GET--.well-known--oauth-protected-resource--mcp",
      "Boundloop/HttpApi/GET--console",
      "Boundloop/HttpApi/GET--console--assets--{file}",
      "Boundloop/HttpApi/GET--healthz",
      "Boundloop/HttpApi/GET--mcp",
      "Boundloop/HttpApi/GET--openapi.json",
      "Boundloop/HttpApi/POST--mcp",
      "Boundloop/OpenAiApiKey",
      "Boundloop/Runner/Role",
      "Boundloop/StreamFunctionRole",
    ]);
    // The runner's role uses AWS's durable-execution policy; the API may stop/read the runner's executions.
    expect(Object.keys(acknowledged["Boundloop/Runner/Role"] ?? {})).toEqual([
      "AwsSolutions::AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaBasicDurableExecutionRolePolicy]",
    ]);
    expect(Object.keys(acknowledged["Boundloop/ApiFunctionRole"] ?? {})).toEqual([
      expect.stringMatching(
        /^AwsSolutions::AwsSolutions-IAM5\[Resource::<RunnerFunction[0-9A-F]{8}\.Arn>:\*\/durable-execution\/\*\]$/,
      ),
    ]);
    // The streaming function starts and stops durable runs as the API function does.
    expect(Object.keys(acknowledged["Boundloop/StreamFunctionRole"] ?? {})).toEqual(
      Object.keys(acknowledged["Boundloop/ApiFunctionRole"] ?? {}),
    );
    expect(Object.keys(acknowledged["Boundloop/OpenAiApiKey"] ?? {})).toEqual([
      "Annotation::AwsSolutions-SMG4",
    ]);
    for (const rules of Object.values(acknowledged)) {
      for (const reason of Object.values(rules)) expect(reason.length).toBeGreaterThan(30);
    }
  });

  it("fails synth on a finding nobody acknowledged (the nag plugin really runs)", () => {
    const probe = buildApp({
      outdir: mkdtempSync(join(tmpdir(), "boundloop-cdk-nag-")),
      context: { ...context, "aws:cdk:bundling-stacks": [] },
    });
    new Bucket(Stack.of(probe.stack), "UnloggedBucket");
    expect(() => probe.app.synth()).toThrow(/AwsSolutions-S1/);
    const report = readFileSync(join(probe.app.outdir, "validation-report.json"), "utf8");
    expect(report).toContain("AwsSolutions-S1");
    expect(report).toContain("Boundloop/UnloggedBucket/Resource");
    rmSync(probe.app.outdir, { recursive: true, force: true });
  });

  it("synthesizes the built-in user pool (no issuer) with cdk-nag: only COG2 (MFA optional) and COG8 (not Plus) acknowledged, on the pool", () => {
    const pooled = buildApp({
      outdir: mkdtempSync(join(tmpdir(), "boundloop-cdk-pool-")),
      context: { "aws:cdk:bundling-stacks": [] },
    });
    const template = pooled.app.synth().getStackArtifact(STACK_ID).template as {
      Resources: Record<string, { Type: string }>;
    };
    expect(Object.values(template.Resources).map((r) => r.Type)).toContain("AWS::Cognito::UserPool");
    const report = JSON.parse(readFileSync(join(pooled.app.outdir, "validation-report.json"), "utf8")) as {
      pluginReports: Array<{ violations?: unknown[] }>;
    };
    expect(report.pluginReports.flatMap((plugin) => plugin.violations ?? [])).toEqual([]);
    const acknowledged: Record<string, string[]> = {};
    for (const construct of pooled.app.node.findAll()) {
      for (const entry of construct.node.metadata) {
        if (
          entry.type === Validations.ACKNOWLEDGED_RULES_METADATA_KEY &&
          construct.node.path.includes("Users")
        ) {
          acknowledged[construct.node.path] = [
            ...(acknowledged[construct.node.path] ?? []),
            ...Object.keys(entry.data as Record<string, string>),
          ].sort();
        }
      }
    }
    expect(acknowledged).toEqual({
      "Boundloop/Users/Pool": ["Annotation::AwsSolutions-COG2", "Annotation::AwsSolutions-COG8"],
    });
    rmSync(pooled.app.outdir, { recursive: true, force: true });
  });

  it("bundles the handler with the local esbuild (infra/bundle.ts) as minified ESM chunks with source maps", () => {
    const dir = bundleDir();
    const code = readFileSync(join(dir, "index.mjs"), "utf8");
    expect(code.startsWith("import { createRequire } from 'module';")).toBe(true);
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
    expect(holding("node_modules/@aws-sdk/client-lambda/dist-es/commands/InvokeCommand.js")).not.toEqual([]);
    // The runner's SDK is not in the API's bundle at all.
    expect(holding("node_modules/@aws/durable-execution-sdk-js")).toEqual([]);
    expect(asyncOnlyChunks(dir)).toEqual(expect.arrayContaining(lambdaClient));
  });

  it("the bundle answers GET /healthz through the real handler", async () => {
    const result = await runBundle(
      `const res = await handler(${JSON.stringify(healthzEvent())}, { getRemainingTimeInMillis: () => 29000, awsRequestId: "r1" });
       console.log(JSON.stringify(res));`,
      { TABLE_NAME: "boundloop-bundle-test", OPENAI_API_KEY_SECRET_NAME: "boundloop/openai" },
    );
    expect(result.stderr).not.toMatch(/Error/);
    const response = JSON.parse(result.stdout.trim().split("\n").at(-1) ?? "{}");
    expect(response.statusCode).toBe(200);
    expect(JSON.parse(response.body)).toEqual({ status: "ok" });
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
    // The default chain's first link, which finds Lambda's credentials, is what the clients get instead.
    expect(sources.some((source) => source.includes("node_modules/@aws-sdk/credential-provider-env/"))).toBe(
      true,
    );
  });

  it("with tracing off (the default) neither function's bundle holds the OpenTelemetry SDK or an exporter", async () => {
    for (const functionId of ["ApiFunction", "RunnerFunction"]) {
      const sources = bundleSources(bundleDir(functionId));
      for (const absent of TRACING_SDK_PACKAGES) {
        expect(
          sources.filter((source) => source.includes(absent)),
          `${functionId}: ${absent}`,
        ).toEqual([]);
      }
      // The API and boundloop's instrumentation stay (spans are no-ops until a provider is registered);
      // the SDK's module is the throwing replacement.
      expect(sources.some((source) => source.includes("node_modules/@opentelemetry/api/"))).toBe(true);
      expect(sources, functionId).toContain("without-tracing-sdk:shared/telemetry/sdk.ts");
    }
    // TRACING switched on by hand in such a function's environment: the request is still answered, and
    // the missing SDK is logged at ERROR, naming the deploy setting.
    const result = await runBundle(
      `const res = await handler(${JSON.stringify(healthzEvent())}, { getRemainingTimeInMillis: () => 29000, awsRequestId: "r1" });
       console.log(JSON.stringify(res));`,
      { TABLE_NAME: "boundloop-bundle-test", TRACING: "otlp" },
    );
    const response = JSON.parse(result.stdout.trim().split("\n").at(-1) ?? "{}");
    expect(response.statusCode).toBe(200);
    const logged = `${result.stdout}\n${result.stderr}`;
    expect(logged).toContain("tracing is on but the OpenTelemetry SDK did not start");
    expect(logged).toContain("-c tracing=otlp");
  });

  it("the bundle serves the seed run end to end: model over HTTP, DynamoDB with credentials from the environment", async () => {
    const stack = await startTestStack();
    try {
      // AWS credentials in the environment, as Lambda sets them (DynamoDB Local takes letters and digits
      // only in the key id): the DynamoDB client then takes them from
      // the bundle's credential provider (fromEnv), not from shared/store/dynamo.ts's fixed local ones.
      const result = await runBundle(
        `const res = await handler(${JSON.stringify(seedEvent())}, { getRemainingTimeInMillis: () => 29000, awsRequestId: "r1" });
         console.log(JSON.stringify(res));`,
        {
          TABLE_NAME: stack.config.table.name,
          DYNAMODB_ENDPOINT: stack.config.table.endpoint ?? "",
          OPENAI_BASE_URL: stack.config.model.baseURL ?? "",
          AWS_ACCESS_KEY_ID: "bundletest",
          AWS_SECRET_ACCESS_KEY: "bundletest",
          AWS_SESSION_TOKEN: "bundletest",
          AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: "true",
        },
      );
      expect(result.stderr).not.toMatch(/Error/);
      const response = JSON.parse(result.stdout.trim().split("\n").at(-1) ?? "{}");
      expect(response.statusCode, response.body).toBe(200);
      const body = JSON.parse(response.body) as {
        status: string;
        cycles: number;
        toolResults: Array<{ status: string; metadata: { toolName: string }; data: unknown }>;
      };
      expect(body.status).toBe("completed");
      expect(body.cycles).toBe(3);
      expect(body.toolResults.map((r) => [r.metadata.toolName, r.status])).toEqual([
        ["calculateTax", "success"],
        ["calculateTax", "business_error"],
        ["recordInvoice", "success"],
      ]);
      const recorded = body.toolResults[2]?.data as { invoice?: { invoiceId: string } } | undefined;
      const invoiceId = recorded?.invoice?.invoiceId;
      expect(invoiceId).toMatch(/^inv_[0-9a-f]{24}$/);
      // The bundle's write is in the table, read back by the unbundled store.
      const ledger = await stack.deps.ledger.list("tenant_uk_01");
      expect(ledger).toMatchObject([{ invoiceId, grossTotal: { amount: "1800.00", minorUnits: 180000 } }]);
    } finally {
      await stack.stop();
    }
  }, 90_000);

  it("the bundle serves an MCP tools/call (the MCP SDK, jose and zod as bundled): calculateTax GB 1500.00", async () => {
    const issuer = await createDevIssuer();
    const stack = await startTestStack();
    try {
      const host = "mcp.bundle.invalid";
      const token = await mintToken(
        issuer,
        { sub: "usr_bundle", tenant_id: "tenant_bundle_01", scope: "billing:read" },
        { audience: `https://${host}/mcp` },
      );
      const body = JSON.stringify({
        jsonrpc: "2.0",
        id: 1,
        method: "tools/call",
        params: {
          name: "calculateTax",
          arguments: { amount: "1500.00", currency: "GBP", jurisdiction: "GB" },
        },
      });
      const headers = {
        host,
        authorization: `Bearer ${token}`,
        accept: "application/json, text/event-stream",
        "content-type": "application/json",
      };
      const event = toHttpApiEvent(
        {
          method: "POST",
          url: "/mcp",
          headers: Object.fromEntries(Object.entries(headers).map(([name, value]) => [name, [value]])),
          body: Buffer.from(body),
          sourceIp: "127.0.0.1",
          localPort: 443,
        },
        undefined,
      );
      event.headers["x-forwarded-proto"] = "https";
      const result = await runBundle(
        `const res = await handler(${JSON.stringify(event)}, { getRemainingTimeInMillis: () => 29000, awsRequestId: "r1" });
         console.log(JSON.stringify(res));`,
        {
          TABLE_NAME: stack.config.table.name,
          DYNAMODB_ENDPOINT: stack.config.table.endpoint ?? "",
          JWT_ISSUER: issuer.issuer,
          JWT_JWKS: JSON.stringify({ keys: [issuer.publicJwk] }),
          MCP_RESOURCE_URL: `https://${host}/mcp`,
          AWS_ACCESS_KEY_ID: "bundletest",
          AWS_SECRET_ACCESS_KEY: "bundletest",
          AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: "true",
        },
      );
      expect(result.stderr).not.toMatch(/Error/);
      const response = JSON.parse(result.stdout.trim().split("\n").at(-1) ?? "{}");
      expect(response.statusCode, response.body).toBe(200);
      const answer = JSON.parse(response.body) as {
        result: {
          isError?: boolean;
          structuredContent: { taxAmount: { amount: string }; grossTotal: { amount: string } };
        };
      };
      expect(answer.result.isError ?? false).toBe(false);
      expect(answer.result.structuredContent.taxAmount.amount).toBe("300.00");
      expect(answer.result.structuredContent.grossTotal.amount).toBe("1800.00");
    } finally {
      await stack.stop();
    }
  }, 90_000);

  it("the bundle serves the seed run through Bedrock's endpoint with keys it makes from Lambda's environment credentials", async () => {
    // The role's credentials as Lambda puts them in the environment; the stand-in checks every key's
    // signature against them and the Region, as Bedrock does.
    const credentials = {
      accessKeyId: "ASIABUNDLETEST000001",
      secretAccessKey: "bundleTestSecretAccessKey0000000000000000",
      sessionToken: "bundleTestSessionToken",
    };
    const standIn = await startBedrockStandIn({
      credentials,
      region: "eu-west-2",
      models: ["openai.gpt-oss-20b-1:0"],
    });
    const stack = await startTestStack();
    try {
      const result = await runBundle(
        `const res = await handler(${JSON.stringify(seedEvent())}, { getRemainingTimeInMillis: () => 29000, awsRequestId: "r1" });
         console.log(JSON.stringify(res));`,
        {
          TABLE_NAME: stack.config.table.name,
          DYNAMODB_ENDPOINT: stack.config.table.endpoint ?? "",
          MODEL_PROVIDER: "bedrock",
          BEDROCK_MODEL_ID: "openai.gpt-oss-20b-1:0",
          BEDROCK_BASE_URL: standIn.baseURL,
          AWS_ACCESS_KEY_ID: credentials.accessKeyId,
          AWS_SECRET_ACCESS_KEY: credentials.secretAccessKey,
          AWS_SESSION_TOKEN: credentials.sessionToken,
          AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: "true",
        },
      );
      expect(result.stderr).not.toMatch(/Error/);
      const response = JSON.parse(result.stdout.trim().split("\n").at(-1) ?? "{}");
      expect(response.statusCode, response.body).toBe(200);
      expect(JSON.parse(response.body)).toMatchObject({ status: "completed", cycles: 3 });
      expect(standIn.keys.map((key) => [key.accessKeyId, key.refused])).toEqual([
        [credentials.accessKeyId, null],
        [credentials.accessKeyId, null],
        [credentials.accessKeyId, null],
      ]);
      expect(standIn.model.requests.map((request) => request.model)).toEqual(
        Array(3).fill("openai.gpt-oss-20b-1:0"),
      );
      // The key is never in what the function logged or answered.
      expect(`${result.stdout}${result.stderr}`).not.toContain("bedrock-api-key-");
    } finally {
      await stack.stop();
      await standIn.stop();
    }
  }, 90_000);

  it("maps a cold-start error back to the TypeScript source and keeps the error's class name", async () => {
    const result = await runBundle("", { TABLE_NAME: "x" });
    expect(result.code).not.toBe(0);
    expect(result.stderr).toContain("ConfigError: Invalid configuration: TABLE_NAME");
    expect(result.stderr).toMatch(/shared\/config\.ts:\d+:\d+/);
  });
});
