import { readFileSync } from "node:fs";
import type { PreTokenGenerationV2TriggerEvent } from "aws-lambda";
import { calculateJwkThumbprint, exportJWK, generateKeyPair, type JWTPayload, SignJWT } from "jose";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { handler, NoTenantError } from "../functions/pre-token/handler.js";
import { devAuthSettings } from "../local/dev-auth.js";
import type { ToolResult } from "../shared/agent/result.js";
import { claimsAsStrings } from "../shared/auth/gateway-claims.js";
import { createTokenVerifier } from "../shared/auth/token-verifier.js";
import { loadConfig } from "../shared/config.js";
import { securityContextFromClaims } from "../shared/identity.js";
import { BUILT_IN_POOL_IDENTITY } from "../shared/user-roles.js";
import { seedEvent, startTestStack, type TestStack } from "./support/stack.js";

/**
 * The pre token generation trigger on Cognito's V2_0 event (the shape of the example in
 * https://docs.aws.amazon.com/cognito/latest/developerguide/user-pool-lambda-pre-token-generation.html,
 * with a tenant attribute and a group), and what the handler makes of the access token Cognito builds
 * from its answer.
 */
const docsEvent = JSON.parse(
  readFileSync(new URL("./fixtures/cognito-pre-token-v2-event.json", import.meta.url), "utf8"),
) as PreTokenGenerationV2TriggerEvent;

function event(
  changes: {
    groups?: string[];
    attributes?: Record<string, string | undefined>;
    scopes?: string[];
    source?: string;
  } = {},
): PreTokenGenerationV2TriggerEvent {
  const copy = structuredClone(docsEvent);
  if (changes.groups) copy.request.groupConfiguration.groupsToOverride = changes.groups;
  for (const [name, value] of Object.entries(changes.attributes ?? {})) {
    if (value === undefined) delete copy.request.userAttributes[name];
    else copy.request.userAttributes[name] = value;
  }
  if (changes.scopes) copy.request.scopes = changes.scopes;
  if (changes.source) (copy as { triggerSource: string }).triggerSource = changes.source;
  return copy;
}

/**
 * The access token claims Cognito writes from the trigger's answer (sub, client_id, no aud, the scopes
 * joined by spaces, cognito:groups), as API Gateway's JWT authorizer hands them to the function
 * (every claim a string).
 */
function accessTokenClaims(
  request: PreTokenGenerationV2TriggerEvent,
  answer: PreTokenGenerationV2TriggerEvent,
) {
  const access = answer.response.claimsAndScopeOverrideDetails?.accessTokenGeneration;
  const scopes = new Set(request.request.scopes ?? []);
  for (const scope of access?.scopesToAdd ?? []) scopes.add(scope);
  for (const scope of access?.scopesToSuppress ?? []) scopes.delete(scope);
  return claimsAsStrings({
    ...(access?.claimsToAddOrOverride ?? {}),
    sub: request.request.userAttributes.sub,
    client_id: request.callerContext.clientId,
    token_use: "access",
    scope: [...scopes].join(" "),
    "cognito:groups": request.request.groupConfiguration.groupsToOverride,
  } as JWTPayload);
}

const identity = loadConfig({ ...BUILT_IN_POOL_IDENTITY }).identity;

describe("the pre token generation trigger (V2_0)", () => {
  it("adds exactly the tenant claim and the writer's scopes to the access token, and leaves the ID token alone", async () => {
    const answer = await handler(event());
    expect(answer.response).toEqual({
      claimsAndScopeOverrideDetails: {
        accessTokenGeneration: {
          claimsToAddOrOverride: { tenant_id: "tenant_uk_01" },
          scopesToAdd: ["billing:read", "billing:write"],
        },
      },
    });
    expect(securityContextFromClaims(accessTokenClaims(event(), answer), identity)).toEqual({
      userId: "a1b2c3d4-5678-90ab-cdef-EXAMPLE11111",
      tenantId: "tenant_uk_01",
      permissions: ["aws.cognito.signin.user.admin", "billing:read", "billing:write"],
    });
  });

  it("gives each role its permissions, several roles their union, other groups nothing", async () => {
    const scopesOf = async (groups: string[]) =>
      (await handler(event({ groups }))).response.claimsAndScopeOverrideDetails?.accessTokenGeneration
        ?.scopesToAdd;
    expect(await scopesOf(["reader"])).toEqual(["billing:read"]);
    expect(await scopesOf(["approver"])).toEqual(["billing:approve", "billing:read"]);
    expect(await scopesOf(["writer", "approver"])).toEqual([
      "billing:approve",
      "billing:read",
      "billing:write",
    ]);
    expect(await scopesOf(["admins", "billing:write"])).toEqual([]);
    expect(await scopesOf([])).toEqual([]);
  });

  it("suppresses billing: scopes a request asked for (hosted sign-in) that the user's roles do not give", async () => {
    const request = event({
      groups: ["reader"],
      source: "TokenGeneration_HostedAuth",
      scopes: ["openid", "email", "billing:write", "billing:approve", "billing:read"],
    });
    const answer = await handler(structuredClone(request));
    expect(answer.response.claimsAndScopeOverrideDetails?.accessTokenGeneration).toEqual({
      claimsToAddOrOverride: { tenant_id: "tenant_uk_01" },
      scopesToAdd: ["billing:read"],
      scopesToSuppress: ["billing:write", "billing:approve"],
    });
    const { permissions } = securityContextFromClaims(accessTokenClaims(request, answer), identity);
    expect([...permissions].sort()).toEqual(["billing:read", "email", "openid"]);
  });

  it("shapes the tokens of every sign-in path: refresh, new password, device", async () => {
    for (const source of [
      "TokenGeneration_RefreshTokens",
      "TokenGeneration_NewPasswordChallenge",
      "TokenGeneration_AuthenticateDevice",
    ]) {
      const answer = await handler(event({ source }));
      expect(
        answer.response.claimsAndScopeOverrideDetails?.accessTokenGeneration?.claimsToAddOrOverride,
      ).toEqual({
        tenant_id: "tenant_uk_01",
      });
    }
  });

  it("fails the sign-in of a user without a valid tenant, so no token exists for them", async () => {
    await expect(handler(event({ attributes: { "custom:tenant_id": undefined } }))).rejects.toThrow(
      NoTenantError,
    );
    await expect(handler(event({ attributes: { "custom:tenant_id": "" } }))).rejects.toThrow(
      /has no valid custom:tenant_id/,
    );
    await expect(handler(event({ attributes: { "custom:tenant_id": "tenant uk" } }))).rejects.toThrow(
      NoTenantError,
    );
    // What a token without the trigger's claim would get from the handler: 401.
    const untouched = claimsAsStrings({
      sub: "usr_1",
      client_id: "1example23456789",
      scope: "billing:write",
    });
    expect(() =>
      securityContextFromClaims({ ...untouched, "custom:tenant_id": "tenant_uk_01" }, identity),
    ).toThrow(/no tenant claim \(looked for tenant_id\)/);
  });
});

describe("a Cognito-style access token end to end through the handler", { timeout: 60_000 }, () => {
  let stack: TestStack;
  let sign: (claims: JWTPayload) => Promise<string>;
  let verify: ReturnType<typeof createTokenVerifier>["gateway"];
  const issuer = "https://cognito-idp.eu-west-2.amazonaws.com/eu-west-2_AbCdEf123";
  const clientId = "3n4b5urk1ft4fl3mg5e62d9ado";

  beforeAll(async () => {
    stack = await startTestStack({ ...BUILT_IN_POOL_IDENTITY });
    const { privateKey, publicKey } = await generateKeyPair("RS256");
    const publicJwk = await exportJWK(publicKey);
    const kid = await calculateJwkThumbprint(publicJwk);
    sign = (claims) =>
      new SignJWT(claims)
        .setProtectedHeader({ alg: "RS256", kid })
        .setIssuer(issuer)
        .setIssuedAt()
        .setExpirationTime("1h")
        .sign(privateKey);
    verify = createTokenVerifier(
      devAuthSettings({ issuer, audience: clientId, publicJwk: { ...publicJwk, kid, alg: "RS256" } }),
    ).gateway;
  }, 60_000);
  afterAll(async () => {
    await stack?.stop();
  });

  /** Signs, verifies as API Gateway would, and runs the seed with the verified claims. */
  async function runSeed(claims: JWTPayload) {
    const verdict = await verify(`Bearer ${await sign(claims)}`);
    if (!verdict.ok) throw new Error(verdict.description);
    const response = await stack.invoke(seedEvent({ claims: claimsAsStrings(verdict.claims) }));
    return {
      status: response.statusCode,
      body: JSON.parse(response.body ?? "{}") as Record<string, unknown>,
    };
  }

  const cognitoAccessToken = {
    sub: "5f1e7c3a-0b2d-4c1e-9f6a-2d3b4c5e6f70",
    "cognito:groups": ["writer"],
    client_id: clientId,
    origin_jti: "0b6f0e53-8f0c-4a6e-9f33-3c1f0d6b5e21",
    event_id: "3c1f0d6b-5e21-4a6e-9f33-0b6f0e538f0c",
    token_use: "access",
    scope: "aws.cognito.signin.user.admin billing:read billing:write",
    auth_time: Math.floor(Date.now() / 1000),
    jti: "9f33-3c1f",
    username: "5f1e7c3a-0b2d-4c1e-9f6a-2d3b4c5e6f70",
    tenant_id: "tenant_uk_01",
  };

  it("records the seed invoice for the token's tenant and user (RS256, kid, client_id instead of aud)", async () => {
    const { status, body } = await runSeed(cognitoAccessToken);
    expect(status).toBe(200);
    expect(body.status).toBe("completed");
    const record = (body.toolResults as ToolResult[]).find((r) => r.metadata.toolName === "recordInvoice");
    expect(record?.status).toBe("success");
    expect(record?.data).toMatchObject({
      invoice: { tenantId: "tenant_uk_01", createdBy: cognitoAccessToken.sub },
    });
  });

  it("does not take permissions from cognito:groups: a writer's group without the scopes cannot record", async () => {
    const { status, body } = await runSeed({ ...cognitoAccessToken, scope: "aws.cognito.signin.user.admin" });
    expect(status).toBe(200);
    const record = (body.toolResults as ToolResult[]).find((r) => r.metadata.toolName === "recordInvoice");
    expect(record?.status).toBe("permission_denied");
  });

  it("rejects a token whose client_id is not the pool's client, and one without the tenant claim", async () => {
    expect(
      await verify(`Bearer ${await sign({ ...cognitoAccessToken, client_id: "other-client" })}`),
    ).toMatchObject({
      ok: false,
    });
    const { tenant_id: _tenant, ...withoutTenant } = cognitoAccessToken;
    const { status, body } = await runSeed({ ...withoutTenant, "custom:tenant_id": "tenant_uk_01" });
    expect(status).toBe(401);
    expect(body.code).toBe("UNAUTHENTICATED");
  });
});
