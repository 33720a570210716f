import { App } from "aws-cdk-lib";
import { Template } from "aws-cdk-lib/assertions";
import { describe, expect, it } from "vitest";
import { BoundloopStack } from "../infra/stack.js";
import { loadConfig } from "../shared/config.js";
import { ROLE_PERMISSIONS, USER_POOL_POLICY } from "../shared/user-roles.js";

/**
 * The stack without `jwtIssuer`/`jwtAudience`: its built-in Cognito user pool (infra/user-pool.ts).
 * Bundling skipped as in test/infra.test.ts; test/infra-synth.test.ts synthesizes it with cdk-nag.
 */
type Resource = { Type: string; Properties: Record<string, unknown>; DeletionPolicy?: string };

function synth(context: Record<string, unknown> = {}) {
  const app = new App({ context: { "aws:cdk:bundling-stacks": [], ...context } });
  const stack = new BoundloopStack(app, "Test");
  const json = Template.fromStack(stack).toJSON() as {
    Resources: Record<string, Resource>;
    Outputs: Record<string, { Value: unknown }>;
  };
  const ofType = (type: string) => Object.entries(json.Resources).filter(([, r]) => r.Type === type);
  const one = (type: string) => {
    const found = ofType(type);
    expect(found, type).toHaveLength(1);
    return found[0] as [string, Resource];
  };
  return { stack, json, ofType, one };
}

const { stack, json, ofType, one } = synth();
const [poolId, pool] = one("AWS::Cognito::UserPool");
const [clientId, client] = one("AWS::Cognito::UserPoolClient");
const [triggerId, trigger] = ofType("AWS::Lambda::Function").find(([id]) => id.includes("PreToken")) as [
  string,
  Resource,
];
const apiEnv = (
  (ofType("AWS::Lambda::Function").find(([id]) => id.startsWith("ApiFunction"))?.[1].Properties.Environment ??
    {}) as { Variables: Record<string, unknown> }
).Variables;

describe("the built-in user pool (no jwtIssuer given)", () => {
  it("is admin-only, signs in by email, has a strong password policy, optional TOTP MFA and the Essentials plan", () => {
    expect(stack.settings.builtInUserPool).toBe(true);
    expect(pool.Properties).toMatchObject({
      AdminCreateUserConfig: { AllowAdminCreateUserOnly: true },
      UsernameAttributes: ["email"],
      MfaConfiguration: "OPTIONAL",
      EnabledMfas: ["SOFTWARE_TOKEN_MFA"],
      UserPoolTier: "ESSENTIALS",
      DeletionProtection: "ACTIVE",
      Policies: {
        PasswordPolicy: {
          MinimumLength: USER_POOL_POLICY.minPasswordLength,
          RequireLowercase: true,
          RequireUppercase: true,
          RequireNumbers: true,
          RequireSymbols: true,
          TemporaryPasswordValidityDays: USER_POOL_POLICY.temporaryPasswordDays,
        },
      },
    });
    expect(USER_POOL_POLICY.minPasswordLength).toBeGreaterThanOrEqual(12);
    expect(pool.DeletionPolicy).toBe("Retain");
    expect(pool.Properties.Schema).toContainEqual({
      AttributeDataType: "String",
      Mutable: true,
      Name: "tenant_id",
      StringAttributeConstraints: { MaxLength: "64", MinLength: "1" },
    });
  });

  it("runs the pre token generation trigger with event version V2_0 (access token customization)", () => {
    expect(pool.Properties.LambdaConfig).toEqual({
      PreTokenGenerationConfig: { LambdaArn: { "Fn::GetAtt": [triggerId, "Arn"] }, LambdaVersion: "V2_0" },
    });
    expect(trigger.Properties).toMatchObject({
      Runtime: "nodejs24.x",
      Handler: "index.handler",
      Timeout: 5,
    });
    // Cognito may invoke it; its role may only write its own logs.
    const permission = ofType("AWS::Lambda::Permission").find(
      ([, p]) =>
        JSON.stringify(p.Properties.FunctionName) === JSON.stringify({ "Fn::GetAtt": [triggerId, "Arn"] }),
    )?.[1];
    expect(permission?.Properties).toMatchObject({
      Action: "lambda:InvokeFunction",
      Principal: "cognito-idp.amazonaws.com",
      SourceArn: { "Fn::GetAtt": [poolId, "Arn"] },
    });
    const roleId = (trigger.Properties.Role as { "Fn::GetAtt": [string] })["Fn::GetAtt"][0];
    const statements = ofType("AWS::IAM::Policy")
      .filter(([, p]) => JSON.stringify(p.Properties.Roles) === JSON.stringify([{ Ref: roleId }]))
      .flatMap(
        ([, p]) => (p.Properties.PolicyDocument as { Statement: Array<{ Action: unknown }> }).Statement,
      );
    expect(statements.map((s) => s.Action)).toEqual([["logs:CreateLogStream", "logs:PutLogEvents"]]);
  });

  it("has one group per role", () => {
    const groups = ofType("AWS::Cognito::UserPoolGroup").map(([, g]) => g.Properties);
    expect(groups.map((g) => g.GroupName).sort()).toEqual(Object.keys(ROLE_PERMISSIONS).sort());
    for (const group of groups) expect(group.UserPoolId).toEqual({ Ref: poolId });
  });

  it("has a public PKCE app client that may not write the tenant", () => {
    expect(client.Properties).toMatchObject({
      UserPoolId: { Ref: poolId },
      GenerateSecret: false,
      AllowedOAuthFlows: ["code"],
      AllowedOAuthFlowsUserPoolClient: true,
      CallbackURLs: ["http://localhost:3000/callback"],
      SupportedIdentityProviders: ["COGNITO"],
      PreventUserExistenceErrors: "ENABLED",
      EnableTokenRevocation: true,
      WriteAttributes: ["name"],
    });
    expect((client.Properties.ExplicitAuthFlows as string[]).sort()).toEqual(
      ["ALLOW_REFRESH_TOKEN_AUTH", "ALLOW_USER_PASSWORD_AUTH", "ALLOW_USER_SRP_AUTH"].sort(),
    );
    expect(client.Properties.ReadAttributes).toContain("custom:tenant_id");
    expect(client.Properties.WriteAttributes).not.toContain("custom:tenant_id");
  });

  it("makes the JWT authorizer trust the pool (issuer) and its client (audience)", () => {
    const [, authorizer] = one("AWS::ApiGatewayV2::Authorizer");
    expect(authorizer.Properties.JwtConfiguration).toEqual({
      Issuer: {
        "Fn::Join": [
          "",
          ["https://cognito-idp.", { Ref: "AWS::Region" }, ".amazonaws.com/", { Ref: poolId }],
        ],
      },
      Audience: [{ Ref: clientId }],
    });
  });

  it("tells the function to read the tenant and the permissions only from the claims the trigger writes", () => {
    expect(apiEnv).toMatchObject({ TENANT_CLAIMS: "tenant_id", PERMISSION_CLAIMS: "scope" });
    // The deployed values parse with the schema the function uses at cold start.
    const literal = Object.fromEntries(
      Object.entries(apiEnv).filter(([, value]) => typeof value === "string"),
    );
    const identity = loadConfig(literal as Record<string, string>).identity;
    expect(identity.tenantClaims).toEqual(["tenant_id"]);
    expect(identity.permissionClaims).toEqual(["scope"]);
  });

  it("outputs the pool, the client and the commands to run next", () => {
    expect(json.Outputs.UserPoolId?.Value).toEqual({ Ref: poolId });
    expect(json.Outputs.UserPoolClientId?.Value).toEqual({ Ref: clientId });
    expect(json.Outputs.NextUserCommand?.Value).toMatch(
      /^npm run user -- add --email \S+ --tenant \S+ --role writer$/,
    );
    const smoke = JSON.stringify(json.Outputs.SmokeCommand?.Value);
    expect(smoke).toContain("npm run smoke -- --url https://");
    expect(smoke).toContain(".execute-api.");
  });

  it("personal=true: no deletion protection, the pool and the trigger's logs go with the stack", () => {
    const personal = synth({ personal: "true" });
    const [, personalPool] = personal.one("AWS::Cognito::UserPool");
    expect(personalPool.Properties.DeletionProtection).toBe("INACTIVE");
    expect(personalPool.DeletionPolicy).toBe("Delete");
  });

  it("takes https (or http on localhost) console callback URLs, and rejects others", () => {
    const custom = synth({ consoleCallbackUrls: "https://console.example.com/cb, http://localhost:5173/cb" });
    const [, customClient] = custom.one("AWS::Cognito::UserPoolClient");
    expect(customClient.Properties.CallbackURLs).toEqual([
      "https://console.example.com/cb",
      "http://localhost:5173/cb",
    ]);
    expect(() => synth({ consoleCallbackUrls: "http://console.example.com/cb" })).toThrow(
      /consoleCallbackUrls/,
    );
  });
});
