import { Match } from "aws-cdk-lib/assertions";
import { describe, expect, it } from "vitest";
import { API_INTEGRATION_TIMEOUT_SECONDS, FUNCTION_MEMORY_MB } from "../infra/stack.js";
import { CONFIG_DEFAULTS, ConfigSchema, FUNCTION_TIMEOUT_SECONDS } from "../shared/config.js";
import { LIST_INDEX } from "../shared/store/table.js";
import {
  apiFunction,
  envOf,
  functionLogGroupId,
  named,
  sharedDeployment,
  statementsOf,
} from "./support/infra.js";

/**
 * Template assertions on the stack: its resources, the table, the functions, their settings and grants.
 * Bundling is skipped here (`aws:cdk:bundling-stacks: []`) to keep the file fast;
 * test/infra-synth.test.ts synthesizes the real app with the bundle and cdk-nag.
 */

// Built once per file: a deployment for a shared account with a real (Cognito) issuer and two audiences.
const { stack, template, resources, ofType } = sharedDeployment();

describe("the CDK stack", () => {
  it("has exactly the expected resources", () => {
    const counts: Record<string, number> = {};
    for (const resource of Object.values(resources)) counts[resource.Type] = (counts[resource.Type] ?? 0) + 1;
    expect(counts).toEqual({
      "AWS::DynamoDB::GlobalTable": 1,
      "AWS::SecretsManager::Secret": 1,
      "AWS::Logs::LogGroup": 4,
      "AWS::IAM::Role": 3,
      "AWS::IAM::Policy": 3,
      "AWS::Lambda::Function": 3,
      "AWS::Lambda::Version": 1,
      "AWS::Lambda::Alias": 1,
      "AWS::Lambda::Permission": 33,
      "AWS::Lambda::Url": 1,
      "AWS::ApiGatewayV2::Api": 1,
      "AWS::ApiGatewayV2::Integration": 1,
      "AWS::ApiGatewayV2::Authorizer": 1,
      "AWS::ApiGatewayV2::Route": 31,
      "AWS::ApiGatewayV2::Stage": 1,
      "AWS::CloudWatch::Alarm": 7,
    });
  });

  it("has the table with pk/sk, the listing index, TTL, PITR, on-demand billing, retained outside personal accounts", () => {
    template.hasResource("AWS::DynamoDB::GlobalTable", {
      DeletionPolicy: "Retain",
      UpdateReplacePolicy: "Retain",
      Properties: Match.objectLike({
        KeySchema: [
          { AttributeName: "pk", KeyType: "HASH" },
          { AttributeName: "sk", KeyType: "RANGE" },
        ],
        AttributeDefinitions: [
          { AttributeName: "pk", AttributeType: "S" },
          { AttributeName: "sk", AttributeType: "S" },
          { AttributeName: "listPk", AttributeType: "S" },
          { AttributeName: "listSk", AttributeType: "S" },
        ],
        // The one index, declared from LIST_INDEX as ensureTable declares the local one.
        GlobalSecondaryIndexes: [
          {
            IndexName: LIST_INDEX.name,
            KeySchema: [
              { AttributeName: LIST_INDEX.partitionKey, KeyType: "HASH" },
              { AttributeName: LIST_INDEX.sortKey, KeyType: "RANGE" },
            ],
            Projection: { ProjectionType: "ALL" },
          },
        ],
        BillingMode: "PAY_PER_REQUEST",
        TimeToLiveSpecification: { AttributeName: "ttl", Enabled: true },
        Replicas: [
          Match.objectLike({
            PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true },
            DeletionProtectionEnabled: true,
          }),
        ],
      }),
    });
    expect(stack.settings.personal).toBe(false);
  });

  it("deploys the handler on Node 24, ARM64, under the API's integration timeout, with its own log group", () => {
    const fn = apiFunction(resources);
    expect(fn.Properties.Runtime).toBe("nodejs24.x");
    expect(fn.Properties.Architectures).toEqual(["arm64"]);
    expect(fn.Properties.Handler).toBe("index.handler");
    expect(fn.Properties.MemorySize).toBe(FUNCTION_MEMORY_MB);
    expect(fn.Properties.Timeout).toBe(FUNCTION_TIMEOUT_SECONDS);
    expect(FUNCTION_TIMEOUT_SECONDS).toBeLessThan(API_INTEGRATION_TIMEOUT_SECONDS);
    expect(fn.Properties.LoggingConfig).toEqual({ LogGroup: { Ref: expect.any(String) } });
    expect(resources[functionLogGroupId(resources)]?.Properties.RetentionInDays).toBe(30);
    // No deprecated logRetention custom resource.
    expect(ofType("Custom::LogRetention")).toHaveLength(0);
  });

  it("gives the function only config-module names, the secret's name and never the key", () => {
    const env = envOf(resources);
    const allowed = new Set([
      ...Object.keys(ConfigSchema.shape),
      "POWERTOOLS_SERVICE_NAME",
      "POWERTOOLS_METRICS_NAMESPACE",
      "NODE_OPTIONS",
    ]);
    for (const name of Object.keys(env)) expect(allowed, name).toContain(name);
    expect(Object.keys(env).sort()).toEqual(
      [
        "CONSOLE_STREAM_URL",
        "DURABLE_EXECUTION_TIMEOUT_SECONDS",
        "JWT_ISSUER",
        "MCP_RESOURCE_URL",
        "RUNNER_FUNCTION_ARN",
        "NODE_OPTIONS",
        "OPENAI_API_KEY_SECRET_NAME",
        "POWERTOOLS_METRICS_NAMESPACE",
        "POWERTOOLS_SERVICE_NAME",
        "STREAM_MAX_SECONDS",
        "TABLE_NAME",
      ].sort(),
    );
    expect(env.NODE_OPTIONS).toBe("--enable-source-maps");
    // Behind the buffering HTTP API, event streams are short and resumed (the console's timeline).
    expect(env.STREAM_MAX_SECONDS).toBe("2");
    // No consoleClientId with this issuer: the console takes a pasted token, no sign-in settings.
    expect(env).not.toHaveProperty("CONSOLE_CLIENT_ID");
    // Logs and metrics go where the code's own defaults send them: one service name, one namespace.
    expect([env.POWERTOOLS_SERVICE_NAME, env.POWERTOOLS_METRICS_NAMESPACE]).toEqual([
      "boundloop",
      "boundloop",
    ]);
    expect(env.POWERTOOLS_METRICS_NAMESPACE).toBe(CONFIG_DEFAULTS.observability.metricsNamespace);
    expect(env.TABLE_NAME).toEqual({ Ref: expect.any(String) });
    expect(env).not.toHaveProperty("OPENAI_API_KEY");
    // The secret is created empty: neither a literal value nor a generated one.
    const [secret] = ofType("AWS::SecretsManager::Secret");
    expect(secret?.Properties).not.toHaveProperty("SecretString");
    expect(secret?.Properties).not.toHaveProperty("GenerateSecretString");
    expect(secret?.DeletionPolicy).toBe("Retain");
  });

  it("grants only the table's item actions, Query on its listing index, GetSecretValue on the one secret, the runner's start/stop and PutEvents on the default bus", () => {
    const role = named(resources, "AWS::IAM::Role", "ApiFunctionRole");
    expect(role?.Properties.ManagedPolicyArns).toBeUndefined();
    expect(role?.Properties.Policies).toBeUndefined();
    const statements = statementsOf(resources, "ApiFunctionRole");
    const runnerId = Object.keys(resources).find(
      (id) => id.startsWith("RunnerFunction") && resources[id]?.Type === "AWS::Lambda::Function",
    );
    const aliasId = Object.keys(resources).find((id) => resources[id]?.Type === "AWS::Lambda::Alias");
    const tableId = Object.keys(resources).find((id) => resources[id]?.Type === "AWS::DynamoDB::GlobalTable");
    const secretId = Object.keys(resources).find(
      (id) => resources[id]?.Type === "AWS::SecretsManager::Secret",
    );
    const logsId = functionLogGroupId(resources);
    expect(statements).toEqual([
      {
        Effect: "Allow",
        Action: ["logs:CreateLogStream", "logs:PutLogEvents"],
        Resource: { "Fn::GetAtt": [logsId, "Arn"] },
      },
      {
        Effect: "Allow",
        Action: [
          "dynamodb:GetItem",
          "dynamodb:PutItem",
          "dynamodb:UpdateItem",
          "dynamodb:DeleteItem",
          "dynamodb:Query",
        ],
        Resource: { "Fn::GetAtt": [tableId, "Arn"] },
      },
      // The approvals listings: Query on the one index, by name.
      {
        Effect: "Allow",
        Action: "dynamodb:Query",
        Resource: { "Fn::Join": ["", [{ "Fn::GetAtt": [tableId, "Arn"] }, "/index/byList"]] },
      },
      { Effect: "Allow", Action: "secretsmanager:GetSecretValue", Resource: { Ref: secretId } },
      // Durable runs: invoke only the runner's alias; list, stop and read only its executions.
      { Effect: "Allow", Action: "lambda:InvokeFunction", Resource: { Ref: aliasId } },
      {
        Effect: "Allow",
        Action: "lambda:ListDurableExecutionsByFunction",
        Resource: { "Fn::GetAtt": [runnerId, "Arn"] },
      },
      {
        Effect: "Allow",
        // Approval callbacks: only to the runner's own executions.
        Action: [
          "lambda:StopDurableExecution",
          "lambda:GetDurableExecution",
          "lambda:SendDurableExecutionCallbackSuccess",
        ],
        Resource: { "Fn::Join": ["", [{ "Fn::GetAtt": [runnerId, "Arn"] }, ":*/durable-execution/*"]] },
      },
      // An MCP call that needs approval is announced on the default bus, as the runner does for the loop.
      {
        Effect: "Allow",
        Action: "events:PutEvents",
        Resource: {
          "Fn::Join": [
            "",
            [
              "arn:",
              { Ref: "AWS::Partition" },
              ":events:",
              { Ref: "AWS::Region" },
              ":",
              { Ref: "AWS::AccountId" },
              ":event-bus/default",
            ],
          ],
        },
      },
    ]);
    for (const statement of statements) {
      for (const action of [statement.Action].flat()) expect(action).not.toContain("*");
      // The only wildcard: the runner's execution ARNs, made at run time.
      if (JSON.stringify(statement.Resource).includes("durable-execution")) continue;
      expect(JSON.stringify(statement.Resource)).not.toContain("*");
    }
  });
});
