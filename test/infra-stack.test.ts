import { Annotations, Match } from "aws-cdk-lib/assertions";
import { describe, expect, it } from "vitest";
import { RUNNER } from "../infra/durable-runner.js";
import { DeploySettingsError } from "../infra/settings.js";
import { API_THROTTLE } from "../infra/stack.js";
import { FUNCTION_TIMEOUT_SECONDS } from "../shared/config.js";
import {
  COGNITO_ISSUER,
  envOf,
  named,
  type Resource,
  sharedDeployment,
  statementsOf,
  synth,
} from "./support/infra.js";

/** Template assertions on the stack: the durable runner, the routes' authorizer, logs, alarms, outputs, deploy settings. */

// Built once per file: a deployment for a shared account with a real (Cognito) issuer and two audiences.
const { stack, template, resources, ofType } = sharedDeployment();

describe("the CDK stack: the durable runner, the routes' authorizer, logs, alarms and outputs", () => {
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
    // With the built-in pool the console signs in with the pool's app client: another client id given
    // would be ignored without a word, so the synth refuses it.
    expect(() => synth({ consoleClientId: "console-client" })).toThrow(
      /consoleClientId: the built-in user pool decides/,
    );
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
        "HEAD /v1/policies",
        "PUT /v1/policies",
        "POST /v1/policies/check",
        "GET /v1/policies/versions",
        "GET /v1/policies/shadow-decisions",
        "GET /v1/policies/schema",
        "GET /v1/usage",
        "GET /v1/limits",
        "PUT /v1/limits",
        "GET /v1/me",
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

  it("alarms on both functions serving the API (errors, throttles; the API function's p99 duration near its timeout), and API 5xx", () => {
    const alarms = ofType("AWS::CloudWatch::Alarm")
      .map((alarm) => alarm.Properties)
      .filter((alarm) => alarm.MetricName !== undefined);
    // Each alarm by metric and, for a function's, the construct its FunctionName dimension refers to.
    const functionOf = (alarm: Record<string, unknown>) => {
      const dimensions = (alarm.Dimensions ?? []) as Array<{ Name: string; Value: { Ref?: string } }>;
      const ref = dimensions.find((dimension) => dimension.Name === "FunctionName")?.Value.Ref ?? "";
      return ["ApiFunction", "StreamFunction"].find((prefix) => ref.startsWith(prefix)) ?? ref;
    };
    const byKey = Object.fromEntries(
      alarms.map((alarm) => [
        `${alarm.Namespace}/${alarm.MetricName}${alarm.Namespace === "AWS/Lambda" ? ` ${functionOf(alarm)}` : ""}`,
        alarm,
      ]),
    );
    expect(Object.keys(byKey).sort()).toEqual(
      [
        "AWS/ApiGateway/5xx",
        "AWS/Lambda/Duration ApiFunction",
        "AWS/Lambda/Errors ApiFunction",
        "AWS/Lambda/Throttles ApiFunction",
        "AWS/Lambda/Errors StreamFunction",
        "AWS/Lambda/Throttles StreamFunction",
      ].sort(),
    );
    for (const fn of ["ApiFunction", "StreamFunction"]) {
      expect(byKey[`AWS/Lambda/Errors ${fn}`]).toMatchObject({ Statistic: "Sum", Threshold: 1, Period: 300 });
      expect(byKey[`AWS/Lambda/Throttles ${fn}`]).toMatchObject({
        Statistic: "Sum",
        Threshold: 1,
        Period: 300,
      });
    }
    expect(byKey["AWS/Lambda/Errors StreamFunction"]?.AlarmDescription).toBe(
      "The streaming function threw or timed out at least once in 5 minutes.",
    );
    expect(byKey["AWS/ApiGateway/5xx"]).toMatchObject({ Statistic: "Sum", Threshold: 1 });
    const duration = byKey["AWS/Lambda/Duration ApiFunction"];
    expect(duration?.ExtendedStatistic).toBe("p99");
    const thresholdMs = duration?.Threshold as number;
    expect(thresholdMs).toBeGreaterThanOrEqual(FUNCTION_TIMEOUT_SECONDS * 1000 * 0.8);
    expect(thresholdMs).toBeLessThan(FUNCTION_TIMEOUT_SECONDS * 1000);
    for (const alarm of alarms) {
      expect(alarm.ComparisonOperator).toBe("GreaterThanOrEqualToThreshold");
      expect(alarm.TreatMissingData).toBe("notBreaching");
      expect(alarm.EvaluationPeriods).toBe(1);
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
