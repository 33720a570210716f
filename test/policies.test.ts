/**
 * Policies end to end on DynamoDB Local with the real Cedar engine, through the real handler (REST runs
 * with the local model server, and MCP): per-tenant sets with their preconditions and versions, argument
 * and fact conditions, the refusal rule, shadow mode, the tools offered, and the concurrency case: ten
 * concurrent 400.00 GBP invoices under a daily cap record exactly five, across runs and across REST and MCP.
 */
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PolicySetSchema, RunRecordSchema } from "../functions/api/contract.js";
import { type McpStack, startMcpStack } from "./support/mcp.js";

let stack: McpStack;
beforeAll(async () => {
  stack = await startMcpStack();
}, 120_000);
afterAll(async () => stack?.stop());

const admin = (tenant: string) => ({
  sub: "usr_admin",
  tenant_id: tenant,
  scope: "policy:admin billing:read",
});
const writer = (tenant: string, sub = "usr_writer") => ({
  sub,
  tenant_id: tenant,
  scope: "billing:read billing:write",
});

/** `PUT /v1/policies` as the tenant's admin with `headers`. */
function put(tenant: string, policies: string, headers: Record<string, string>, mode = "enforce") {
  return stack.api("/v1/policies", admin(tenant), {
    method: "PUT",
    headers,
    body: JSON.stringify({ policies, mode }),
  });
}

/** Stores the tenant's first set, enforced (or `mode`), and returns its ETag. */
async function firstSet(tenant: string, policies: string, mode = "enforce"): Promise<string> {
  const response = await put(tenant, policies, { "if-none-match": "*" }, mode);
  expect(response.status, await response.clone().text()).toBe(200);
  return response.headers.get("etag") as string;
}

/** A synchronous run of `prompt` as the tenant's writer; the run record afterwards. */
async function run(tenant: string, prompt: string, sub = "usr_writer") {
  const started = await stack.api("/v1/runs", writer(tenant, sub), {
    method: "POST",
    body: JSON.stringify({ prompt }),
  });
  expect(started.status).toBe(200);
  const { runId } = (await started.json()) as { runId: string };
  const record = await stack.api(`/v1/runs/${runId}`, writer(tenant, sub));
  return RunRecordSchema.parse(await record.json());
}

/** The tool results of a run's audit steps. */
const resultsOf = (record: ReturnType<typeof RunRecordSchema.parse>) =>
  record.steps.flatMap((step) => step.toolCalls.map((call) => call.result));

/** The tenant's invoices. */
async function invoices(tenant: string): Promise<Array<{ quoteId: string; grossTotal: { amount: string } }>> {
  const response = await stack.api("/v1/invoices?limit=100", {
    sub: "usr_reader",
    tenant_id: tenant,
    scope: "billing:read",
  });
  return ((await response.json()) as { items: Array<{ quoteId: string; grossTotal: { amount: string } }> })
    .items;
}

const BASE = '@id("base")\npermit (principal, action, resource);\n';

describe("GET and PUT /v1/policies", () => {
  it("show the default, need a precondition, keep every version with who and when, and refuse stale or invalid sets", async () => {
    const tenant = "tenant_pol_api";
    const before = await stack.api("/v1/policies", admin(tenant));
    expect(before.status).toBe(200);
    expect(before.headers.get("etag")).toBe('"default"');
    expect(PolicySetSchema.parse(await before.json())).toEqual({
      policies: "",
      mode: "enforce",
      version: null,
      updatedBy: null,
      updatedAt: null,
      source: "default",
      enforcedVersion: null,
    });

    const bare = await put(tenant, BASE, {});
    expect(bare.status).toBe(428);
    expect(await bare.json()).toMatchObject({ code: "PRECONDITION_REQUIRED" });

    const v1 = await firstSet(tenant, BASE);
    expect(v1).toBe('"v1"');
    const again = await put(tenant, BASE, { "if-none-match": "*" });
    expect(again.status).toBe(412);
    expect(await again.json()).toMatchObject({ code: "PRECONDITION_FAILED", etag: '"v1"' });

    const v2 = await put(
      tenant,
      `${BASE}@id("cap") forbid (principal, action == Action::"recordInvoice", resource) when { context.facts.grossMinor > 100000 };`,
      { "if-match": v1 },
    );
    expect(v2.status).toBe(200);
    expect(v2.headers.get("etag")).toBe('"v2"');
    expect(PolicySetSchema.parse(await v2.json())).toMatchObject({
      version: 2,
      mode: "enforce",
      source: "tenant",
      updatedBy: "usr_admin",
      enforcedVersion: 2,
    });

    const stale = await put(tenant, BASE, { "if-match": v1 });
    expect(stale.status).toBe(412);

    const invalid = await put(
      tenant,
      `${BASE}\n@id("typo")\nforbid (principal, action == Action::"recordInvoice", resource)\n  when { context.facts.grosMinor > 1 };`,
      { "if-match": '"v2"' },
    );
    expect(invalid.status).toBe(400);
    const problem = (await invalid.json()) as {
      code: string;
      detail: string;
      issues: Array<{ policyId: string; line: number }>;
    };
    expect(problem.code).toBe("INVALID_POLICIES");
    expect(problem.issues[0]).toMatchObject({ policyId: "typo", line: 6 });
    expect(problem.detail).toContain('policy "typo", line 6');

    const now = PolicySetSchema.parse(await (await stack.api("/v1/policies", admin(tenant))).json());
    expect(now.version).toBe(2);
    const versions = (await (await stack.api("/v1/policies/versions", admin(tenant))).json()) as {
      items: Array<{ version: number; updatedBy: string; updatedAt: string }>;
    };
    expect(versions.items.map((v) => [v.version, v.updatedBy])).toEqual([
      [2, "usr_admin"],
      [1, "usr_admin"],
    ]);
    expect(Date.parse(versions.items[0]?.updatedAt ?? "")).toBeGreaterThan(0);

    // Another tenant still sees the default; a caller without policy:admin sees nothing.
    expect((await stack.api("/v1/policies", admin("tenant_pol_other"))).headers.get("etag")).toBe(
      '"default"',
    );
    const denied = await stack.api("/v1/policies", writer(tenant));
    expect(denied.status).toBe(403);
    expect(await denied.json()).toMatchObject({ code: "FORBIDDEN", requiredPermission: "policy:admin" });

    const checked = await stack.api("/v1/policies/check", admin(tenant), {
      method: "POST",
      body: JSON.stringify({ policies: "permit (principal, action, resource) when { 1 };", mode: "enforce" }),
    });
    expect(await checked.json()).toMatchObject({ valid: false, issues: [{ line: 1 }] });
    const schema = (await (await stack.api("/v1/policies/schema", admin(tenant))).json()) as {
      cedar: string;
    };
    expect(schema.cedar).toContain('action "recordInvoice" appliesTo');
  });
});

describe("decisions in a run", () => {
  it("argument and fact conditions: the model gets POLICY_DENIED with the policy ids, nothing is written, and the run goes on", async () => {
    const tenant = "tenant_pol_facts";
    await firstSet(
      tenant,
      `${BASE}@id("amount-cap")\nforbid (principal, action == Action::"recordInvoice", resource) when { context.facts.grossMinor > 150000 };\n` +
        '@id("no-bd")\nforbid (principal, action == Action::"calculateTax", resource) when { context.input.jurisdiction == "BD" };',
    );
    const record = await run(tenant, "Calculate tax on 1500 GBP for a client in the UK and record it");
    expect(record.status).toBe("completed");
    const [tax, invoice] = resultsOf(record);
    expect(tax?.metadata.policy).toMatchObject({
      decision: "permit",
      policyIds: ["base"],
      source: "tenant",
      version: 1,
    });
    expect(invoice).toMatchObject({
      status: "permission_denied",
      error: {
        code: "POLICY_DENIED",
        details: { policyIds: ["amount-cap"], decision: "forbid" },
        retryable: false,
      },
      metadata: {
        policy: {
          decision: "forbid",
          policyIds: ["amount-cap"],
          totals: { tenantDay: { count: 1, grossMinor: 180000 } },
        },
      },
    });
    expect(await invoices(tenant)).toEqual([]);

    const small = await run(tenant, "Calculate tax on 100 GBP for a client in the UK and record it");
    expect(resultsOf(small)[1]).toMatchObject({
      status: "success",
      metadata: { policy: { decision: "permit", totals: { tenantDay: { count: 1, grossMinor: 12000 } } } },
    });
    // The refused invoice was released: the day's total holds only the recorded one.
    expect(await invoices(tenant)).toHaveLength(1);

    const bd = await run(tenant, "Calculate tax on 200 BDT for a client in Bangladesh");
    expect(resultsOf(bd)[0]).toMatchObject({
      error: { code: "POLICY_DENIED", details: { policyIds: ["no-bd"] } },
    });
  });

  it("shadow mode: the enforced set decides, the shadow set's decision is recorded beside it and listed; enforcing it switches", async () => {
    const tenant = "tenant_pol_shadow";
    const v1 = await firstSet(tenant, BASE);
    const shadow = await put(
      tenant,
      `${BASE}@id("no-invoices")\nforbid (principal, action == Action::"recordInvoice", resource);`,
      { "if-match": v1 },
      "shadow",
    );
    expect(PolicySetSchema.parse(await shadow.json())).toMatchObject({
      version: 2,
      mode: "shadow",
      enforcedVersion: 1,
    });
    const record = await run(tenant, "Calculate tax on 100 GBP for a client in the UK and record it");
    const invoice = resultsOf(record)[1];
    expect(invoice).toMatchObject({
      status: "success",
      metadata: {
        policy: {
          decision: "permit",
          version: 1,
          shadow: { decision: "forbid", policyIds: ["no-invoices"], version: 2 },
        },
      },
    });
    expect(await invoices(tenant)).toHaveLength(1);
    // The run's events carry the same explanation.
    const events = await stack.stack.deps.runEvents.store.read(tenant, record.runId, 0);
    const finished = [...events.events].find(
      (e) => e.type === "tool.call.finished" && e.name === "recordInvoice",
    );
    expect(finished).toMatchObject({
      policy: { decision: "permit", shadow: { decision: "forbid", policyIds: ["no-invoices"] } },
    });
    const listed = (await (await stack.api("/v1/policies/shadow-decisions", admin(tenant))).json()) as {
      items: Array<Record<string, unknown>>;
    };
    expect(listed.items).toHaveLength(1);
    expect(listed.items[0]).toMatchObject({
      runId: record.runId,
      toolName: "recordInvoice",
      userId: "usr_writer",
      facts: { grossMinor: 12000, currency: "GBP" },
      enforced: { decision: "permit", version: 1 },
      shadow: { decision: "forbid", policyIds: ["no-invoices"], version: 2 },
    });

    const enforce = await put(
      tenant,
      `${BASE}@id("no-invoices")\nforbid (principal, action == Action::"recordInvoice", resource);`,
      { "if-match": '"v2"' },
    );
    expect(enforce.status).toBe(200);
    const after = await run(tenant, "Calculate tax on 100 GBP for a client in the UK and record it");
    expect(resultsOf(after)[1]).toMatchObject({
      error: { code: "POLICY_DENIED", details: { policyIds: ["no-invoices"] } },
    });
    expect(await invoices(tenant)).toHaveLength(1);
  });
});

describe("approval by policy, where nobody can wait", () => {
  const APPROVAL = `${BASE}@id("gb-approval")\n@approval("required")\npermit (principal, action == Action::"recordInvoice", resource) when { context.facts.grossMinor >= 100000 };`;
  const asked = { decision: "approval", policyIds: ["gb-approval"], source: "tenant", version: 1 };

  it("a synchronous run's APPROVAL_UNAVAILABLE result carries the decision: in the audit step and the run's events", async () => {
    const tenant = "tenant_pol_apr_sync";
    await firstSet(tenant, APPROVAL);
    const record = await run(tenant, "Calculate tax on 1500 GBP for a client in the UK and record it");
    const invoice = resultsOf(record).find((r) => r.metadata.toolName === "recordInvoice");
    expect(invoice).toMatchObject({
      status: "business_error",
      error: { code: "APPROVAL_UNAVAILABLE", details: { preview: { policyIds: ["gb-approval"] } } },
    });
    expect(invoice?.metadata.policy).toMatchObject(asked);
    const events = await stack.stack.deps.runEvents.store.read(tenant, record.runId, 0);
    const finished = [...events.events].find(
      (e) => e.type === "tool.call.finished" && e.name === "recordInvoice",
    );
    expect(finished).toMatchObject({ errorCode: "APPROVAL_UNAVAILABLE", policy: asked });
    expect(await invoices(tenant)).toEqual([]);
  });

  it("MCP: APPROVAL_PENDING, its repeat and the rejection carry the decision in _meta; without a key too", async () => {
    const tenant = "tenant_pol_apr_mcp";
    await firstSet(tenant, APPROVAL);
    const client = await stack.connect(await stack.token(writer(tenant)));
    const tax = await client.callTool({
      name: "calculateTax",
      arguments: { amount: "1500", currency: "GBP", jurisdiction: "GB" },
    });
    const { quoteId } = tax.structuredContent as { quoteId: string };
    const call = () =>
      client.callTool({
        name: "recordInvoice",
        arguments: { clientName: "Big Client", quoteId },
        _meta: { "io.boundloop/idempotency-key": "apr-meta" },
      });
    const first = await call();
    const body = JSON.parse((first.content as Array<{ text: string }>)[0]?.text ?? "") as {
      error: { code: string; details: { runId: string; approvalId: string } };
    };
    expect(body.error.code).toBe("APPROVAL_PENDING");
    expect(first._meta?.["io.boundloop/policy"]).toMatchObject(asked);
    // The call's one-cycle run records the same result in its audit step.
    const audited = await stack.api(`/v1/runs/${first._meta?.["io.boundloop/toolCallId"]}`, writer(tenant));
    expect(resultsOf(RunRecordSchema.parse(await audited.json()))[0]?.metadata.policy).toMatchObject(asked);
    const again = await call();
    expect(again._meta?.["io.boundloop/policy"]).toMatchObject(asked);

    const { runId, approvalId } = body.error.details;
    const rejected = await stack.api(
      `/v1/runs/${runId}/approvals/${approvalId}`,
      { sub: "usr_approver", tenant_id: tenant, scope: "billing:approve" },
      { method: "POST", body: JSON.stringify({ decision: "reject", reason: "no PO" }) },
    );
    expect(rejected.status).toBe(200);
    const refused = await call();
    expect(JSON.parse((refused.content as Array<{ text: string }>)[0]?.text ?? "")).toMatchObject({
      error: { code: "APPROVAL_REJECTED" },
    });
    expect(refused._meta).toMatchObject({
      "io.boundloop/policy": asked,
      "io.boundloop/approval": { decision: "rejected" },
    });

    const unkeyed = await client.callTool({
      name: "recordInvoice",
      arguments: { clientName: "Big Client", quoteId },
    });
    expect(JSON.parse((unkeyed.content as Array<{ text: string }>)[0]?.text ?? "")).toMatchObject({
      error: { code: "IDEMPOTENCY_KEY_REQUIRED" },
    });
    expect(unkeyed._meta?.["io.boundloop/policy"]).toMatchObject(asked);
    expect(await invoices(tenant)).toEqual([]);
  });
});

describe("the tools offered", () => {
  it("MCP tools/list and the model's tools leave out only what no request could be permitted", async () => {
    const tenant = "tenant_pol_offer";
    await firstSet(
      tenant,
      `${BASE}@id("admins-list")\nforbid (principal, action == Action::"listInvoices", resource) unless { principal.permissions.contains("billing:admin") };\n` +
        '@id("cap")\nforbid (principal, action == Action::"recordInvoice", resource) when { context.facts.grossMinor > 100 };',
    );
    const client: Client = await stack.connect(await stack.token(writer(tenant)));
    const listed = (await client.listTools()).tools.map((tool) => tool.name);
    expect(listed).toEqual(["calculateTax", "recordInvoice", "getInvoice"]);
    const adminClient = await stack.connect(
      await stack.token({ ...writer(tenant), scope: "billing:read billing:write billing:admin" }),
    );
    expect((await adminClient.listTools()).tools.map((tool) => tool.name)).toContain("listInvoices");
    // The engine and the set are loaded now, so the run's first model call is offered the same tools.
    const record = await run(tenant, "Calculate tax on 100 GBP for a client in the UK");
    expect(record.steps[0]?.request.toolsOffered).toEqual(["calculateTax", "recordInvoice", "getInvoice"]);
    // Offering is not authorizing: a call to the withheld tool is decided, and refused.
    const call = await client.callTool({ name: "listInvoices", arguments: {} });
    expect(call.isError).toBe(true);
    expect(JSON.parse((call.content as Array<{ text: string }>)[0]?.text ?? "")).toMatchObject({
      status: "permission_denied",
      error: { code: "POLICY_DENIED", details: { policyIds: ["admins-list"] } },
    });
    expect(call._meta?.["io.boundloop/policy"]).toMatchObject({
      decision: "forbid",
      policyIds: ["admins-list"],
    });
  });
});

describe("running totals under concurrency", () => {
  it("ten concurrent 400.00 GBP invoices, five runs over REST and five calls over MCP, under a 2000.00 daily cap: exactly five recorded", async () => {
    const tenant = "tenant_pol_race";
    await firstSet(
      tenant,
      `${BASE}@id("daily-cap")\nforbid (principal, action == Action::"recordInvoice", resource) when { context.totals.tenantDay.grossMinor > 200000 };`,
    );
    const client = await stack.connect(await stack.token(writer(tenant, "usr_mcp_writer")));
    // 333.33 GBP + 20 % VAT (66.67) = 400.00 GBP.
    const quotes = await Promise.all(
      Array.from({ length: 5 }, async () => {
        const tax = await client.callTool({
          name: "calculateTax",
          arguments: { amount: "333.33", currency: "GBP", jurisdiction: "GB" },
        });
        return tax.structuredContent as { quoteId: string; grossTotal: { amount: string } };
      }),
    );
    expect(quotes.map((q) => q.grossTotal.amount)).toEqual(Array(5).fill("400.00"));
    const [runs, calls] = await Promise.all([
      Promise.all(
        Array.from({ length: 5 }, (_, i) =>
          run(tenant, "Calculate tax on 333.33 GBP for a client in the UK and record it", `usr_rest_${i}`),
        ),
      ),
      Promise.all(
        quotes.map((quote, i) =>
          client.callTool({
            name: "recordInvoice",
            arguments: { clientName: `Client ${i}`, quoteId: quote.quoteId },
            _meta: { "io.boundloop/idempotency-key": `race-${i}` },
          }),
        ),
      ),
    ]);
    const recorded = await invoices(tenant);
    expect(recorded).toHaveLength(5);
    expect(recorded.every((invoice) => invoice.grossTotal.amount === "400.00")).toBe(true);
    const restOutcomes = runs.map((record) =>
      resultsOf(record).find((r) => r.metadata.toolName === "recordInvoice"),
    );
    const mcpRefused = calls.filter((call) => call.isError).length;
    const restRefused = restOutcomes.filter((r) => r?.error?.code === "POLICY_DENIED").length;
    expect(mcpRefused + restRefused).toBe(5);
    // Every refusal names the cap and saw the total at its own position, over it.
    for (const result of restOutcomes.filter((r) => r?.error)) {
      expect(result?.metadata.policy?.policyIds).toEqual(["daily-cap"]);
      expect(result?.metadata.policy?.totals?.tenantDay?.grossMinor).toBeGreaterThan(200_000);
    }
    // A repeat of an MCP call that was recorded replays; the refused ones stay refused and count nothing.
    const again = await client.callTool({
      name: "recordInvoice",
      arguments: { clientName: "Client 0", quoteId: quotes[0]?.quoteId },
      _meta: { "io.boundloop/idempotency-key": "race-0" },
    });
    expect(again._meta?.["io.boundloop/replayed"]).toBe(true);
    expect(await invoices(tenant)).toHaveLength(5);
  }, 120_000);
});
