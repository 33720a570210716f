/**
 * `cdk synth` of the real app (test/support/bundle.ts synthesizedApp): cdk-nag's findings, and the API
 * bundle run in a fresh node as Lambda runs it (a health check, the seed run, an MCP call, Bedrock, a
 * cold-start error), and what the bundles hold (test/support/bundle-contents.ts, on the same synth).
 */
import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { Stack, Validations } from "aws-cdk-lib";
import { Bucket } from "aws-cdk-lib/aws-s3";
import { describe, expect, it } from "vitest";
import { buildApp, STACK_ID } from "../infra/build-app.js";
import { startBedrockStandIn } from "../local/bedrock-stand-in.js";
import { createDevIssuer, mintToken } from "../local/dev-auth.js";
import { toHttpApiEvent } from "../local/dev-event.js";
import { bundleSources, synthesizedApp } from "./support/bundle.js";
import { describeBundleContents } from "./support/bundle-contents.js";
import { TRACING_SDK_PACKAGES } from "./support/spans.js";
import { seedEvent, startTestStack } from "./support/stack.js";

const run = promisify(execFile);

const synth = synthesizedApp();
const { built, bundleDir, context, outdir } = synth;
describeBundleContents(bundleDir);

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
    expect(synth.synthError).toBeUndefined();
    const report = JSON.parse(readFileSync(join(outdir, "validation-report.json"), "utf8")) as {
      pluginReports: Array<{ violations?: unknown[] }>;
    };
    expect(report.pluginReports.flatMap((plugin) => plugin.violations ?? [])).toEqual([]);
    const messages = synth.assembly.getStackArtifact(STACK_ID).messages;
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

  it("with tracing off (the default) no function's bundle holds the OpenTelemetry SDK or an exporter", async () => {
    for (const functionId of ["ApiFunction", "RunnerFunction", "StreamFunction"]) {
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
