import { describe, expect, it } from "vitest";
import { toProblem } from "../functions/api/problem-details.js";
import { claimsAsStrings } from "../shared/auth/gateway-claims.js";
import { loadConfig } from "../shared/config.js";
import { DomainError } from "../shared/domain-errors.js";
import {
  type IdentityConfig,
  principalKeys,
  securityContextFromClaims,
  securityContextFromEvent,
} from "../shared/identity.js";
import { apiEvent } from "./fixtures/events.js";

const defaults = loadConfig({}).identity;

/** Runs `fn`, expecting an UNAUTHENTICATED refusal that the HTTP edge answers 401; returns its detail. */
function unauthenticated(fn: () => unknown): string {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(DomainError);
    expect((error as DomainError).code).toBe("UNAUTHENTICATED");
    expect(toProblem(error).status).toBe(401);
    expect(toProblem(error).code).toBe("UNAUTHENTICATED");
    return (error as DomainError).message;
  }
  throw new Error("expected UNAUTHENTICATED");
}

describe("identity from the three authorizer shapes", () => {
  it("HTTP API v2 JWT claims: sub, tenant_id, scope", () => {
    expect(securityContextFromEvent(apiEvent("http-api-v2"), defaults)).toEqual({
      userId: "usr_9918",
      tenantId: "tenant_uk_01",
      permissions: ["billing:read", "billing:write"],
    });
  });

  it("REST v1 Cognito claims: custom:tenant_id and comma separated cognito:groups", () => {
    expect(securityContextFromEvent(apiEvent("rest-v1"), defaults)).toEqual({
      userId: "7d2e6c1a-1f4b-4b8e-9a51-0c3f5e2d9b77",
      tenantId: "tenant_uk_02",
      permissions: ["billing:write", "billing:read"],
    });
  });

  it("function URL IAM: tenant and permissions from IAM_PRINCIPAL_TENANTS, by assumed-role ARN", () => {
    const config = loadConfig({
      IAM_PRINCIPAL_TENANTS: JSON.stringify({
        "arn:aws:sts::111122223333:assumed-role/billing-batch": {
          tenantId: "tenant_batch",
          permissions: ["billing:write"],
        },
      }),
    }).identity;
    expect(securityContextFromEvent(apiEvent("function-url"), config)).toEqual({
      userId: "AROAEXAMPLEROLEID1234:billing-batch",
      tenantId: "tenant_batch",
      permissions: ["billing:write"],
    });
    // An IAM user ARN maps as it is.
    const userArn = "arn:aws:iam::111122223333:user/ops";
    const users = loadConfig({
      IAM_PRINCIPAL_TENANTS: JSON.stringify({ [userArn]: { tenantId: "tenant_ops" } }),
    }).identity;
    const event = apiEvent("function-url", {
      iam: { userArn, userId: "AIDAEXAMPLEUSER", callerId: "AIDAEXAMPLEUSER" },
    });
    expect(securityContextFromEvent(event, users)).toEqual({
      userId: "AIDAEXAMPLEUSER",
      tenantId: "tenant_ops",
      permissions: [],
    });
  });

  it("an IAM principal missing from the mapping is 401, naming the principal", () => {
    const detail = unauthenticated(() => securityContextFromEvent(apiEvent("function-url"), defaults));
    expect(detail).toContain("arn:aws:sts::111122223333:assumed-role/billing-batch/billing-batch");
    expect(detail).toContain("IAM_PRINCIPAL_TENANTS");
  });

  it("principal keys: an assumed-role ARN also matches without its session name", () => {
    expect(principalKeys("arn:aws:sts::111122223333:assumed-role/r/s")).toEqual([
      "arn:aws:sts::111122223333:assumed-role/r/s",
      "arn:aws:sts::111122223333:assumed-role/r",
    ]);
    expect(principalKeys("arn:aws:iam::111122223333:user/u")).toEqual(["arn:aws:iam::111122223333:user/u"]);
  });
});

describe("claims", () => {
  const claims = (extra: Record<string, unknown>) =>
    apiEvent("http-api-v2", { claims: { sub: "usr_1", tenant_id: "t1", ...extra } });

  it('permission claims arrive as arrays or as API Gateway\'s "[a b]" strings, and are merged', () => {
    expect(
      securityContextFromEvent(claims({ permissions: ["billing:read", "billing:write"] }), defaults)
        .permissions,
    ).toEqual(["billing:read", "billing:write"]);
    expect(
      securityContextFromEvent(claims({ permissions: "[billing:read billing:write]" }), defaults).permissions,
    ).toEqual(["billing:read", "billing:write"]);
    expect(
      securityContextFromEvent(claims({ "cognito:groups": "[admins billing:read]" }), defaults).permissions,
    ).toEqual(["admins", "billing:read"]);
    expect(
      securityContextFromEvent(
        claims({
          scope: "openid billing:read",
          permissions: ["billing:write"],
          "cognito:groups": ["billing:read"],
        }),
        defaults,
      ).permissions,
    ).toEqual(["openid", "billing:read", "billing:write"]);
    expect(securityContextFromEvent(claims({}), defaults).permissions).toEqual([]);
  });

  it('a list claim as an authorizer renders it: HTTP API "[a b]", REST API "a,b"; a real array as it is', () => {
    const permissionsOf = (shape: "http-api-v2" | "rest-v1", groups: unknown) =>
      securityContextFromEvent(
        apiEvent(shape, { claims: { sub: "usr_1", tenant_id: "t1", "cognito:groups": groups } }),
        defaults,
      ).permissions;
    expect(permissionsOf("http-api-v2", "[a b]")).toEqual(["a", "b"]);
    expect(permissionsOf("http-api-v2", "[]")).toEqual([]);
    expect(permissionsOf("http-api-v2", "a")).toEqual(["a"]);
    expect(permissionsOf("rest-v1", "a,b")).toEqual(["a", "b"]);
    expect(permissionsOf("rest-v1", "a")).toEqual(["a"]);
    for (const shape of ["http-api-v2", "rest-v1"] as const) {
      expect(permissionsOf(shape, ["a", "a", " b "])).toEqual(["a", "b"]);
    }
  });

  it("the tenant claim falls back to custom:tenant_id, and its name is configurable", () => {
    const event = apiEvent("http-api-v2", { claims: { sub: "usr_1", "custom:tenant_id": "t_custom" } });
    expect(securityContextFromEvent(event, defaults).tenantId).toBe("t_custom");
    const orgConfig: IdentityConfig = loadConfig({ TENANT_CLAIMS: "org_id" }).identity;
    const orgEvent = apiEvent("http-api-v2", {
      claims: { sub: "usr_1", org_id: "acme", tenant_id: "ignored" },
    });
    expect(securityContextFromEvent(orgEvent, orgConfig).tenantId).toBe("acme");
    expect(loadConfig({ PERMISSION_CLAIMS: "roles" }).identity.permissionClaims).toEqual(["roles"]);
  });

  it("a missing sub or tenant, or a malformed tenant, is 401", () => {
    expect(unauthenticated(() => securityContextFromEvent(claims({ sub: "" }), defaults))).toContain("sub");
    const noTenant = apiEvent("http-api-v2", { claims: { sub: "usr_1", scope: "billing:read" } });
    expect(unauthenticated(() => securityContextFromEvent(noTenant, defaults))).toContain(
      "tenant_id, custom:tenant_id",
    );
    expect(
      unauthenticated(() => securityContextFromEvent(claims({ tenant_id: "TENANT#other" }), defaults)),
    ).toContain("malformed");
    expect(unauthenticated(() => securityContextFromEvent(claims({ scope: 42 }), defaults))).toContain(
      "scope",
    );
  });

  it('a sub or tenant claim whose value is JSON null is 401 like an empty one, never the id "null"', () => {
    // The authorizer renders every claim as text: a JSON null arrives as "null" (claimsAsStrings does
    // what API Gateway does), in the HTTP API and the REST API shapes alike.
    for (const shape of ["http-api-v2", "rest-v1"] as const) {
      const nullSub = apiEvent(shape, {
        claims: claimsAsStrings({ sub: null, tenant_id: "tenant_uk_01" } as never),
      });
      expect(unauthenticated(() => securityContextFromEvent(nullSub, defaults))).toContain("sub");
      const nullTenant = apiEvent(shape, { claims: claimsAsStrings({ sub: "usr_1", tenant_id: null }) });
      expect(unauthenticated(() => securityContextFromEvent(nullTenant, defaults))).toContain(
        "no tenant claim",
      );
    }
    const raw = apiEvent("http-api-v2", { claims: { sub: null, tenant_id: null } as never });
    expect(unauthenticated(() => securityContextFromEvent(raw, defaults))).toContain("sub");
    // A null first tenant claim falls through to the next one, as an empty one does.
    const fallback = apiEvent("http-api-v2", {
      claims: { sub: "usr_1", tenant_id: "null", "custom:tenant_id": "t_custom" },
    });
    expect(securityContextFromEvent(fallback, defaults)).toMatchObject({
      userId: "usr_1",
      tenantId: "t_custom",
    });
  });

  it("no authorizer at all is 401; headers and body are never read", () => {
    expect(
      unauthenticated(() => securityContextFromEvent(apiEvent("http-api-v2", { claims: null }), defaults)),
    ).toContain("No verified identity");
    const spoofed = apiEvent("http-api-v2", {
      claims: null,
      headers: { "x-tenant-id": "tenant_uk_01", "x-user-id": "usr_9918" },
      body: { prompt: "x", tenant_id: "tenant_uk_01", sub: "usr_9918" },
    });
    unauthenticated(() => securityContextFromEvent(spoofed, defaults));
    unauthenticated(() => securityContextFromEvent(undefined, defaults));
  });
});

describe("permission claims are split by their kind (RFC 6749 section 3.3 for scope)", () => {
  /** The permissions of `claims` as each authorizer shape delivers them, and as verified claims. */
  const everyShape = (claims: Record<string, unknown>, config: IdentityConfig = defaults) => {
    const full = { sub: "usr_t1_a", tenant_id: "tenant_t1", ...claims };
    return {
      httpApi: securityContextFromEvent(apiEvent("http-api-v2", { claims: full }), config).permissions,
      restApi: securityContextFromEvent(apiEvent("rest-v1", { claims: full }), config).permissions,
      verified: securityContextFromClaims(full, config).permissions,
    };
  };

  it("a scope splits on spaces only: a comma or brackets are part of one scope token, never a second permission", () => {
    for (const scope of ["openid,billing:approve", "[billing:approve]", "[openid billing:approve]"]) {
      for (const [shape, permissions] of Object.entries(everyShape({ scope }))) {
        expect(permissions, `${shape} ${scope}`).not.toContain("billing:approve");
      }
    }
    expect(everyShape({ scope: "openid,billing:approve" })).toEqual({
      httpApi: ["openid,billing:approve"],
      restApi: ["openid,billing:approve"],
      verified: ["openid,billing:approve"],
    });
    expect(everyShape({ scope: "[billing:approve]" }).verified).toEqual(["[billing:approve]"]);
    expect(everyShape({ scope: "openid  billing:read" }).httpApi).toEqual(["openid", "billing:read"]);
  });

  it("each authorizer's own rendering only: the HTTP API never renders a comma, the REST API never brackets, verified claims neither", () => {
    expect(everyShape({ "cognito:groups": "writers,billing:approve" })).toEqual({
      httpApi: ["writers,billing:approve"],
      restApi: ["writers", "billing:approve"],
      verified: ["writers,billing:approve"],
    });
    expect(everyShape({ "cognito:groups": "[billing:approve]" })).toEqual({
      httpApi: ["billing:approve"],
      restApi: ["[billing:approve]"],
      verified: ["[billing:approve]"],
    });
    // Verified claims keep their JSON types: an array is a list, whatever the claim.
    expect(everyShape({ "cognito:groups": ["writers", "billing:read"] }).verified).toEqual([
      "writers",
      "billing:read",
    ]);
  });

  it("only the claims PERMISSION_LIST_CLAIMS names are read as rendered lists", () => {
    const groupsOnly = loadConfig({ PERMISSION_LIST_CLAIMS: "cognito:groups" }).identity;
    expect(everyShape({ permissions: "[billing:approve]" }, groupsOnly)).toEqual({
      httpApi: ["[billing:approve]"],
      restApi: ["[billing:approve]"],
      verified: ["[billing:approve]"],
    });
    expect(everyShape({ permissions: "[billing:approve]" }).httpApi).toEqual(["billing:approve"]);
    expect(everyShape({ "cognito:groups": "[billing:read]" }, groupsOnly).httpApi).toEqual(["billing:read"]);
  });

  it("refuses a scope claim configured as a rendered list", () => {
    expect(() => loadConfig({ PERMISSION_LIST_CLAIMS: "scope,cognito:groups" })).toThrow(
      /PERMISSION_LIST_CLAIMS.*scope/,
    );
  });

  it("keeps every caller's own permissions: two tenants, two users each, one claim form each", () => {
    const callers = [
      { sub: "usr_t1_a", tenant_id: "tenant_t1", scope: "billing:read" },
      { sub: "usr_t1_b", tenant_id: "tenant_t1", scope: "billing:read,billing:approve" },
      { sub: "usr_t2_a", tenant_id: "tenant_t2", "cognito:groups": "[billing:approve]" },
      { sub: "usr_t2_b", tenant_id: "tenant_t2", permissions: ["billing:write"] },
    ];
    expect(
      callers.map((claims) => securityContextFromEvent(apiEvent("http-api-v2", { claims }), defaults)),
    ).toEqual([
      { userId: "usr_t1_a", tenantId: "tenant_t1", permissions: ["billing:read"] },
      { userId: "usr_t1_b", tenantId: "tenant_t1", permissions: ["billing:read,billing:approve"] },
      { userId: "usr_t2_a", tenantId: "tenant_t2", permissions: ["billing:approve"] },
      { userId: "usr_t2_b", tenantId: "tenant_t2", permissions: ["billing:write"] },
    ]);
  });
});
