import { execFile } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import type { CloudAssembly } from "aws-cdk-lib/cx-api";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildApp, STACK_ID } from "../infra/build-app.js";
import { otlpSpans, startOtlpReceiver, TRACING_SDK_PACKAGES } from "./support/spans.js";
import { seedEvent, startTestStack } from "./support/stack.js";

const run = promisify(execFile);

/**
 * The real app synthesized with the deploy setting `tracing=otlp` (cdk-nag on, bundles built by the local
 * esbuild): the functions export from their own process, so their bundles hold the OpenTelemetry SDK
 * (test/infra-synth.test.ts checks the default, tracing off, holds none).
 */
const outdir = mkdtempSync(join(tmpdir(), "boundloop-cdk-traced-"));
const built = buildApp({
  outdir,
  context: {
    jwtIssuer: "https://cognito-idp.eu-west-2.amazonaws.com/eu-west-2_AbCdEf123",
    jwtAudience: "3n4b5urk1ft4fl3mg5e62d9ado",
    tracing: "otlp",
    otlpEndpoint: "https://collector.example.com:4318",
  },
});
let assembly: CloudAssembly;
beforeAll(() => {
  assembly = built.app.synth();
}, 240_000);
afterAll(() => rmSync(outdir, { recursive: true, force: true }));

type Resource = {
  Type: string;
  Properties: { Code?: { S3Key?: string }; Environment?: { Variables?: Record<string, string> } };
};

/** The function whose logical id starts with `functionId`, and its bundle's directory. */
function deployed(functionId: string): { fn: Resource; dir: string } {
  const template = assembly.getStackArtifact(STACK_ID).template as { Resources: Record<string, Resource> };
  const fn = Object.entries(template.Resources).find(
    ([id, resource]) => resource.Type === "AWS::Lambda::Function" && id.startsWith(functionId),
  )?.[1] as Resource;
  const key = fn.Properties.Code?.S3Key ?? "";
  expect(key).toMatch(/^[0-9a-f]{64}\.zip$/);
  return { fn, dir: join(outdir, `asset.${key.replace(/\.zip$/, "")}`) };
}

/** Every source path the source maps of a bundle's JavaScript files name. */
function bundleSources(dir: string): string[] {
  const chunks = existsSync(join(dir, "chunks")) ? readdirSync(join(dir, "chunks")) : [];
  return ["index.mjs", ...chunks.filter((name) => name.endsWith(".mjs")).map((name) => `chunks/${name}`)]
    .map((file) => JSON.parse(readFileSync(join(dir, `${file}.map`), "utf8")) as { sources: string[] })
    .flatMap((map) => map.sources);
}

describe("cdk synth with tracing=otlp", () => {
  it("stays cdk-nag clean with no warning, and the functions get TRACING and the endpoint", () => {
    const report = JSON.parse(readFileSync(join(outdir, "validation-report.json"), "utf8")) as {
      pluginReports: Array<{ violations?: unknown[] }>;
    };
    expect(report.pluginReports.flatMap((plugin) => plugin.violations ?? [])).toEqual([]);
    const messages = assembly.getStackArtifact(STACK_ID).messages;
    expect(messages.filter((m) => m.level === "error" || m.level === "warning")).toEqual([]);
    for (const functionId of ["ApiFunction", "RunnerFunction", "StreamFunction"]) {
      expect(deployed(functionId).fn.Properties.Environment?.Variables).toMatchObject({
        TRACING: "otlp",
        OTEL_EXPORTER_OTLP_ENDPOINT: "https://collector.example.com:4318",
      });
    }
  });

  it("bundles the OpenTelemetry SDK and the OTLP exporter into the API, runner and streaming functions", () => {
    for (const functionId of ["ApiFunction", "RunnerFunction", "StreamFunction"]) {
      const sources = bundleSources(deployed(functionId).dir);
      for (const present of TRACING_SDK_PACKAGES) {
        expect(
          sources.some((source) => source.includes(present)),
          `${functionId}: ${present}`,
        ).toBe(true);
      }
      expect(sources.some((source) => source.endsWith("shared/telemetry/sdk.ts"))).toBe(true);
      expect(sources).not.toContain("without-tracing-sdk:shared/telemetry/sdk.ts");
    }
  });

  it("the API bundle serves the seed run and exports its spans over OTLP/HTTP before it answers", async () => {
    const receiver = await startOtlpReceiver();
    const stack = await startTestStack();
    try {
      const entry = join(deployed("ApiFunction").dir, "index.mjs");
      const source = `const { handler } = await import(${JSON.stringify(entry)});
const res = await handler(${JSON.stringify(seedEvent())}, { getRemainingTimeInMillis: () => 29000, awsRequestId: "r1" });
await fetch(${JSON.stringify(`${receiver.endpoint}/answered`)});
console.log(JSON.stringify(res));`;
      const { stdout } = await run(
        process.execPath,
        ["--enable-source-maps", "--input-type=module", "-e", source],
        {
          timeout: 60_000,
          env: {
            PATH: process.env.PATH ?? "",
            AWS_REGION: "eu-west-2",
            TABLE_NAME: stack.config.table.name,
            DYNAMODB_ENDPOINT: stack.config.table.endpoint ?? "",
            OPENAI_BASE_URL: stack.config.model.baseURL ?? "",
            AWS_ACCESS_KEY_ID: "bundletest",
            AWS_SECRET_ACCESS_KEY: "bundletest",
            AWS_SESSION_TOKEN: "bundletest",
            AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: "true",
            TRACING: "otlp",
            OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint,
          },
        },
      );
      const response = JSON.parse(stdout.trim().split("\n").at(-1) ?? "{}");
      expect(response.statusCode, response.body).toBe(200);
      const { runId, status } = JSON.parse(response.body) as { runId: string; status: string };
      expect(status).toBe("completed");
      const traces = receiver.received.filter((post) => post.url === "/v1/traces");
      expect(traces.length).toBeGreaterThan(0);
      // The spans were sent (and answered) before the handler returned: the probe the child sent after
      // its answer is the last request the receiver got.
      expect(receiver.received.at(-1)?.url).toBe("/answered");
      const spans = otlpSpans(traces);
      const agent = spans.find((span) => span.name === "invoke_agent boundloop");
      expect(agent?.attributes).toContainEqual({ key: "boundloop.run.id", value: { stringValue: runId } });
      const inTrace = spans.filter((span) => span.traceId === agent?.traceId);
      expect(inTrace.filter((span) => span.name === "chat gpt-4o-mini")).toHaveLength(3);
      expect(inTrace.filter((span) => span.name.startsWith("execute_tool ")).map((s) => s.name)).toEqual(
        expect.arrayContaining(["execute_tool calculateTax", "execute_tool recordInvoice"]),
      );
      expect(inTrace.some((span) => span.name === "DynamoDB.PutItem")).toBe(true);
    } finally {
      await stack.stop();
      await receiver.stop();
    }
  }, 90_000);
});
