/**
 * The policy API's answers as a client reads them, on DynamoDB Local with the real Cedar engine through
 * the real handler behind the dev server: the check's body, the order of an invalid set's issues (check
 * and PUT), and HEAD /v1/policies (the one HEAD route the stack declares).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PolicyCheckSchema, ProblemSchema } from "../functions/api/contract.js";
import { type McpStack, startMcpStack } from "./support/mcp.js";

let stack: McpStack;
beforeAll(async () => {
  stack = await startMcpStack();
}, 120_000);
afterAll(async () => stack?.stop());

const admin = (tenant: string) => ({ sub: "usr_admin", tenant_id: tenant, scope: "policy:admin" });

const BASE = '@id("base")\npermit (principal, action, resource);\n';

describe("POST /v1/policies/check", () => {
  /** `POST /v1/policies/check` with `body` as the tenant's admin. */
  const check = (tenant: string, body: object) =>
    stack.api("/v1/policies/check", admin(tenant), { method: "POST", body: JSON.stringify(body) });

  it("needs only `policies`; a `mode` is accepted as PUT takes it and ignored; nothing is stored", async () => {
    const tenant = "tenant_pol_check";
    const bare = await check(tenant, { policies: BASE });
    expect(bare.status, await bare.clone().text()).toBe(200);
    expect(PolicyCheckSchema.parse(await bare.json())).toEqual({ valid: true, issues: [] });
    const invalid = await check(tenant, { policies: "permit (principal, action, resource) when { 1 };" });
    expect(invalid.status).toBe(200);
    expect(PolicyCheckSchema.parse(await invalid.json())).toMatchObject({
      valid: false,
      issues: [{ line: 1 }],
    });
    for (const mode of ["enforce", "shadow"]) {
      const withMode = await check(tenant, { policies: BASE, mode });
      expect(await withMode.json(), mode).toEqual({ valid: true, issues: [] });
    }
    for (const body of [
      { policies: BASE, mode: "audit" },
      { mode: "enforce" },
      { policies: BASE, version: 2 },
    ]) {
      const refused = await check(tenant, body);
      expect(refused.status, JSON.stringify(body)).toBe(400);
      expect(ProblemSchema.parse(await refused.json()).code).toBe("INVALID_REQUEST");
    }
    expect((await stack.api("/v1/policies", admin(tenant))).headers.get("etag")).toBe('"default"');
  });

  it("answers an invalid set's issues in text order, the same for identical requests, as PUT does", async () => {
    const tenant = "tenant_pol_order";
    const typo = (id: string, field: string) =>
      `@id("${id}")\nforbid (principal, action == Action::"recordInvoice", resource)\n  when { context.facts.${field} > 1 };\n`;
    const text = `${BASE}${typo("first", "grosMinor")}${typo("second", "nope")}${typo("third", "zzz")}`;
    const expected = [
      { policyId: "first", line: 5 },
      { policyId: "second", line: 8 },
      { policyId: "third", line: 11 },
    ];
    for (let attempt = 0; attempt < 10; attempt++) {
      const checked = PolicyCheckSchema.parse(
        await (await check(tenant, { policies: text, mode: "enforce" })).json(),
      );
      expect(checked.valid).toBe(false);
      expect(
        checked.issues.map(({ policyId, line }) => ({ policyId, line })),
        `check ${attempt}`,
      ).toEqual(expected);
      const put = await stack.api("/v1/policies", admin(tenant), {
        method: "PUT",
        headers: { "if-none-match": "*" },
        body: JSON.stringify({ policies: text, mode: "enforce" }),
      });
      expect(put.status).toBe(400);
      const problem = (await put.json()) as {
        detail: string;
        issues: Array<{ policyId: string; line: number }>;
      };
      expect(problem.issues, `PUT ${attempt}`).toEqual(checked.issues);
      expect(problem.detail).toContain('policy "first", line 5');
    }
  });
});

describe("PUT /v1/policies and @approval", () => {
  it("refuses an @approval that would not ask anyone (another value, no value, on a forbid), storing nothing", async () => {
    const tenant = "tenant_pol_approval_typo";
    const texts = {
      typo: `${BASE}@id("gbp-approval")\n@approval("require")\npermit (principal, action == Action::"recordInvoice", resource);`,
      bare: `${BASE}@id("gbp-approval")\n@approval\npermit (principal, action == Action::"recordInvoice", resource);`,
      forbid: `${BASE}@id("no-big")\n@approval("required")\nforbid (principal, action == Action::"recordInvoice", resource);`,
    };
    for (const [name, policies] of Object.entries(texts)) {
      const put = await stack.api("/v1/policies", admin(tenant), {
        method: "PUT",
        headers: { "if-none-match": "*" },
        body: JSON.stringify({ policies, mode: "enforce" }),
      });
      expect(put.status, name).toBe(400);
      const problem = (await put.json()) as { code: string; issues: unknown };
      expect(problem.code, name).toBe("INVALID_POLICIES");
      expect(problem.issues, name).toEqual([
        expect.objectContaining({
          policyId: name === "forbid" ? "no-big" : "gbp-approval",
          line: 4,
          column: 1,
        }),
      ]);
    }
    expect((await stack.api("/v1/policies", admin(tenant))).headers.get("etag")).toBe('"default"');
  });
});

describe("HEAD /v1/policies", () => {
  it("answers GET's headers: its ETag and its content-length, without the body", async () => {
    const tenant = "tenant_pol_head";
    const stored = await stack.api("/v1/policies", admin(tenant), {
      method: "PUT",
      headers: { "if-none-match": "*" },
      body: JSON.stringify({ policies: BASE, mode: "enforce" }),
    });
    expect(stored.status).toBe(200);
    const get = await stack.api("/v1/policies", admin(tenant));
    const body = await get.text();
    expect(get.headers.get("content-length")).toBe(String(Buffer.byteLength(body)));
    const head = await stack.api("/v1/policies", admin(tenant), { method: "HEAD" });
    expect(head.status).toBe(200);
    expect(head.headers.get("etag")).toBe('"v1"');
    expect(head.headers.get("content-type")).toBe(get.headers.get("content-type"));
    expect(head.headers.get("content-length")).toBe(get.headers.get("content-length"));
    expect(await head.text()).toBe("");
  });

  it("a caller without policy:admin gets GET's 403 headers (status, content-type, content-length), no body", async () => {
    const reader = { sub: "usr_reader", tenant_id: "tenant_pol_head", scope: "billing:read" };
    const get = await stack.api("/v1/policies", reader);
    const body = await get.text();
    expect(get.status).toBe(403);
    expect(get.headers.get("content-type")).toBe("application/problem+json");
    expect(ProblemSchema.parse(JSON.parse(body)).code).toBe("FORBIDDEN");
    const head = await stack.api("/v1/policies", reader, { method: "HEAD" });
    expect(head.status).toBe(403);
    expect(head.headers.get("content-type")).toBe(get.headers.get("content-type"));
    expect(head.headers.get("content-length")).toBe(String(Buffer.byteLength(body)));
    expect(await head.text()).toBe("");
  });

  it("is the one HEAD route: HEAD on a GET route the stack does not declare is the gateway's 404, as on AWS", async () => {
    const tenant = "tenant_pol_head";
    for (const path of ["/v1/invoices", "/v1/policies/versions", "/healthz"]) {
      const head = await stack.api(path, admin(tenant), { method: "HEAD" });
      expect(head.status, path).toBe(404);
      expect(head.headers.get("content-type"), path).toBe("application/json");
      expect(head.headers.get("content-length"), path).toBe(String('{"message":"Not Found"}'.length));
      expect(await head.text(), path).toBe("");
    }
    expect((await stack.api("/v1/invoices", admin(tenant))).status).not.toBe(404);
  });
});
