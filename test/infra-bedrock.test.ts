import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { App, Validations } from "aws-cdk-lib";
import { Template } from "aws-cdk-lib/assertions";
import { describe, expect, it } from "vitest";
import { buildApp } from "../infra/build-app.js";
import { DeploySettingsError } from "../infra/settings.js";
import { BoundloopStack } from "../infra/stack.js";
import { loadConfig } from "../shared/config.js";

/** The stack's template without bundling (as test/infra.test.ts), its asset keys replaced by `<asset>.zip`. */
function synth(context: Record<string, unknown>) {
  const app = new App({ context: { "aws:cdk:bundling-stacks": [], ...context } });
  const stack = new BoundloopStack(app, "Test", {});
  const json = JSON.stringify(Template.fromStack(stack).toJSON()).replace(
    /"[0-9a-f]{64}\.zip"/g,
    '"<asset>.zip"',
  );
  return { stack, template: JSON.parse(json) as Template };
}

type Statement = { Action: string | string[]; Resource: unknown; Condition?: unknown; Effect: string };
type Resources = Record<string, { Type: string; Properties: Record<string, unknown> }>;

/** The statements of the inline policy attached to the role whose logical id starts with `rolePrefix`. */
function statementsOf(resources: Resources, rolePrefix: string): Statement[] {
  return Object.values(resources)
    .filter(
      (r) =>
        r.Type === "AWS::IAM::Policy" &&
        (r.Properties.Roles as Array<{ Ref: string }>).some((role) => role.Ref.startsWith(rolePrefix)),
    )
    .flatMap((p) => (p.Properties.PolicyDocument as { Statement: Statement[] }).Statement);
}

const envOf = (resources: Resources, prefix: string) => {
  const fn = Object.entries(resources).find(
    ([id, r]) => r.Type === "AWS::Lambda::Function" && id.startsWith(prefix),
  );
  if (!fn) throw new Error(`no function ${prefix}`);
  return (fn[1].Properties.Environment as { Variables: Record<string, unknown> }).Variables;
};

/**
 * Synthesizes the real app (cdk-nag on) with `context`, expects no violation, and returns the
 * acknowledged rules by construct path (sorted).
 */
function acknowledgedOf(context: Record<string, unknown>): Record<string, string[]> {
  const outdir = mkdtempSync(join(tmpdir(), "boundloop-cdk-bedrock-"));
  try {
    const built = buildApp({ outdir, context: { ...context, "aws:cdk:bundling-stacks": [] } });
    built.app.synth();
    const report = JSON.parse(readFileSync(join(outdir, "validation-report.json"), "utf8")) as {
      pluginReports: Array<{ violations?: unknown[] }>;
    };
    expect(report.pluginReports.flatMap((plugin) => plugin.violations ?? [])).toEqual([]);
    const acknowledged: Record<string, string[]> = {};
    for (const construct of built.app.node.findAll()) {
      for (const entry of construct.node.metadata) {
        if (entry.type === Validations.ACKNOWLEDGED_RULES_METADATA_KEY) {
          const path = construct.node.path;
          acknowledged[path] = [...(acknowledged[path] ?? []), ...Object.keys(entry.data)].sort();
        }
      }
    }
    return acknowledged;
  } finally {
    rmSync(outdir, { recursive: true, force: true });
  }
}

const COGNITO = "https://cognito-idp.eu-west-2.amazonaws.com/eu-west-2_AbCdEf123";

describe("modelProvider=bedrock", () => {
  const { template } = synth({
    modelProvider: "bedrock",
    bedrockModelId: "openai.gpt-oss-20b-1:0",
    jwtIssuer: COGNITO,
    jwtAudience: "client-a",
  });
  const resources = (template as unknown as { Resources: Resources }).Resources;
  const text = JSON.stringify(template);

  it("creates, grants and names no secret anywhere", () => {
    expect(Object.values(resources).filter((r) => r.Type === "AWS::SecretsManager::Secret")).toHaveLength(0);
    expect(text).not.toMatch(/secretsmanager|OPENAI_API_KEY_SECRET_NAME|SecretName/i);
  });

  it("gives the three functions that call the model MODEL_PROVIDER and BEDROCK_MODEL_ID, which the function's schema accepts", () => {
    for (const prefix of ["ApiFunction", "StreamFunction", "RunnerFunction"]) {
      const env = envOf(resources, prefix);
      expect(env).toMatchObject({ MODEL_PROVIDER: "bedrock", BEDROCK_MODEL_ID: "openai.gpt-oss-20b-1:0" });
      expect(env).not.toHaveProperty("OPENAI_MODEL");
      expect(env).not.toHaveProperty("BEDROCK_BASE_URL");
      const model = loadConfig({
        MODEL_PROVIDER: String(env.MODEL_PROVIDER),
        BEDROCK_MODEL_ID: String(env.BEDROCK_MODEL_ID),
        AWS_REGION: "eu-west-2",
      }).model;
      expect(model.provider).toBe("bedrock");
      expect(model.bedrock.baseURL).toBe("https://bedrock-runtime.eu-west-2.amazonaws.com/openai/v1");
    }
  });

  it("lets each role invoke the one model in the stack's Region and use short-term keys, nothing else on Bedrock", () => {
    for (const rolePrefix of ["ApiFunctionRole", "StreamFunctionRole", "RunnerRole"]) {
      const bedrock = statementsOf(resources, rolePrefix).filter((s) =>
        [s.Action].flat().some((action) => action.startsWith("bedrock:")),
      );
      expect(bedrock).toEqual([
        {
          Action: "bedrock:InvokeModel",
          Effect: "Allow",
          Resource: {
            "Fn::Join": [
              "",
              [
                "arn:",
                { Ref: "AWS::Partition" },
                ":bedrock:",
                { Ref: "AWS::Region" },
                "::foundation-model/openai.gpt-oss-20b-1:0",
              ],
            ],
          },
        },
        {
          Action: "bedrock:CallWithBearerToken",
          Effect: "Allow",
          Resource: "*",
          Condition: { StringEquals: { "bedrock:bearerTokenType": "SHORT_TERM" } },
        },
      ]);
    }
  });

  it("grants an inference profile and its foundation model, both in the stack's Region", () => {
    const profile = synth({ modelProvider: "bedrock", bedrockModelId: "us.deepseek.r1-v1:0" });
    const invoke = statementsOf(
      (profile.template as unknown as { Resources: Resources }).Resources,
      "ApiFunctionRole",
    ).find((s) => s.Action === "bedrock:InvokeModel");
    expect(JSON.stringify(invoke?.Resource)).toBe(
      JSON.stringify([
        {
          "Fn::Join": [
            "",
            [
              "arn:",
              { Ref: "AWS::Partition" },
              ":bedrock:",
              { Ref: "AWS::Region" },
              ":",
              { Ref: "AWS::AccountId" },
              ":inference-profile/us.deepseek.r1-v1:0",
            ],
          ],
        },
        {
          "Fn::Join": [
            "",
            [
              "arn:",
              { Ref: "AWS::Partition" },
              ":bedrock:",
              { Ref: "AWS::Region" },
              "::foundation-model/deepseek.r1-v1:0",
            ],
          ],
        },
      ]),
    );
  });

  it('passes cdk-nag AwsSolutions; the only new acknowledgment is CallWithBearerToken\'s "*", on the three roles', () => {
    // The zero-to-smoke deploy (personal, the built-in user pool, Bedrock by default) against the same
    // deploy on the OpenAI-compatible provider.
    const bedrock = acknowledgedOf({ personal: "true" });
    const openai = acknowledgedOf({ personal: "true", modelProvider: "openai-compatible" });
    const secretPaths = Object.keys(openai).filter((path) => path.includes("OpenAiApiKey"));
    expect(secretPaths.length).toBeGreaterThan(0);
    const expected: Record<string, string[]> = {};
    for (const [path, ids] of Object.entries(openai)) {
      if (!secretPaths.includes(path)) expected[path] = [...ids];
    }
    for (const role of [
      "Boundloop/ApiFunctionRole",
      "Boundloop/StreamFunctionRole",
      "Boundloop/Runner/Role",
    ]) {
      expected[role] = [...(expected[role] ?? []), "AwsSolutions::AwsSolutions-IAM5[Resource::*]"].sort();
    }
    expect(bedrock).toEqual(expected);
  }, 120_000);

  it("is a personal deploy's default; other deploys keep the OpenAI-compatible default", () => {
    expect(synth({ personal: "true" }).stack.settings).toMatchObject({
      modelProvider: "bedrock",
      bedrockModelId: "openai.gpt-oss-120b-1:0",
    });
    expect(synth({}).stack.settings.modelProvider).toBe("openai-compatible");
    expect(synth({ personal: "true", modelProvider: "openai-compatible" }).stack.settings.modelProvider).toBe(
      "openai-compatible",
    );
  });

  it("validates the model id at synth with the function's own pattern, and refuses OpenAI settings with Bedrock", () => {
    expect(() => synth({ modelProvider: "bedrock", bedrockModelId: "gpt-4o" })).toThrow(
      /bedrockModelId \(BEDROCK_MODEL_ID\): must be a Bedrock model id/,
    );
    expect(() => synth({ modelProvider: "anthropic" })).toThrow(DeploySettingsError);
    expect(() => synth({ personal: "true", openaiApiKeySecretName: "boundloop/openai" })).toThrow(
      /openaiApiKeySecretName: modelProvider is bedrock/,
    );
  });

  it("refuses at synth exactly the combinations the functions refuse at cold start: a setting the provider would ignore", () => {
    // Each deploy setting with the variable it becomes; synth and loadConfig apply one rule
    // (shared/config/model-provider.ts), so each answers the same sentence in its own names.
    const cases = [
      {
        provider: "bedrock",
        context: "openaiBaseUrl",
        env: "OPENAI_BASE_URL",
        value: "https://llm.example.com/v1",
      },
      { provider: "bedrock", context: "openaiModel", env: "OPENAI_MODEL", value: "gpt-4.1-mini" },
      { provider: "bedrock", context: "secretCacheSeconds", env: "SECRET_CACHE_SECONDS", value: "60" },
      {
        provider: "openai-compatible",
        context: "bedrockModelId",
        env: "BEDROCK_MODEL_ID",
        value: "openai.gpt-oss-20b-1:0",
      },
    ] as const;
    for (const { provider, context, env, value } of cases) {
      const other = provider === "bedrock" ? "openai-compatible" : "bedrock";
      expect(() => synth({ modelProvider: provider, [context]: value }), context).toThrow(
        `Invalid deploy settings: ${context}: modelProvider is ${provider}, which does not read it (`,
      );
      expect(() => synth({ modelProvider: provider, [context]: value }), context).toThrow(
        `; unset it, or set modelProvider=${other}.`,
      );
      expect(() => loadConfig({ MODEL_PROVIDER: provider, [env]: value }), env).toThrow(
        `Invalid configuration: ${env}: MODEL_PROVIDER is ${provider}, which does not read it (`,
      );
      // The provider that reads it takes it, at both.
      expect(() => synth({ modelProvider: other, [context]: value }), context).not.toThrow();
      expect(() => loadConfig({ MODEL_PROVIDER: other, [env]: value }), env).not.toThrow();
    }
    // A blank variable is unset at cold start, as a blank -c value is at synth.
    expect(loadConfig({ MODEL_PROVIDER: "bedrock", OPENAI_BASE_URL: " " }).model.provider).toBe("bedrock");
    expect(synth({ modelProvider: "bedrock", openaiBaseUrl: "" }).stack.settings.modelProvider).toBe(
      "bedrock",
    );
  });
});

describe("modelProvider=openai-compatible", () => {
  it("synthesizes exactly the template main produced before Bedrock (asset keys aside)", () => {
    // Generated from main just before the Bedrock merge, with the same contexts and normalisation, then
    // once more when the streaming function landed (the only difference then: its resources, its route
    // and the StreamUrl output), when the console landed (its routes, GET /v1/runs, and the API
    // function's STREAM_MAX_SECONDS and console environment), and when the approvals listings moved to
    // the listing index (the table's index and attribute definitions, and Query on the index for the
    // two functions serving the API), and when /mcp's audience became the stack's own URL (the API
    // function's MCP_RESOURCE_URL, its HTTP API's endpoint + /mcp), and when the console followed runs on
    // the streaming function URL (the API function's CONSOLE_STREAM_URL, the streaming function's
    // CONSOLE_ORIGINS), and when the runner's execution timeout counted the budget wait
    // (QUOTA_WAIT_SECONDS: ExecutionTimeout and DURABLE_EXECUTION_TIMEOUT_SECONDS 87 300 → 173 700, so
    // the runner's version), and when the policies' six routes, GET /v1/usage and PUT /v1/limits came
    // (a route and an integration permission each), and when A2A and AG-UI came (POST /v1/a2a, POST
    // /v1/agui and the public GET /.well-known/agent-card.json: a route and a permission each), and when
    // `npm run tenant` came to read the deployed function's settings (the ApiFunctionName output), and
    // when GET /v1/limits came (a route and a permission), and when the streaming function got the API
    // function's errors and throttles alarms (two resources added), and when HEAD /v1/policies was
    // declared (a route and a permission), and when GET /v1/me came (a route and a permission).
    const main = JSON.parse(
      readFileSync(new URL("./fixtures/openai-compatible-templates.json", import.meta.url), "utf8"),
    ) as Record<string, unknown>;
    expect(synth({ jwtIssuer: COGNITO, jwtAudience: "client-a" }).template).toEqual(main.shared);
    expect(
      synth({
        openaiApiKeySecretName: "boundloop/openai",
        openaiModel: "gpt-4.1-mini",
        openaiBaseUrl: "https://llm.example.com/v1",
      }).template,
    ).toEqual(main.sharedNamedSecret);
  });

  it("given explicitly, is written into both functions' environment like any runtime setting, and grants nothing on Bedrock", () => {
    const { template } = synth({ modelProvider: "openai-compatible", openaiModel: "gpt-4.1-mini" });
    const resources = (template as unknown as { Resources: Resources }).Resources;
    for (const prefix of ["ApiFunction", "RunnerFunction"]) {
      expect(envOf(resources, prefix)).toMatchObject({ MODEL_PROVIDER: "openai-compatible" });
      expect(envOf(resources, prefix)).not.toHaveProperty("BEDROCK_MODEL_ID");
    }
    expect(JSON.stringify(template)).not.toContain("bedrock:");
    expect(() =>
      synth({ modelProvider: "openai-compatible", bedrockModelId: "openai.gpt-oss-20b-1:0" }),
    ).toThrow(/bedrockModelId: modelProvider is openai-compatible/);
  });
});
