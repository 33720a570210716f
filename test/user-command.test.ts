import {
  CognitoIdentityProviderClient,
  InitiateAuthCommand,
} from "@aws-sdk/client-cognito-identity-provider";
import { decodeJwt } from "jose";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { handler as preTokenTrigger } from "../functions/pre-token/handler.js";
import { devAuthSettings } from "../local/dev-auth.js";
import type { ToolResult } from "../shared/agent/result.js";
import { claimsAsStrings } from "../shared/auth/gateway-claims.js";
import { createTokenVerifier } from "../shared/auth/token-verifier.js";
import { BUILT_IN_POOL_IDENTITY, ROLES } from "../shared/user-roles.js";
import { type CognitoStandIn, OWN_ISSUER_STACK, startCognitoStandIn } from "./support/cognito-stand-in.js";
import { runScript } from "./support/scripts.js";
import { seedEvent, startTestStack, type TestStack } from "./support/stack.js";

// `npm run user` as a process, with the real AWS SDK clients pointed at a local stand-in of Cognito and
// CloudFormation (AWS_ENDPOINT_URL); the stand-in runs the real pre token generation trigger, and the
// tokens it signs go through the API Gateway JWT rules (local/dev-auth.ts) and the real handler.

let cognito: CognitoStandIn;
let api: TestStack;
let env: Record<string, string>;

beforeAll(async () => {
  cognito = await startCognitoStandIn({ trigger: preTokenTrigger, groups: ROLES });
  env = {
    AWS_ENDPOINT_URL: cognito.url,
    AWS_REGION: cognito.region,
    AWS_ACCESS_KEY_ID: "AKIDSTANDIN",
    AWS_SECRET_ACCESS_KEY: "stand-in-secret",
    AWS_PROFILE: "",
    AWS_CONFIG_FILE: "/dev/null",
    AWS_SHARED_CREDENTIALS_FILE: "/dev/null",
  };
  api = await startTestStack({ ...BUILT_IN_POOL_IDENTITY });
}, 60_000);

afterAll(async () => {
  await cognito?.stop();
  await api?.stop();
});

const user = (args: string[], extra: Record<string, string> = {}) =>
  runScript("tsx", ["local/user.ts", ...args], { ...env, ...extra });

/** The requests since `from`, as operation → body. */
const since = (from: number) => cognito.requests.slice(from);

/** API Gateway's JWT authorizer rules against the stand-in pool: its issuer, its client as audience. */
const authorizer = () =>
  createTokenVerifier(
    devAuthSettings({ issuer: cognito.issuer, audience: cognito.clientId, publicJwk: cognito.publicJwk }),
  ).gateway;

describe("npm run user against the pool named by the stack's outputs", { timeout: 60_000 }, () => {
  let alicePassword = "";

  it("adds a writer: reads the outputs, creates the user with the tenant and a temporary password, adds the group", async () => {
    const from = cognito.requests.length;
    const result = await user([
      "add",
      "--email",
      "alice@example.com",
      "--tenant",
      "tenant_uk_01",
      "--role",
      "writer",
    ]);
    expect(result.stderr).toBe("");
    expect(result.code).toBe(0);
    expect(result.stdout).toContain(
      "Added alice@example.com: tenant tenant_uk_01, role writer (billing:read, billing:write).",
    );
    alicePassword = /Temporary password \(valid 3 days, shown once\): (\S+)/.exec(result.stdout)?.[1] ?? "";
    expect(alicePassword).toMatch(/^(?=.*[a-z])(?=.*[A-Z])(?=.*\d)(?=.*[^A-Za-z0-9]).{20}$/);
    const [describe, create, group, ...rest] = since(from);
    expect(rest).toEqual([]);
    expect(describe).toMatchObject({
      operation: "cloudformation:DescribeStacks",
      body: { Action: "DescribeStacks", StackName: "Boundloop" },
      signed: true,
    });
    expect(create).toEqual({
      operation: "AdminCreateUser",
      signed: true,
      body: {
        UserPoolId: cognito.poolId,
        Username: "alice@example.com",
        UserAttributes: [
          { Name: "email", Value: "alice@example.com" },
          { Name: "email_verified", Value: "true" },
          { Name: "custom:tenant_id", Value: "tenant_uk_01" },
        ],
        TemporaryPassword: alicePassword,
        MessageAction: "SUPPRESS",
      },
    });
    expect(group).toEqual({
      operation: "AdminAddUserToGroup",
      signed: true,
      body: { UserPoolId: cognito.poolId, Username: "alice@example.com", GroupName: "writer" },
    });
  });

  it("refuses a role, tenant or email it does not know before calling AWS", async () => {
    const from = cognito.requests.length;
    // Three refused command lines, each a process of its own: side by side.
    const [badRole, badTenant, badEmail] = await Promise.all([
      user([
        "add",
        "--email",
        "x@example.com",
        "--tenant",
        "t1",
        "--role",
        "admin",
        "--pool-id",
        cognito.poolId,
      ]),
      user([
        "add",
        "--email",
        "x@example.com",
        "--tenant",
        "a b",
        "--role",
        "reader",
        "--pool-id",
        cognito.poolId,
      ]),
      user(["add", "--email", "nobody", "--tenant", "t1", "--role", "reader", "--pool-id", cognito.poolId]),
    ]);
    expect(badRole.code).toBe(1);
    expect(badRole.stderr).toContain("--role must be one of reader, writer, approver.");
    expect(badTenant.stderr).toContain("--tenant must be 1-64 characters");
    expect(badEmail.stderr).toContain("is not an email address");
    expect(since(from)).toEqual([]);
  });

  it("lists users with tenant and role, optionally for one tenant, with --pool-id instead of the outputs", async () => {
    const [bob, carol] = await Promise.all([
      user(["add", "--email", "bob@example.com", "--tenant", "tenant_uk_01", "--role", "approver"]),
      user(["add", "--email", "carol@example.com", "--tenant", "tenant_bd_01", "--role", "reader"]),
    ]);
    expect(bob.code).toBe(0);
    expect(carol.code).toBe(0);
    const from = cognito.requests.length;
    const all = await user(["list", "--pool-id", cognito.poolId]);
    expect(all.code).toBe(0);
    const rows = all.stdout
      .trim()
      .split("\n")
      .slice(2)
      .map((line) => line.trim().split(/\s+/));
    expect(rows).toEqual([
      ["carol@example.com", "tenant_bd_01", "reader", "FORCE_CHANGE_PASSWORD", "enabled"],
      ["alice@example.com", "tenant_uk_01", "writer", "FORCE_CHANGE_PASSWORD", "enabled"],
      ["bob@example.com", "tenant_uk_01", "approver", "FORCE_CHANGE_PASSWORD", "enabled"],
    ]);
    expect(since(from).map((r) => r.operation)).toEqual([
      "ListUsersInGroup",
      "ListUsersInGroup",
      "ListUsersInGroup",
      "ListUsers",
    ]);
    expect(since(from).every((r) => r.signed && r.body.UserPoolId === cognito.poolId)).toBe(true);
    const uk = await user(["list", "--tenant", "tenant_uk_01"]);
    expect(uk.stdout).toContain("alice@example.com");
    expect(uk.stdout).not.toContain("carol@example.com");
  });

  it("gets a token: the temporary password, then NEW_PASSWORD_REQUIRED answered, prints only the access token", async () => {
    const from = cognito.requests.length;
    const newPassword = "Correct-horse-battery-9";
    const result = await user(["token", "--email", "alice@example.com"], {
      BOUNDLOOP_PASSWORD: alicePassword,
      BOUNDLOOP_NEW_PASSWORD: newPassword,
    });
    expect(result.code).toBe(0);
    expect(result.stderr).toContain("First sign-in of alice@example.com: choose a new password");
    const token = result.stdout.trim();
    expect(token.split(".")).toHaveLength(3);
    const [, initiate, respond] = since(from);
    expect(initiate).toEqual({
      operation: "InitiateAuth",
      signed: false,
      body: {
        AuthFlow: "USER_PASSWORD_AUTH",
        ClientId: cognito.clientId,
        AuthParameters: { USERNAME: "alice@example.com", PASSWORD: alicePassword },
      },
    });
    expect(respond?.operation).toBe("RespondToAuthChallenge");
    expect(respond?.body).toMatchObject({
      ClientId: cognito.clientId,
      ChallengeName: "NEW_PASSWORD_REQUIRED",
      ChallengeResponses: { NEW_PASSWORD: newPassword, USERNAME: expect.stringMatching(/^[0-9a-f-]{36}$/) },
    });

    // API Gateway's rules accept it (client_id, no aud), and the handler runs the seed as alice's tenant.
    const verdict = await authorizer()(`Bearer ${token}`);
    if (!verdict.ok) throw new Error(verdict.description);
    expect(verdict.claims).not.toHaveProperty("aud");
    expect(verdict.claims).toMatchObject({
      client_id: cognito.clientId,
      token_use: "access",
      tenant_id: "tenant_uk_01",
      scope: "aws.cognito.signin.user.admin billing:read billing:write",
    });
    const response = await api.invoke(seedEvent({ claims: claimsAsStrings(verdict.claims) }));
    expect(response.statusCode).toBe(200);
    const run = JSON.parse(response.body ?? "{}") as { status: string; toolResults: ToolResult[] };
    expect(run.status).toBe("completed");
    const record = run.toolResults.find((r) => r.metadata.toolName === "recordInvoice");
    expect(record?.status).toBe("success");
    expect(record?.data).toMatchObject({
      invoice: { tenantId: "tenant_uk_01", createdBy: verdict.claims.sub },
    });

    // Signed in again with the new password: no challenge.
    const again = await user(["token", "--email", "alice@example.com"], { BOUNDLOOP_PASSWORD: newPassword });
    expect(again.code).toBe(0);
    expect(decodeJwt(again.stdout.trim()).sub).toBe(verdict.claims.sub);
  });

  it("a wrong password gets Cognito's error and no token", async () => {
    const result = await user(["token", "--email", "alice@example.com"], {
      BOUNDLOOP_PASSWORD: "Wrong-password-1",
    });
    expect(result.code).toBe(1);
    expect(result.stdout).toBe("");
    expect(result.stderr).toContain("NotAuthorizedException: Incorrect username or password.");
  });

  it("a user without a tenant gets no token at all: the trigger fails the sign-in", async () => {
    cognito.seedUser({ email: "dave@example.com", password: "Dave-password-123", groups: ["writer"] });
    const result = await user(["token", "--email", "dave@example.com"], {
      BOUNDLOOP_PASSWORD: "Dave-password-123",
    });
    expect(result.code).toBe(1);
    expect(result.stdout).toBe("");
    expect(result.stderr).toContain(
      "UserLambdaValidationException: PreTokenGeneration failed with error user ",
    );
    expect(result.stderr).toContain("has no valid custom:tenant_id");
  });

  it("the ID token passes the gateway (aud is the client) but not the handler: only access tokens carry tenant_id", async () => {
    cognito.seedUser({
      email: "erin@example.com",
      password: "Erin-password-123",
      attributes: { "custom:tenant_id": "tenant_uk_01" },
      groups: ["writer"],
    });
    const client = new CognitoIdentityProviderClient({
      endpoint: cognito.url,
      region: cognito.region,
      credentials: { accessKeyId: "AKIDSTANDIN", secretAccessKey: "stand-in-secret" },
    });
    const { AuthenticationResult } = await client.send(
      new InitiateAuthCommand({
        AuthFlow: "USER_PASSWORD_AUTH",
        ClientId: cognito.clientId,
        AuthParameters: { USERNAME: "erin@example.com", PASSWORD: "Erin-password-123" },
      }),
    );
    client.destroy();
    const verdict = await authorizer()(`Bearer ${AuthenticationResult?.IdToken}`);
    if (!verdict.ok) throw new Error(verdict.description);
    expect(verdict.claims).toMatchObject({
      aud: cognito.clientId,
      token_use: "id",
      "custom:tenant_id": "tenant_uk_01",
    });
    const response = await api.invoke(seedEvent({ claims: claimsAsStrings(verdict.claims) }));
    expect(response.statusCode).toBe(401);
    expect(JSON.parse(response.body ?? "{}")).toMatchObject({ code: "UNAUTHENTICATED" });
  });

  it("removes a user", async () => {
    const from = cognito.requests.length;
    const result = await user(["remove", "--email", "carol@example.com", "--pool-id", cognito.poolId]);
    expect(result.code).toBe(0);
    expect(since(from)).toEqual([
      {
        operation: "AdminDeleteUser",
        signed: true,
        body: { UserPoolId: cognito.poolId, Username: "carol@example.com" },
      },
    ]);
    expect((await user(["list", "--pool-id", cognito.poolId])).stdout).not.toContain("carol@example.com");
  });

  it("says so when the stack trusts its own issuer (no UserPoolId output) or does not exist", async () => {
    const [own, result] = await Promise.all([
      user(["list", "--stack-name", OWN_ISSUER_STACK]),
      user(["list", "--stack-name", "Other"]),
    ]);
    expect(own.code).toBe(1);
    expect(own.stderr).toContain(
      `Stack ${OWN_ISSUER_STACK} has no UserPoolId output: it trusts your own issuer`,
    );
    expect(result.code).toBe(1);
    expect(result.stderr).toContain("Stack with id Other does not exist");
  });

  it("says what it needs when the stack cannot be asked (no region): credentials and the stack's region", async () => {
    const result = await user(["list"], { AWS_REGION: "", AWS_DEFAULT_REGION: "" });
    expect(result.code).toBe(1);
    expect(result.stderr).toContain("user: Stack Boundloop could not be read: ");
    expect(result.stderr).toContain(
      "npm run user manages the users of a deployed stack, with your AWS credentials and the stack's region (export AWS_REGION=<region>, or set one in your profile)",
    );
  });
});
