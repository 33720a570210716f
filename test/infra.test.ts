import { App } from "aws-cdk-lib";
import { Annotations, Match, Template } from "aws-cdk-lib/assertions";
import { describe, expect, it } from "vitest";
import { createApp } from "../functions/api/app.js";
import { RUNNER } from "../infra/durable-runner.js";
import { isPublicRoute, PUBLIC_ROUTES, ROUTES } from "../infra/routes.js";
import {
  DeploySettingsError,
  RUN_TIMEOUT_CAPPED_WARNING_ID,
  RUNTIME_SETTINGS,
  TRACING_ADOT_WARNING_ID,
} from "../infra/settings.js";
import {
  API_INTEGRATION_TIMEOUT_SECONDS,
  API_THROTTLE,
  BoundloopStack,
  type BoundloopStackProps,
  FUNCTION_MEMORY_MB,
} from "../infra/stack.js";
import { CONFIG_DEFAULTS, ConfigSchema, FUNCTION_TIMEOUT_SECONDS, loadConfig } from "../shared/config.js";
import { LIST_INDEX } from "../shared/store/table.js";

/**
 * Template assertions on the stack. Bundling is skipped here (`aws:cdk:bundling-stacks: []`) to keep
 * the file fast; test/infra-synth.test.ts synthesizes the real app with the bundle and cdk-nag.
 */
function synth(context: Record<string, unknown> = {}, props: BoundloopStackProps = {}) {
  const app = new App({ context: { "aws:cdk:bundling-stacks": [], ...context } });
  const stack = new BoundloopStack(app, "Test", props);
  return { stack, template: Template.fromStack(stack) };
}

type Resource = { Type: string; Properties: Record<string, unknown>; DeletionPolicy?: string };

const COGNITO_ISSUER = "https://cognito-idp.eu-west-2.amazonaws.com/eu-west-2_AbCdEf123";

// Built once: a deployment for a shared account with a real (Cognito) issuer and two audiences.
const { stack, template } = synth({ jwtIssuer: COGNITO_ISSUER, jwtAudience: "client-a, client-b" });
const resources = template.toJSON().Resources as Record<string, Resource>;
const ofType = (type: string) => Object.values(resources).filter((resource) => resource.Type === type);

/** The one resource of a type whose logical id starts with `prefix` (ApiFunction…, Runner…). */
function named(all: Record<string, Resource>, type: string, prefix: string): Resource {
  const found = Object.entries(all).filter(
    ([id, resource]) => resource.Type === type && id.startsWith(prefix),
  );
  expect(found, `${type} ${prefix}`).toHaveLength(1);
  return (found[0] as [string, Resource])[1];
}

/** The API function (the durable runner is the stack's other function). */
const apiFunction = (all: Record<string, Resource>) => named(all, "AWS::Lambda::Function", "ApiFunction");

/** The API function's environment variables. */
const envOf = (all: Record<string, Resource>) =>
  (apiFunction(all).Properties.Environment as { Variables: Record<string, unknown> }).Variables;

/** The logical id of the API function's log group. */
const functionLogGroupId = (all: Record<string, Resource>) =>
  (apiFunction(all).Properties.LoggingConfig as { LogGroup: { Ref: string } }).LogGroup.Ref;

/** The statements of the policy attached to the role whose logical id starts with `rolePrefix`. */
const statementsOf = (all: Record<string, Resource>, rolePrefix: string) =>
  Object.entries(all)
    .filter(([id, resource]) => resource.Type === "AWS::IAM::Policy" && id.startsWith(rolePrefix))
    .flatMap(
      ([, policy]) =>
        (policy.Properties.PolicyDocument as { Statement: Array<Record<string, unknown>> }).Statement,
    );

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
      "AWS::Lambda::Permission": 30,
      "AWS::Lambda::Url": 1,
      "AWS::ApiGatewayV2::Api": 1,
      "AWS::ApiGatewayV2::Integration": 1,
      "AWS::ApiGatewayV2::Authorizer": 1,
      "AWS::ApiGatewayV2::Route": 28,
      "AWS::ApiGatewayV2::Stage": 1,
      "AWS::CloudWatch::Alarm": 5,
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

  it("deploys the durable runner with durableConfig, a published version and the alias the API invokes", () => {
    const runner = named(resources, "AWS::Lambda::Function", "RunnerFunction");
    expect(runner.Properties).toMatchObject({
      Runtime: "nodejs24.x",
      Architectures: ["arm64"],
      Handler: "index.handler",
      Timeout: RUNNER.invocationTimeoutSeconds,
      DurableConfig: {
        ExecutionTimeout: RUNNER.executionTimeoutSeconds,
        RetentionPeriodInDays: RUNNER.retentionDays,
      },
    });
    const runnerEnv = (runner.Properties.Environment as { Variables: Record<string, unknown> }).Variables;
    expect(runnerEnv.DURABLE_EXECUTION_TIMEOUT_SECONDS).toBe(String(RUNNER.executionTimeoutSeconds));
    expect(runnerEnv).not.toHaveProperty("RUNNER_FUNCTION_ARN");
    // The API caps ASYNC_RUN_TIMEOUT_MS by the same execution timeout.
    expect(envOf(resources).DURABLE_EXECUTION_TIMEOUT_SECONDS).toBe(String(RUNNER.executionTimeoutSeconds));
    const runnerId = Object.keys(resources).find((id) => resources[id] === runner);
    const [version] = ofType("AWS::Lambda::Version");
    expect(version?.Properties.FunctionName).toEqual({ Ref: runnerId });
    const [alias] = ofType("AWS::Lambda::Alias");
    expect(alias?.Properties).toMatchObject({ Name: RUNNER.aliasName, FunctionName: { Ref: runnerId } });
    const versionId = Object.keys(resources).find((id) => resources[id] === version);
    expect(alias?.Properties.FunctionVersion).toEqual({ "Fn::GetAtt": [versionId, "Version"] });
    const aliasId = Object.keys(resources).find((id) => resources[id] === alias);
    expect(envOf(resources).RUNNER_FUNCTION_ARN).toEqual({ Ref: aliasId });
  });

  it("gives the runner the durable-execution role policy, the table's item actions, the secret and PutEvents on the default bus only", () => {
    const role = named(resources, "AWS::IAM::Role", "RunnerRole");
    expect(JSON.stringify(role.Properties.ManagedPolicyArns)).toContain(
      ":iam::aws:policy/service-role/AWSLambdaBasicDurableExecutionRolePolicy",
    );
    const actions = statementsOf(resources, "RunnerRole").flatMap((statement) => [statement.Action].flat());
    expect(actions.sort()).toEqual(
      [
        "logs:CreateLogStream",
        "logs:PutLogEvents",
        "dynamodb:GetItem",
        "dynamodb:PutItem",
        "dynamodb:UpdateItem",
        "dynamodb:DeleteItem",
        "dynamodb:Query",
        "secretsmanager:GetSecretValue",
        "events:PutEvents",
      ].sort(),
    );
    // Approval events go to the account's default bus, and to no other.
    const putEvents = statementsOf(resources, "RunnerRole").find((s) => s.Action === "events:PutEvents");
    expect(JSON.stringify(putEvents?.Resource)).toMatch(/:events:.*:event-bus\/default"/);
    expect(JSON.stringify(putEvents?.Resource)).not.toContain("*");
    // Nothing but the API function may invoke the runner: no resource policy (Lambda::Permission) on it.
    const runnerId = Object.keys(resources).find((id) => id.startsWith("RunnerFunction"));
    for (const permission of ofType("AWS::Lambda::Permission")) {
      expect(JSON.stringify(permission.Properties.FunctionName)).not.toContain(String(runnerId));
    }
  });

  it("alarms when a durable execution fails or times out", () => {
    const alarm = ofType("AWS::CloudWatch::Alarm").find((a) => a.Properties.Metrics !== undefined);
    const metrics = alarm?.Properties.Metrics as Array<{
      Expression?: string;
      MetricStat?: { Metric: { MetricName: string; Namespace: string } };
    }>;
    expect(metrics.find((m) => m.Expression)?.Expression).toBe("FILL(failed, 0) + FILL(timedOut, 0)");
    expect(metrics.flatMap((m) => (m.MetricStat ? [m.MetricStat.Metric.MetricName] : [])).sort()).toEqual([
      "DurableExecutionFailed",
      "DurableExecutionTimedOut",
    ]);
    expect(alarm?.Properties).toMatchObject({
      Threshold: 1,
      ComparisonOperator: "GreaterThanOrEqualToThreshold",
      TreatMissingData: "notBreaching",
    });
  });

  it("gives the console its sign-in: consoleClientId with your issuer, the built-in pool's app client without one", () => {
    const own = synth({
      jwtIssuer: COGNITO_ISSUER,
      jwtAudience: "client-a",
      consoleClientId: "console-client",
    });
    const ownEnv = envOf(own.template.toJSON().Resources as Record<string, Resource>);
    expect([ownEnv.JWT_ISSUER, ownEnv.CONSOLE_CLIENT_ID]).toEqual([COGNITO_ISSUER, "console-client"]);
    const pooled = synth();
    const all = pooled.template.toJSON().Resources as Record<string, Resource>;
    const clientId = Object.entries(all).find(([, r]) => r.Type === "AWS::Cognito::UserPoolClient")?.[0];
    expect(envOf(all).CONSOLE_CLIENT_ID).toEqual({ Ref: clientId });
    expect(envOf(all).JWT_ISSUER).toBeDefined();
    expect(() =>
      synth({ jwtIssuer: COGNITO_ISSUER, jwtAudience: "a", consoleClientId: "has space" }),
    ).toThrow(/consoleClientId must be an OAuth client id/);
  });

  it("puts the JWT authorizer on every route except /healthz, /openapi.json, /mcp and its metadata, the A2A Agent Card, and the console's", () => {
    template.hasResourceProperties("AWS::ApiGatewayV2::Authorizer", {
      AuthorizerType: "JWT",
      IdentitySource: ["$request.header.Authorization"],
      JwtConfiguration: { Issuer: COGNITO_ISSUER, Audience: ["client-a", "client-b"] },
    });
    const authorizerId = Object.keys(resources).find(
      (id) => resources[id]?.Type === "AWS::ApiGatewayV2::Authorizer",
    );
    const routes: Record<string, Record<string, unknown>> = Object.fromEntries(
      ofType("AWS::ApiGatewayV2::Route").map((route) => [route.Properties.RouteKey, route.Properties]),
    );
    expect(Object.keys(routes).sort()).toEqual(
      [
        "POST /v1/runs",
        "GET /v1/runs",
        "GET /v1/runs/{runId}",
        "GET /v1/runs/{runId}/events",
        "POST /v1/runs/{runId}/cancel",
        "POST /v1/runs/{runId}/approvals/{approvalId}",
        "GET /v1/approvals",
        "GET /v1/invoices",
        "GET /v1/invoices/{invoiceId}",
        "POST /v1/a2a",
        "POST /v1/agui",
        "GET /.well-known/agent-card.json",
        "GET /healthz",
        "GET /openapi.json",
        "POST /mcp",
        "GET /mcp",
        "GET /.well-known/oauth-protected-resource",
        "GET /.well-known/oauth-protected-resource/mcp",
        "GET /console",
        "GET /console/assets/{file}",
        "GET /v1/policies",
        "PUT /v1/policies",
        "POST /v1/policies/check",
        "GET /v1/policies/versions",
        "GET /v1/policies/shadow-decisions",
        "GET /v1/policies/schema",
        "GET /v1/usage",
        "PUT /v1/limits",
      ].sort(),
    );
    // /mcp verifies its bearer token in the function (it must answer 401 with resource_metadata).
    const ungated = new Set([
      "GET /.well-known/agent-card.json",
      "GET /healthz",
      "GET /openapi.json",
      "POST /mcp",
      "GET /mcp",
      "GET /.well-known/oauth-protected-resource",
      "GET /.well-known/oauth-protected-resource/mcp",
      "GET /console",
      "GET /console/assets/{file}",
    ]);
    expect(envOf(resources).JWT_ISSUER).toBe(COGNITO_ISSUER);
    for (const [key, route] of Object.entries(routes)) {
      if (ungated.has(key)) {
        expect(route.AuthorizationType, key).toBe("NONE");
        expect(route.AuthorizerId, key).toBeUndefined();
      } else {
        expect(route.AuthorizationType, key).toBe("JWT");
        expect(route.AuthorizerId, key).toEqual({ Ref: authorizerId });
      }
    }
  });

  it("logs API access to a log group with retention and throttles the default stage", () => {
    const [stage] = ofType("AWS::ApiGatewayV2::Stage");
    expect(stage?.Properties.StageName).toBe("$default");
    expect(stage?.Properties.AutoDeploy).toBe(true);
    expect(stage?.Properties.DefaultRouteSettings).toEqual({
      ThrottlingRateLimit: API_THROTTLE.rateLimit,
      ThrottlingBurstLimit: API_THROTTLE.burstLimit,
    });
    const access = stage?.Properties.AccessLogSettings as {
      DestinationArn: { "Fn::GetAtt": [string] };
      Format: string;
    };
    const logGroup = resources[access.DestinationArn["Fn::GetAtt"][0]];
    expect(logGroup?.Type).toBe("AWS::Logs::LogGroup");
    expect(logGroup?.Properties.RetentionInDays).toBe(30);
    expect(JSON.parse(access.Format)).toMatchObject({
      requestId: "$context.requestId",
      status: "$context.status",
    });
  });

  it("alarms on function errors, throttles, p99 duration near the timeout, and API 5xx", () => {
    const alarms = ofType("AWS::CloudWatch::Alarm")
      .map((alarm) => alarm.Properties)
      .filter((alarm) => alarm.MetricName !== undefined);
    const byMetric = Object.fromEntries(
      alarms.map((alarm) => [`${alarm.Namespace}/${alarm.MetricName}`, alarm]),
    );
    expect(Object.keys(byMetric).sort()).toEqual(
      ["AWS/ApiGateway/5xx", "AWS/Lambda/Duration", "AWS/Lambda/Errors", "AWS/Lambda/Throttles"].sort(),
    );
    expect(byMetric["AWS/Lambda/Errors"]).toMatchObject({ Statistic: "Sum", Threshold: 1, Period: 300 });
    expect(byMetric["AWS/Lambda/Throttles"]).toMatchObject({ Statistic: "Sum", Threshold: 1 });
    expect(byMetric["AWS/ApiGateway/5xx"]).toMatchObject({ Statistic: "Sum", Threshold: 1 });
    const duration = byMetric["AWS/Lambda/Duration"];
    expect(duration?.ExtendedStatistic).toBe("p99");
    const thresholdMs = duration?.Threshold as number;
    expect(thresholdMs).toBeGreaterThanOrEqual(FUNCTION_TIMEOUT_SECONDS * 1000 * 0.8);
    expect(thresholdMs).toBeLessThan(FUNCTION_TIMEOUT_SECONDS * 1000);
    for (const alarm of alarms) {
      expect(alarm.ComparisonOperator).toBe("GreaterThanOrEqualToThreshold");
      expect(alarm.TreatMissingData).toBe("notBreaching");
    }
  });

  it("outputs the API URL, the table name, the API function's name and the secret name", () => {
    const outputs = template.toJSON().Outputs as Record<string, { Value: unknown }>;
    expect(Object.keys(outputs).sort()).toEqual([
      "ApiFunctionName",
      "ApiUrl",
      "JwtIssuer",
      "SecretName",
      "StreamUrl",
      "TableName",
    ]);
    expect(JSON.stringify(outputs.ApiUrl?.Value)).toContain(".execute-api.");
    expect(outputs.TableName?.Value).toEqual({ Ref: expect.any(String) });
    const [apiFunctionId] = Object.entries(resources).find(
      ([id, resource]) => resource.Type === "AWS::Lambda::Function" && id.startsWith("ApiFunction"),
    ) ?? [""];
    expect(outputs.ApiFunctionName?.Value).toEqual({ Ref: apiFunctionId });
    expect(outputs.JwtIssuer?.Value).toBe(COGNITO_ISSUER);
    const env = envOf(resources);
    expect(outputs.SecretName?.Value).toEqual(env.OPENAI_API_KEY_SECRET_NAME);
  });

  it("raises no warning when issuer and audience are given", () => {
    Annotations.fromStack(stack).hasNoWarning("*", Match.anyValue());
  });
});

describe("the stack's deploy settings", () => {
  it("rejects an issuer without an audience and an audience without an issuer, naming both keys", () => {
    expect(() => synth({ jwtIssuer: COGNITO_ISSUER })).toThrow(/jwtIssuer and jwtAudience go together/);
    expect(() => synth({ jwtAudience: "client-a" })).toThrow(DeploySettingsError);
  });

  it("creates no user pool, no trigger and no pool outputs when an issuer is given", () => {
    expect(Object.values(resources).filter((r) => r.Type.startsWith("AWS::Cognito::"))).toEqual([]);
    // The API function, the durable runner and the streaming function only.
    expect(ofType("AWS::Lambda::Function")).toHaveLength(3);
    const env = envOf(resources);
    expect(env).not.toHaveProperty("TENANT_CLAIMS");
    expect(env).not.toHaveProperty("PERMISSION_CLAIMS");
  });

  it("personal=true destroys table, secret and log groups with the stack, and references a named secret", () => {
    // A personal deploy uses Bedrock unless told otherwise (test/infra-bedrock.test.ts).
    const personal = synth(
      {
        personal: "true",
        modelProvider: "openai-compatible",
        openaiModel: "gpt-4.1-mini",
        openaiBaseUrl: "https://llm.example.com/v1",
      },
      {
        settings: {
          jwtIssuer: "https://auth.example.com/",
          jwtAudience: ["api"],
          openaiApiKeySecretName: "boundloop/openai",
        },
      },
    );
    const all = personal.template.toJSON().Resources as Record<string, Resource>;
    const stateful = Object.values(all).filter((r) =>
      ["AWS::DynamoDB::GlobalTable", "AWS::Logs::LogGroup"].includes(r.Type),
    );
    // The table and the log groups of the API, the streaming function, its access logs and the durable runner.
    expect(stateful).toHaveLength(5);
    for (const resource of stateful) expect(resource.DeletionPolicy).toBe("Delete");
    personal.template.hasResourceProperties("AWS::DynamoDB::GlobalTable", {
      Replicas: [Match.objectLike({ DeletionProtectionEnabled: false })],
    });
    // An existing secret is referenced, not created; the grant names it (with its 6-character suffix).
    personal.template.resourceCountIs("AWS::SecretsManager::Secret", 0);
    const env = envOf(all);
    expect(env).toMatchObject({
      OPENAI_API_KEY_SECRET_NAME: "boundloop/openai",
      OPENAI_MODEL: "gpt-4.1-mini",
      OPENAI_BASE_URL: "https://llm.example.com/v1",
    });
    const secretStatement = Object.values(all)
      .filter((r) => r.Type === "AWS::IAM::Policy")
      .flatMap(
        (p) => (p.Properties.PolicyDocument as { Statement: Array<Record<string, unknown>> }).Statement,
      )
      .find((s) => s.Action === "secretsmanager:GetSecretValue");
    expect(JSON.stringify(secretStatement?.Resource)).toContain(":secret:boundloop/openai-??????");
    personal.template.hasResourceProperties("AWS::ApiGatewayV2::Authorizer", {
      JwtConfiguration: { Issuer: "https://auth.example.com/", Audience: ["api"] },
    });
  });

  it("rejects a non-https issuer and a malformed personal flag at synth, naming the key", () => {
    expect(() => synth({ jwtIssuer: "http://insecure.example.com" })).toThrow(DeploySettingsError);
    expect(() => synth({ jwtIssuer: "http://insecure.example.com" })).toThrow(/jwtIssuer/);
    expect(() => synth({ personal: "yes" })).toThrow(/personal/);
  });
});

/** The durable runner's environment variables. */
const runnerEnvOf = (all: Record<string, Resource>) =>
  (
    named(all, "AWS::Lambda::Function", "RunnerFunction").Properties.Environment as {
      Variables: Record<string, unknown>;
    }
  ).Variables;

/** The plain-string variables of a function's environment (the stack's tokens, table and ARNs, left out). */
const plainEnv = (env: Record<string, unknown>) =>
  Object.fromEntries(
    Object.entries(env).filter((entry): entry is [string, string] => typeof entry[1] === "string"),
  );

/** The environments of the functions that run the app (every function with the table's name). */
function appFunctionsEnv(context: Record<string, unknown>): Array<Record<string, unknown>> {
  const all = synth({ jwtIssuer: COGNITO_ISSUER, jwtAudience: "a", ...context }).template.toJSON()
    .Resources as Record<string, Resource>;
  return Object.values(all)
    .filter((resource) => resource.Type === "AWS::Lambda::Function")
    .map(
      (fn) => (fn.Properties.Environment as { Variables?: Record<string, unknown> } | undefined)?.Variables,
    )
    .filter((env): env is Record<string, unknown> => env?.TABLE_NAME !== undefined);
}

describe("the stack's runtime settings (CDK context → the functions' environment)", () => {
  const APPROVALS = '{"recordInvoice":{"GBP":"1000.00"}}';

  it("turns approvals on for both functions; the runner's execution timeout follows the configured timeouts", () => {
    const { template: approvals } = synth({
      jwtIssuer: COGNITO_ISSUER,
      jwtAudience: "client-a",
      approvalRules: APPROVALS,
      approvalTimeoutSeconds: "172800",
      asyncRunTimeoutMs: "1800000",
      maxCycles: "3",
      modelMaxTokens: "2048",
    });
    const all = approvals.toJSON().Resources as Record<string, Resource>;
    const api = envOf(all);
    const runner = runnerEnvOf(all);
    // 1800 s of run + 300 s margin + one approval wait of 172 800 s + the default budget wait (86 400 s).
    const executionTimeout = 1800 + 300 + 172_800 + 86_400;
    expect(plainEnv(api)).toEqual({
      APPROVAL_RULES: APPROVALS,
      APPROVAL_TIMEOUT_SECONDS: "172800",
      ASYNC_RUN_TIMEOUT_MS: "1800000",
      MAX_CYCLES: "3",
      MODEL_MAX_TOKENS: "2048",
      DURABLE_EXECUTION_TIMEOUT_SECONDS: String(executionTimeout),
      // /mcp verifies tokens itself, against the issuer the HTTP API's authorizer trusts.
      JWT_ISSUER: COGNITO_ISSUER,
      NODE_OPTIONS: "--enable-source-maps",
      POWERTOOLS_METRICS_NAMESPACE: "boundloop",
      POWERTOOLS_SERVICE_NAME: "boundloop",
      // Short event streams through the buffering HTTP API (the console follows runs with them).
      STREAM_MAX_SECONDS: "2",
    });
    // The runner reads the approval rules, their timeout and the model's limit; a durable run's limits
    // come in its input from the API, so the runner gets no MAX_CYCLES.
    expect(plainEnv(runner)).toEqual({
      APPROVAL_RULES: APPROVALS,
      APPROVAL_TIMEOUT_SECONDS: "172800",
      MODEL_MAX_TOKENS: "2048",
      DURABLE_EXECUTION_TIMEOUT_SECONDS: String(executionTimeout),
      NODE_OPTIONS: "--enable-source-maps",
      POWERTOOLS_METRICS_NAMESPACE: "boundloop",
      POWERTOOLS_SERVICE_NAME: "boundloop",
    });
    expect(named(all, "AWS::Lambda::Function", "RunnerFunction").Properties.DurableConfig).toMatchObject({
      ExecutionTimeout: executionTimeout,
    });
    // What the functions make of it at cold start: approvals on, the whole 30-minute durable run allowed.
    const config = loadConfig(plainEnv(api));
    expect(config.approvals).toEqual({
      rules: { recordInvoice: { GBP: "1000.00" } },
      timeoutSeconds: 172_800,
    });
    expect(config.durable.runTimeoutMs).toBe(1_800_000);
    expect(loadConfig(plainEnv(runner)).approvals.timeoutSeconds).toBe(172_800);
  });

  it("takes cdk.json's typed values (objects, numbers, booleans, lists) and props", () => {
    const { template: typed } = synth(
      {
        approvalRules: { recordInvoice: { BDT: "50000" } },
        maxCycles: 4,
        idempotencyKeyRequired: true,
        tenantClaims: ["custom:tenant", "tenant_id"],
        jwtIssuer: "https://issuer.example.com",
        jwtAudience: "boundloop-api",
      },
      { settings: { logLevel: "debug", openaiModel: "gpt-4.1-mini" } },
    );
    const env = plainEnv(envOf(typed.toJSON().Resources as Record<string, Resource>));
    expect(env).toMatchObject({
      APPROVAL_RULES: '{"recordInvoice":{"BDT":"50000"}}',
      MAX_CYCLES: "4",
      IDEMPOTENCY_KEY_REQUIRED: "true",
      TENANT_CLAIMS: "custom:tenant,tenant_id",
      POWERTOOLS_LOG_LEVEL: "debug",
      OPENAI_MODEL: "gpt-4.1-mini",
    });
    expect(loadConfig(env).identity.tenantClaims).toEqual(["custom:tenant", "tenant_id"]);
  });

  it("refuses claim settings with the built-in pool, whose trigger decides the claims", () => {
    expect(() => synth({ tenantClaims: "custom:tenant" })).toThrow(/tenantClaims.*built-in user pool/);
    expect(() => synth({ permissionClaims: "groups" })).toThrow(/permissionClaims.*built-in user pool/);
    expect(() => synth({ permissionListClaims: "groups" })).toThrow(
      /permissionListClaims.*built-in user pool/,
    );
  });

  it("gives /mcp the stack's own URL as its audience, or mcpResourceUrl; never a request's Host", () => {
    // Default: the HTTP API's endpoint + /mcp, resolved by CloudFormation.
    expect(envOf(resources).MCP_RESOURCE_URL).toEqual({
      "Fn::Join": ["", [{ "Fn::GetAtt": [expect.stringMatching(/^HttpApi/), "ApiEndpoint"] }, "/mcp"]],
    });
    const custom = synth({
      jwtIssuer: COGNITO_ISSUER,
      jwtAudience: "client-a",
      mcpResourceUrl: "https://api.example.com/mcp",
      jwtAlgorithms: "RS256,ES256",
      permissionListClaims: "groups",
    });
    const env = envOf(custom.template.toJSON().Resources as Record<string, Resource>);
    expect(env).toMatchObject({
      MCP_RESOURCE_URL: "https://api.example.com/mcp",
      JWT_ALGORITHMS: "RS256,ES256",
      PERMISSION_LIST_CLAIMS: "groups",
    });
    expect(loadConfig(plainEnv(env)).auth).toMatchObject({
      mcpResourceUrl: "https://api.example.com/mcp",
      algorithms: ["RS256", "ES256"],
    });
    // Validated at synth by the schema the function parses at cold start.
    const own = { jwtIssuer: COGNITO_ISSUER, jwtAudience: "client-a" };
    expect(() => synth({ ...own, mcpResourceUrl: "https://api.example.com/mcp#frag" })).toThrow(
      /mcpResourceUrl \(MCP_RESOURCE_URL\)/,
    );
    expect(() => synth({ ...own, jwtAlgorithms: "HS256" })).toThrow(/jwtAlgorithms \(JWT_ALGORITHMS\)/);
    expect(() => synth({ ...own, permissionListClaims: "scope" })).toThrow(
      /permissionListClaims \(PERMISSION_LIST_CLAIMS\): .*RFC 6749/,
    );
  });

  it("refuses at synth what the functions would refuse at cold start, naming the context key and the variable", () => {
    expect(() => synth({ approvalRules: '{"recordInvoice":{"GBP":"a lot"}}' })).toThrow(
      /approvalRules \(APPROVAL_RULES\): .*decimal strings/,
    );
    expect(() => synth({ approvalRules: "{not json" })).toThrow(
      /approvalRules \(APPROVAL_RULES\): must be a JSON object/,
    );
    expect(() => synth({ approvalTimeoutSeconds: "0" })).toThrow(
      /approvalTimeoutSeconds \(APPROVAL_TIMEOUT_SECONDS\)/,
    );
    expect(() => synth({ maxCycles: "51" })).toThrow(/maxCycles \(MAX_CYCLES\)/);
    expect(() => synth({ modelMaxTokens: "many" })).toThrow(DeploySettingsError);
    expect(() => synth({ logLevel: "loud" })).toThrow(/logLevel \(POWERTOOLS_LOG_LEVEL\)/);
    expect(() => synth({ openaiBaseUrl: "not a url" })).toThrow(/openaiBaseUrl \(OPENAI_BASE_URL\)/);
    // The quotas' limits and price table, by the same schemas (shared/config/quotas.ts).
    expect(() => synth({ tenantTokensPerDay: "-1" })).toThrow(/tenantTokensPerDay \(TENANT_TOKENS_PER_DAY\)/);
    expect(() => synth({ userCostPerDay: "1,50" })).toThrow(/userCostPerDay \(USER_COST_PER_DAY\)/);
    expect(() => synth({ modelPrices: '{"m":{"inputPerMillion":"cheap"}}' })).toThrow(
      /modelPrices \(MODEL_PRICES\)/,
    );
    expect(() => synth({ tenantCostPerDay: "5.00" })).toThrow(
      /TENANT_COST_PER_DAY need a price for the model/,
    );
  });

  it("warns at synth when runTimeoutMs is more than the API function's timeout allows", () => {
    const capped = synth({ jwtIssuer: COGNITO_ISSUER, jwtAudience: "a", runTimeoutMs: "120000" });
    const warnings = Annotations.fromStack(capped.stack).findWarning(
      "*",
      Match.stringLikeRegexp("runTimeoutMs"),
    );
    expect(warnings).toHaveLength(1);
    expect(JSON.stringify(warnings[0]?.entry)).toContain(RUN_TIMEOUT_CAPPED_WARNING_ID);
    expect(JSON.stringify(warnings[0]?.entry)).toContain("respond-async");
    const fits = synth({ jwtIssuer: COGNITO_ISSUER, jwtAudience: "a", runTimeoutMs: "20000" });
    Annotations.fromStack(fits.stack).hasNoWarning("*", Match.anyValue());
  });

  it("off by default: no function gets a tracing variable", () => {
    const envs = appFunctionsEnv({});
    expect(envs).toHaveLength(3);
    for (const env of envs) {
      expect(env.TRACING).toBeUndefined();
      expect(env.OTEL_EXPORTER_OTLP_ENDPOINT).toBeUndefined();
    }
  });

  it("tracing=adot warns at synth that the stack attaches no ADOT layer; otlp does not warn", () => {
    const adot = synth({ jwtIssuer: COGNITO_ISSUER, jwtAudience: "a", tracing: "adot" });
    const warnings = Annotations.fromStack(adot.stack).findWarning("*", Match.stringLikeRegexp("ADOT"));
    expect(warnings).toHaveLength(1);
    expect(JSON.stringify(warnings[0]?.entry)).toContain(TRACING_ADOT_WARNING_ID);
    expect(JSON.stringify(warnings[0]?.entry)).toContain("AWS_LAMBDA_EXEC_WRAPPER");
    const otlp = synth({ jwtIssuer: COGNITO_ISSUER, jwtAudience: "a", tracing: "otlp" });
    Annotations.fromStack(otlp.stack).hasNoWarning("*", Match.anyValue());
  });

  it("tracing, otlpEndpoint and traceContent reach every function that runs the app; a value TRACING refuses fails the synth", () => {
    const envs = appFunctionsEnv({ tracing: "otlp", otlpEndpoint: "https://collector.example.com:4318" });
    // The API, the durable runner and the streaming function.
    expect(envs).toHaveLength(3);
    for (const env of envs) {
      expect(env).toMatchObject({
        TRACING: "otlp",
        OTEL_EXPORTER_OTLP_ENDPOINT: "https://collector.example.com:4318",
      });
      expect(env.TRACE_CONTENT).toBeUndefined();
    }
    for (const env of appFunctionsEnv({ tracing: "otlp", traceContent: true })) {
      expect(env).toMatchObject({ TRACING: "otlp", TRACE_CONTENT: "true" });
    }
    expect(() => synth({ tracing: "xray" })).toThrow(/tracing \(TRACING\)/);
    expect(() => synth({ tracing: "otlp", otlpEndpoint: "not a url" })).toThrow(
      /otlpEndpoint \(OTEL_EXPORTER_OTLP_ENDPOINT\)/,
    );
  });

  it("has one context key per setting, each a variable of the config schema that the stack does not own", () => {
    const contexts = RUNTIME_SETTINGS.map((setting) => setting.context);
    expect(new Set(contexts).size).toBe(contexts.length);
    for (const setting of RUNTIME_SETTINGS) {
      expect(Object.keys(ConfigSchema.shape), setting.env).toContain(setting.env);
      expect(setting.functions, setting.context).toContain("api");
    }
    expect(RUNTIME_SETTINGS.map((setting) => setting.env)).not.toContain("TABLE_NAME");
    expect(RUNTIME_SETTINGS.map((setting) => setting.env)).not.toContain("DURABLE_EXECUTION_TIMEOUT_SECONDS");
  });
});

describe("the routes of the stack, the app and the local dev server", () => {
  it("are the same set, and exactly the routes the app documents as public skip the JWT authorizer everywhere", async () => {
    // The app serves its own OpenAPI document without building any client.
    const app = createApp({
      config: loadConfig({}),
      load: () => {
        throw new Error("no dependencies are needed to serve /openapi.json");
      },
    });
    const document = (await (await app.request("/openapi.json")).json()) as {
      paths: Record<string, Record<string, { security?: unknown[] }>>;
    };
    const byRoute = (a: { route: string }, b: { route: string }) => a.route.localeCompare(b.route);
    // "public" here: no gateway authorizer. /mcp's `mcp` scheme is verified by the function itself.
    const documented = Object.entries(document.paths).flatMap(([path, operations]) =>
      Object.entries(operations).map(([method, operation]) => ({
        route: `${method.toUpperCase()} ${path}`,
        public: (operation.security ?? []).every((scheme) => Object.keys(scheme as object).join() === "mcp"),
      })),
    );
    // The document describes the API; it is not one of its own operations. Nor are the console's page
    // and its assets (functions/api/console.ts), which a browser fetches without a token.
    documented.push(
      { route: "GET /openapi.json", public: true },
      { route: "GET /console", public: true },
      { route: "GET /console/assets/{file}", public: true },
    );

    // The stack as synthesized: each route's key and whether it has an authorizer.
    const deployed = ofType("AWS::ApiGatewayV2::Route").map((route) => ({
      route: String(route.Properties.RouteKey),
      public: route.Properties.AuthorizationType === "NONE",
    }));
    const declared = ROUTES.map((route) => ({
      route: `${route.method} ${route.path}`,
      public: route.auth !== "jwt",
    }));
    // The dev server (npm run dev) asks for a token on every route but these.
    const local = documented.map(({ route }) => ({ route, public: PUBLIC_ROUTES.has(route) }));

    expect(documented.sort(byRoute).length).toBeGreaterThan(PUBLIC_ROUTES.size);
    expect(deployed.sort(byRoute)).toEqual(documented);
    expect(declared.sort(byRoute)).toEqual(documented);
    expect(local.sort(byRoute)).toEqual(documented);
    expect([...PUBLIC_ROUTES].sort()).toEqual(
      [
        "GET /.well-known/agent-card.json",
        "GET /console",
        "GET /console/assets/{file}",
        "GET /healthz",
        "GET /openapi.json",
        "POST /mcp",
        "GET /mcp",
        "GET /.well-known/oauth-protected-resource",
        "GET /.well-known/oauth-protected-resource/mcp",
      ].sort(),
    );
    expect(isPublicRoute("GET", "/console/assets/app-ABCDEFGH.js")).toBe(true);
    expect(isPublicRoute("GET", "/console/assets/a/b.js")).toBe(false);
    expect(isPublicRoute("POST", "/console")).toBe(false);
  });
});
