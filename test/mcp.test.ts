import { request as httpRequest } from "node:http";
import { DeleteTableCommand } from "@aws-sdk/client-dynamodb";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import * as z from "zod";
import { createApp } from "../functions/api/app.js";
import { ProblemSchema } from "../functions/api/contract.js";
import { createDevIssuer, devIssuerEnv, mintToken } from "../local/dev-auth.js";
import { createRegistry, toolsAllowedFor } from "../shared/agent/dispatcher.js";
import { defineTool } from "../shared/agent/tool.js";
import { loadConfig } from "../shared/config.js";
import { IDEMPOTENCY_META_KEY, REPLAYED_META_KEY } from "../shared/mcp/mapping.js";
import { GBP_RULES } from "./support/approvals.js";
import { type McpStack, startMcpStack, WRITER } from "./support/mcp.js";

// docs/mcp.md: the tools over MCP with the SDK's own client, against the real handler on DynamoDB Local.

type CallResult = {
  isError?: boolean;
  content: Array<{ type: string; text?: string }>;
  structuredContent?: unknown;
  _meta?: Record<string, unknown>;
};
const text = (result: unknown) => JSON.parse(((result as CallResult).content[0]?.text ?? "null") as string);
const GB = { amount: "1500.00", currency: "GBP", jurisdiction: "GB" };
const keyed = (key: string) => ({ [IDEMPOTENCY_META_KEY]: key });

let mcp: McpStack;
let writer: Client;

beforeAll(async () => {
  mcp = await startMcpStack();
  writer = await mcp.connect(await mcp.token(WRITER));
});
afterAll(async () => {
  await mcp?.stop();
});

/**
 * A request to the dev server with node's own client, which sends the `Host` header given (fetch always
 * sends the URL's).
 */
function rawRequest(
  method: string,
  path: string,
  headers: Record<string, string>,
  body?: string,
): Promise<{ status: number; headers: Record<string, string>; body: string }> {
  return new Promise((resolve, reject) => {
    const request = httpRequest(new URL(path, mcp.server.url), { method, headers }, (response) => {
      let text = "";
      response.setEncoding("utf8");
      response.on("data", (chunk: string) => {
        text += chunk;
      });
      response.on("end", () =>
        resolve({
          status: response.statusCode ?? 0,
          headers: response.headers as Record<string, string>,
          body: text,
        }),
      );
    });
    request.on("error", reject);
    request.end(body);
  });
}

async function quote(client: Client = writer): Promise<string> {
  const result = await client.callTool({ name: "calculateTax", arguments: GB });
  return (result.structuredContent as { quoteId: string }).quoteId;
}

async function invoices(
  tenantId: string,
  on: McpStack = mcp,
): Promise<Array<{ invoiceId: string; quoteId: string }>> {
  const response = await on.api("/v1/invoices", {
    sub: "usr_reader",
    tenant_id: tenantId,
    scope: "billing:read",
  });
  return ((await response.json()) as { items: Array<{ invoiceId: string; quoteId: string }> }).items;
}

describe("MCP tools/list", () => {
  it("lists only the tools the token's permissions allow, with schemas and annotations from the registry", async () => {
    const all = await writer.listTools();
    expect(all.tools.map((tool) => tool.name)).toEqual([
      "calculateTax",
      "recordInvoice",
      "getInvoice",
      "listInvoices",
    ]);
    const record = all.tools.find((tool) => tool.name === "recordInvoice");
    expect(record?.inputSchema.required).toEqual(["clientName", "quoteId"]);
    expect(Object.keys(record?.inputSchema.properties ?? {})).toEqual([
      "clientName",
      "quoteId",
      "clientReference",
      "description",
    ]);
    expect(record?.inputSchema.additionalProperties).toBe(false);
    expect(record?.outputSchema?.required).toEqual(["invoice", "replayed"]);
    expect(record?.annotations).toEqual({
      readOnlyHint: false,
      destructiveHint: false,
      idempotentHint: true,
      openWorldHint: false,
    });
    expect(all.tools.find((tool) => tool.name === "getInvoice")?.annotations?.readOnlyHint).toBe(true);

    const reader = await mcp.connect(
      await mcp.token({ sub: "usr_r", tenant_id: "tenant_mcp_01", scope: "billing:read" }),
    );
    expect((await reader.listTools()).tools.map((tool) => tool.name)).toEqual([
      "calculateTax",
      "getInvoice",
      "listInvoices",
    ]);
    const none = await mcp.connect(await mcp.token({ sub: "usr_n", tenant_id: "tenant_mcp_01" }));
    expect((await none.listTools()).tools.map((tool) => tool.name)).toEqual(["calculateTax"]);
  });
});

describe("MCP tools/call through the dispatcher", () => {
  it("calculateTax GB 1500.00 gives 300.00 tax and 1800.00 gross as structuredContent", async () => {
    const result = await writer.callTool({ name: "calculateTax", arguments: GB });
    expect(result.isError).toBe(false);
    expect(result.structuredContent).toMatchObject({
      jurisdiction: "GB",
      currency: "GBP",
      subtotal: { amount: "1500.00", minorUnits: 150000, currency: "GBP" },
      taxAmount: { amount: "300.00", minorUnits: 30000, currency: "GBP" },
      grossTotal: { amount: "1800.00", minorUnits: 180000, currency: "GBP" },
    });
    expect(text(result)).toEqual(result.structuredContent);
  });

  it("DE is business_error UNSUPPORTED_JURISDICTION as a tool error; bad arguments are INVALID_ARGUMENTS with field paths", async () => {
    const de = await writer.callTool({
      name: "calculateTax",
      arguments: { amount: "100.00", currency: "EUR", jurisdiction: "DE" },
    });
    expect(de.isError).toBe(true);
    expect(text(de)).toMatchObject({
      status: "business_error",
      error: { code: "UNSUPPORTED_JURISDICTION", retryable: false },
    });

    const bad = await writer.callTool({
      name: "calculateTax",
      arguments: { amount: "-5", currency: "GBP", jurisdiction: "GB", extra: 1 },
    });
    const failure = text(bad) as {
      status: string;
      error: { code: string; details: { issues: Array<{ path: string }> } };
    };
    expect(bad.isError).toBe(true);
    expect(failure.status).toBe("validation_error");
    expect(failure.error.code).toBe("INVALID_ARGUMENTS");
    expect(failure.error.details.issues.map((issue) => issue.path).sort()).toEqual(["(root)", "amount"]);

    const unknown = await writer.callTool({ name: "deleteLedger", arguments: {} });
    expect(text(unknown)).toMatchObject({ status: "validation_error", error: { code: "UNKNOWN_TOOL" } });
  });

  it("a tool the caller may not use is permission_denied, and nothing is written", async () => {
    const reader = await mcp.connect(
      await mcp.token({ sub: "usr_r2", tenant_id: "tenant_mcp_perm", scope: "billing:read" }),
    );
    const result = await reader.callTool({
      name: "recordInvoice",
      arguments: { clientName: "Acme", quoteId: await quote(reader) },
      _meta: keyed("perm-1"),
    });
    expect(text(result)).toMatchObject({
      status: "permission_denied",
      error: { code: "PERMISSION_DENIED", details: { requiredPermission: "billing:write" } },
    });
    expect(await invoices("tenant_mcp_perm")).toEqual([]);
  });
});

describe("MCP exactly once", () => {
  it("recordInvoice twice with one key records one invoice; the repeat replays the stored result", async () => {
    const quoteId = await quote();
    const args = { clientName: "Acme Ltd", quoteId };
    const first = await writer.callTool({
      name: "recordInvoice",
      arguments: args,
      _meta: keyed("inv-once-1"),
    });
    const again = await writer.callTool({
      name: "recordInvoice",
      arguments: args,
      _meta: keyed("inv-once-1"),
    });
    expect(first.isError).toBe(false);
    const invoice = (
      first.structuredContent as { invoice: { invoiceId: string; grossTotal: { amount: string } } }
    ).invoice;
    expect(invoice.grossTotal.amount).toBe("1800.00");
    expect(again.structuredContent).toEqual(first.structuredContent);
    expect(again._meta?.[REPLAYED_META_KEY]).toBe(true);
    expect(first._meta?.[REPLAYED_META_KEY]).toBeUndefined();
    const recorded = (await invoices(WRITER.tenant_id)).filter((item) => item.quoteId === quoteId);
    expect(recorded.map((item) => item.invoiceId)).toEqual([invoice.invoiceId]);
  });

  it("every call lands in the run audit trail (one cycle, reason mcp tools/call), a replay too, visible to its user only", async () => {
    const quoteId = await quote();
    const args = { clientName: "Audit Ltd", quoteId };
    const first = await writer.callTool({
      name: "recordInvoice",
      arguments: args,
      _meta: keyed("inv-audit"),
    });
    const again = await writer.callTool({
      name: "recordInvoice",
      arguments: args,
      _meta: keyed("inv-audit"),
    });
    const ids = [first, again].map((r) => String(r._meta?.["io.boundloop/toolCallId"]));
    expect(ids[0]).not.toBe(ids[1]);
    for (const runId of ids) {
      const response = await mcp.api(`/v1/runs/${runId}`, { sub: WRITER.sub, tenant_id: WRITER.tenant_id });
      expect(response.status).toBe(200);
      const run = (await response.json()) as {
        status: string;
        reason: string;
        cycles: number;
        steps: Array<{
          finishReason: string;
          toolCalls: Array<{ name: string; result: { status: string } }>;
        }>;
      };
      expect(run).toMatchObject({ status: "completed", reason: "mcp tools/call", cycles: 1 });
      expect(run.steps.map((step) => step.finishReason)).toEqual(["mcp"]);
      expect(run.steps[0]?.toolCalls.map((c) => [c.name, c.result.status])).toEqual([
        ["recordInvoice", "success"],
      ]);
    }
    const stranger = await mcp.api(`/v1/runs/${ids[0]}`, { sub: "usr_other", tenant_id: WRITER.tenant_id });
    expect(stranger.status).toBe(404);
  });

  it("the same key with other arguments is IDEMPOTENCY_KEY_REUSED naming the _meta field; nothing more is written", async () => {
    const quoteId = await quote();
    await writer.callTool({
      name: "recordInvoice",
      arguments: { clientName: "Acme", quoteId },
      _meta: keyed("inv-conflict"),
    });
    const other = await writer.callTool({
      name: "recordInvoice",
      arguments: { clientName: "Someone Else", quoteId: await quote() },
      _meta: keyed("inv-conflict"),
    });
    expect(other.isError).toBe(true);
    expect(text(other)).toMatchObject({
      status: "validation_error",
      error: { code: "IDEMPOTENCY_KEY_REUSED", details: { path: `_meta.${IDEMPOTENCY_META_KEY}` } },
    });
    expect((await invoices(WRITER.tenant_id)).filter((item) => item.quoteId === quoteId)).toHaveLength(1);
  });

  it("another user's call under the same key is that user's own operation, never a replay of the first user's result", async () => {
    const quoteId = await quote();
    const args = { clientName: "Acme", quoteId };
    await writer.callTool({ name: "recordInvoice", arguments: args, _meta: keyed("inv-shared-key") });
    const colleague = await mcp.connect(await mcp.token({ ...WRITER, sub: "usr_colleague" }));
    const result = await colleague.callTool({
      name: "recordInvoice",
      arguments: args,
      _meta: keyed("inv-shared-key"),
    });
    // Keys belong to one caller: the colleague's call runs, and the quote's one invoice refuses it.
    expect(result._meta?.["io.boundloop/replayed"]).toBeUndefined();
    expect(text(result)).toMatchObject({
      status: "business_error",
      error: { code: "QUOTE_ALREADY_RECORDED" },
    });
    expect((await invoices(WRITER.tenant_id)).filter((item) => item.quoteId === quoteId)).toHaveLength(1);
  });

  it("without a key recordInvoice is guarded by its quote: one invoice, the second call refused QUOTE_ALREADY_RECORDED", async () => {
    const quoteId = await quote();
    const args = { clientName: "Acme", quoteId };
    const first = await writer.callTool({ name: "recordInvoice", arguments: args });
    const second = await writer.callTool({ name: "recordInvoice", arguments: args });
    expect(first.isError).toBe(false);
    const invoiceId = (first.structuredContent as { invoice: { invoiceId: string } }).invoice.invoiceId;
    expect(text(second)).toMatchObject({
      status: "business_error",
      error: { code: "QUOTE_ALREADY_RECORDED", details: { invoiceId } },
    });
    expect((await invoices(WRITER.tenant_id)).filter((item) => item.quoteId === quoteId)).toHaveLength(1);
  });

  it("a malformed key is a validation error and nothing runs", async () => {
    const quoteId = await quote();
    const result = await writer.callTool({
      name: "recordInvoice",
      arguments: { clientName: "Acme", quoteId },
      _meta: { [IDEMPOTENCY_META_KEY]: 42 },
    });
    expect(text(result)).toMatchObject({
      status: "validation_error",
      error: { code: "INVALID_IDEMPOTENCY_KEY" },
    });
    expect((await invoices(WRITER.tenant_id)).filter((item) => item.quoteId === quoteId)).toHaveLength(0);
  });
});

describe("MCP identity (OAuth 2.1 resource server)", () => {
  const post = (headers: Record<string, string>, body: string) =>
    fetch(mcp.mcpUrl, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
        ...headers,
      },
      body,
    });
  const list = JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" });

  it("no token: 401 problem+json with WWW-Authenticate resource_metadata, and the RFC 9728 metadata names the resource and issuer", async () => {
    const response = await post({}, list);
    expect(response.status).toBe(401);
    const metadataUrl = `${mcp.server.url}/.well-known/oauth-protected-resource/mcp`;
    expect(response.headers.get("www-authenticate")).toBe(`Bearer resource_metadata="${metadataUrl}"`);
    expect(response.headers.get("content-type")).toMatch(/^application\/problem\+json/);
    expect(ProblemSchema.parse(await response.json())).toMatchObject({
      status: 401,
      code: "UNAUTHENTICATED",
    });
    for (const url of [metadataUrl, `${mcp.server.url}/.well-known/oauth-protected-resource`]) {
      const metadata = await fetch(url);
      expect(metadata.status).toBe(200);
      expect(await metadata.json()).toEqual({
        resource: mcp.mcpUrl.href,
        authorization_servers: [mcp.issuer.issuer],
        bearer_methods_supported: ["header"],
        resource_name: "boundloop accounting tools (MCP)",
      });
    }
  });

  it("refuses a token minted for another audience (the REST API's), an expired one and another issuer's", async () => {
    const cases = [
      [await mcp.token(WRITER, { audience: mcp.issuer.audience }), "audience is not this resource"],
      [await mcp.token(WRITER, { expiresIn: "-5m" }), "expired"],
      [await mcp.token(WRITER, { issuer: "urn:someone-else" }), 'the \\"iss\\" claim is invalid'],
    ] as const;
    for (const [token, reason] of cases) {
      const response = await post({ authorization: `Bearer ${token}` }, list);
      expect(response.status, reason).toBe(401);
      expect(response.headers.get("www-authenticate")).toContain('error="invalid_token"');
      expect(response.headers.get("www-authenticate")).toContain(reason);
      const problem = ProblemSchema.parse(await response.json());
      expect(problem.code).toBe("UNAUTHENTICATED");
      expect(problem.detail).toContain(reason.replaceAll('\\"', '"'));
    }
  });

  it("the audience it expects comes from configuration, never from the request's Host", async () => {
    // A token minted for another server's /mcp, sent with that server's name as Host: the endpoint's
    // own URL (MCP_RESOURCE_URL) is still the only audience it accepts.
    const evil = await mcp.token(WRITER, { audience: "http://evil.example/mcp" });
    const asEvil = await rawRequest(
      "POST",
      "/mcp",
      {
        host: "evil.example",
        authorization: `Bearer ${evil}`,
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
      },
      list,
    );
    expect(asEvil.status).toBe(401);
    expect(asEvil.headers["www-authenticate"]).toContain("audience is not this resource");
    expect(asEvil.headers["www-authenticate"]).toContain(
      `resource_metadata="${mcp.server.url}/.well-known/oauth-protected-resource/mcp"`,
    );
    expect(JSON.parse(asEvil.body)).toMatchObject({ code: "UNAUTHENTICATED" });
    // The metadata a client reads names the configured resource whatever Host it was asked with.
    const metadata = await rawRequest("GET", "/.well-known/oauth-protected-resource/mcp", {
      host: "evil.example",
    });
    expect(JSON.parse(metadata.body)).toMatchObject({ resource: mcp.mcpUrl.href });
    // The endpoint's own token, sent with that foreign Host, is still served: the Host plays no part.
    const own = await rawRequest(
      "POST",
      "/mcp",
      {
        host: "evil.example",
        authorization: `Bearer ${await mcp.token(WRITER)}`,
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
      },
      list,
    );
    expect(own.status).toBe(200);
  });

  it("tenants are isolated: another tenant cannot read or record this tenant's quote", async () => {
    const quoteId = await quote();
    const recorded = await writer.callTool({
      name: "recordInvoice",
      arguments: { clientName: "Acme", quoteId },
      _meta: keyed("iso-1"),
    });
    const invoiceId = (recorded.structuredContent as { invoice: { invoiceId: string } }).invoice.invoiceId;
    const other = await mcp.connect(await mcp.token({ ...WRITER, tenant_id: "tenant_mcp_other" }));
    const read = await other.callTool({ name: "getInvoice", arguments: { invoiceId } });
    expect(text(read)).toMatchObject({ status: "business_error", error: { code: "INVOICE_NOT_FOUND" } });
    const record = await other.callTool({
      name: "recordInvoice",
      arguments: { clientName: "Acme", quoteId },
      _meta: keyed("iso-1"),
    });
    expect(text(record)).toMatchObject({ status: "business_error", error: { code: "QUOTE_NOT_FOUND" } });
    expect(await invoices("tenant_mcp_other")).toEqual([]);
  });
});

describe("MCP protocol errors are JSON-RPC errors, never a 500", () => {
  const post = async (body: string, headers: Record<string, string> = {}) =>
    fetch(mcp.mcpUrl, {
      method: "POST",
      headers: {
        authorization: `Bearer ${await mcp.token(WRITER)}`,
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
        ...headers,
      },
      body,
    });

  it.each([
    ["malformed JSON", "{not json", 400, -32700],
    ["not a JSON-RPC message", JSON.stringify({ hello: "world" }), 400, -32700],
    ["an unknown method", JSON.stringify({ jsonrpc: "2.0", id: 7, method: "tools/destroy" }), 200, -32601],
    // The SDK's Server answers a request its schema refuses with -32603 (its choice, not ours).
    [
      "tools/call without params",
      JSON.stringify({ jsonrpc: "2.0", id: 8, method: "tools/call" }),
      200,
      -32603,
    ],
  ])("%s", async (_name, body, status, code) => {
    const response = await post(body);
    expect(response.status).toBe(status);
    const answer = (await response.json()) as { jsonrpc: string; error: { code: number } };
    expect(answer.jsonrpc).toBe("2.0");
    expect(answer.error.code).toBe(code);
  });

  it("a wrong Accept header is 406 and GET is 405, both JSON-RPC errors", async () => {
    const wrongAccept = await post(JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }), {
      accept: "text/html",
    });
    expect(wrongAccept.status).toBe(406);
    expect(((await wrongAccept.json()) as { error: { code: number } }).error.code).toBe(-32000);
    const get = await fetch(mcp.mcpUrl, { headers: { authorization: `Bearer ${await mcp.token(WRITER)}` } });
    expect(get.status).toBe(405);
    expect(get.headers.get("allow")).toBe("POST");
  });

  it("a request from another Origin is 403 (DNS rebinding); the endpoint's own origin is served", async () => {
    const list = JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" });
    const foreign = await post(list, { origin: "http://evil.example" });
    expect(foreign.status).toBe(403);
    expect(((await foreign.json()) as { error: { code: number } }).error.code).toBe(-32000);
    expect((await post(list, { origin: mcp.mcpUrl.origin })).status).toBe(200);
  });

  it("negotiates the current and the previous protocol version", async () => {
    for (const version of ["2025-11-25", "2025-06-18"]) {
      const response = await post(
        JSON.stringify({
          jsonrpc: "2.0",
          id: 1,
          method: "initialize",
          params: { protocolVersion: version, capabilities: {}, clientInfo: { name: "raw", version: "1" } },
        }),
      );
      expect(response.status).toBe(200);
      const answer = (await response.json()) as {
        result: { protocolVersion: string; capabilities: unknown };
      };
      expect(answer.result.protocolVersion).toBe(version);
      expect(answer.result.capabilities).toEqual({ tools: { listChanged: false } });
    }
  });
});

describe("MCP approval", () => {
  let gated: McpStack;
  beforeAll(async () => {
    gated = await startMcpStack({ APPROVAL_RULES: GBP_RULES });
  });
  afterAll(async () => {
    await gated?.stop();
  });

  async function pending(client: Client, key: string) {
    const calc = await client.callTool({ name: "calculateTax", arguments: GB });
    const quoteId = (calc.structuredContent as { quoteId: string }).quoteId;
    const args = { clientName: "Big Client", quoteId };
    const result = await client.callTool({ name: "recordInvoice", arguments: args, _meta: keyed(key) });
    const body = text(result) as {
      status: string;
      error: {
        code: string;
        details: { approvalId: string; runId: string; expiresAt: string; preview: Record<string, string> };
      };
    };
    return { args, body, result };
  }

  const decideAs = (
    target: { runId: string; approvalId: string },
    decision: "approve" | "reject",
    reason?: string,
  ) =>
    gated.api(
      `/v1/runs/${target.runId}/approvals/${target.approvalId}`,
      { sub: "usr_approver", tenant_id: WRITER.tenant_id, scope: "billing:approve" },
      { method: "POST", body: JSON.stringify({ decision, ...(reason ? { reason } : {}) }) },
    );

  it("pending → approved → the repeat with the key records the invoice once, and replays it after", async () => {
    const client = await gated.connect(await gated.token(WRITER));
    const { args, body, result } = await pending(client, "apr-ok");
    expect(result.isError).toBe(true);
    expect(body.status).toBe("business_error");
    expect(body.error.code).toBe("APPROVAL_PENDING");
    expect(body.error.details.preview).toMatchObject({
      grossTotal: "1800.00",
      currency: "GBP",
      threshold: "1000.00",
    });
    expect(Date.parse(body.error.details.expiresAt)).toBeGreaterThan(Date.now());
    expect(
      await invoices(WRITER.tenant_id, gated).then((items) =>
        items.filter((i) => i.quoteId === args.quoteId),
      ),
    ).toEqual([]);

    // Listed in the approvals inbox; still pending when asked again.
    const inbox = await gated.api("/v1/approvals", {
      sub: "usr_approver",
      tenant_id: WRITER.tenant_id,
      scope: "billing:approve",
    });
    const items = ((await inbox.json()) as { items: Array<{ approvalId: string }> }).items;
    expect(items.map((item) => item.approvalId)).toContain(body.error.details.approvalId);
    const still = await client.callTool({ name: "recordInvoice", arguments: args, _meta: keyed("apr-ok") });
    expect(text(still)).toMatchObject({ error: { code: "APPROVAL_PENDING" } });

    // Four eyes: the caller cannot approve their own call.
    const self = await gated.api(
      `/v1/runs/${body.error.details.runId}/approvals/${body.error.details.approvalId}`,
      { ...WRITER, scope: "billing:approve" },
      { method: "POST", body: JSON.stringify({ decision: "approve" }) },
    );
    expect(self.status).toBe(403);
    expect((await decideAs(body.error.details, "approve")).status).toBe(200);

    const [done, replay] = await Promise.all([
      client.callTool({ name: "recordInvoice", arguments: args, _meta: keyed("apr-ok") }),
      client.callTool({ name: "recordInvoice", arguments: args, _meta: keyed("apr-ok") }),
    ]);
    for (const outcome of [done, replay]) {
      expect(outcome.isError).toBe(false);
      expect(outcome._meta?.["io.boundloop/approval"]).toMatchObject({
        decision: "approved",
        decidedBy: "usr_approver",
      });
    }
    const ids = [done, replay].map(
      (r) => (r.structuredContent as { invoice: { invoiceId: string } }).invoice.invoiceId,
    );
    expect(ids[0]).toBe(ids[1]);
    expect(
      (await invoices(WRITER.tenant_id, gated))
        .filter((item) => item.quoteId === args.quoteId)
        .map((i) => i.invoiceId),
    ).toEqual([ids[0]]);
  });

  it("pending → rejected → the repeat returns the rejection with its reason, nothing is recorded", async () => {
    const client = await gated.connect(await gated.token(WRITER));
    const { args, body } = await pending(client, "apr-no");
    expect((await decideAs(body.error.details, "reject", "client on credit hold")).status).toBe(200);
    const outcome = await client.callTool({ name: "recordInvoice", arguments: args, _meta: keyed("apr-no") });
    expect(text(outcome)).toMatchObject({
      status: "business_error",
      error: { code: "APPROVAL_REJECTED", details: { reason: "client on credit hold" } },
    });
    expect((await invoices(WRITER.tenant_id, gated)).filter((item) => item.quoteId === args.quoteId)).toEqual(
      [],
    );
  });

  it("a call that needs approval without a key is refused IDEMPOTENCY_KEY_REQUIRED and nothing is asked or written", async () => {
    const client = await gated.connect(await gated.token(WRITER));
    const calc = await client.callTool({ name: "calculateTax", arguments: GB });
    const quoteId = (calc.structuredContent as { quoteId: string }).quoteId;
    const result = await client.callTool({
      name: "recordInvoice",
      arguments: { clientName: "Big", quoteId },
    });
    expect(text(result)).toMatchObject({
      status: "validation_error",
      error: { code: "IDEMPOTENCY_KEY_REQUIRED" },
    });
    expect((await invoices(WRITER.tenant_id, gated)).filter((item) => item.quoteId === quoteId)).toEqual([]);
  });
});

describe("MCP: a mutating tool without a business key", () => {
  let custom: McpStack;
  const effects: string[] = [];
  beforeAll(async () => {
    custom = await startMcpStack({}, (deps) =>
      createRegistry([
        ...deps.tools.values(),
        defineTool({
          name: "archiveNote",
          description: "Archives a note (test tool: mutating, no business key).",
          inputSchema: z.object({ note: z.string().min(1) }).strict(),
          isMutating: true,
          requiredPermission: "billing:write",
          handler: async (input, _security, context) => {
            effects.push(`${input.note}:${String(context.idempotencyKey)}`);
            return { archived: input.note };
          },
        }),
      ]),
    );
  });
  afterAll(async () => {
    await custom?.stop();
  });

  it("is refused IDEMPOTENCY_KEY_REQUIRED without a key (never run unguarded), and runs once with one", async () => {
    const client = await custom.connect(await custom.token(WRITER));
    const refused = await client.callTool({ name: "archiveNote", arguments: { note: "n1" } });
    expect(refused.isError).toBe(true);
    expect(text(refused)).toMatchObject({
      status: "validation_error",
      error: { code: "IDEMPOTENCY_KEY_REQUIRED", details: { path: `_meta.${IDEMPOTENCY_META_KEY}` } },
    });
    expect(effects).toEqual([]);
    const first = await client.callTool({
      name: "archiveNote",
      arguments: { note: "n1" },
      _meta: keyed("arch-1"),
    });
    const again = await client.callTool({
      name: "archiveNote",
      arguments: { note: "n1" },
      _meta: keyed("arch-1"),
    });
    expect(text(first)).toEqual({ archived: "n1" });
    expect(text(again)).toEqual({ archived: "n1" });
    expect(again._meta?.[REPLAYED_META_KEY]).toBe(true);
    expect(effects).toHaveLength(1);
    expect(effects[0]).toMatch(/^n1:tk_[0-9a-f]{64}$/);
  });
});

describe("MCP: the data store fails around a call", () => {
  it("is a retryable fatal_error STORE_UNAVAILABLE with a fixed sentence: no internal error text", async () => {
    // Quotas off: with them, admission is the call's first write and refuses it as QUOTA_UNAVAILABLE
    // (test/quotas-admission.test.ts); this is the idempotency record's write failing.
    const broken = await startMcpStack({}, undefined, { quotas: false });
    try {
      const client = await broken.connect(await broken.token(WRITER));
      const quoteId = await quote(client);
      // A real failure: the table is gone, so DynamoDB Local refuses the idempotency record's write.
      await broken.stack.deps.ddb.send(new DeleteTableCommand({ TableName: broken.stack.config.table.name }));
      const result = (await client.callTool({
        name: "recordInvoice",
        arguments: { clientName: "Acme Ltd", quoteId },
        _meta: keyed("store-down-1"),
      })) as CallResult;
      expect(result.isError).toBe(true);
      const body = text(result);
      expect(body).toMatchObject({
        status: "fatal_error",
        error: { code: "STORE_UNAVAILABLE", retryable: true },
      });
      expect(body.error.message).toBe(
        "recordInvoice could not be guarded: the data store failed. The same call, with the same key, can be made again.",
      );
      expect(JSON.stringify(result)).not.toMatch(/non-existent|ResourceNotFound|table/i);
    } finally {
      await broken.stop();
    }
  });
});

describe("toolsAllowedFor", () => {
  it("keeps exactly the tools whose permission the caller holds, in registry order", () => {
    const tool = (name: string, requiredPermission: string | undefined) =>
      defineTool({
        name,
        description: name,
        inputSchema: z.object({}).strict(),
        isMutating: false,
        requiredPermission,
        handler: async () => ({}),
      });
    const registry = createRegistry([tool("a", undefined), tool("b", "p:read"), tool("c", "p:write")]);
    const names = (permissions: string[]) =>
      toolsAllowedFor(registry, { userId: "u", tenantId: "t", permissions }).map((t) => t.name);
    expect(names([])).toEqual(["a"]);
    expect(names(["p:write"])).toEqual(["a", "c"]);
    expect(names(["p:read", "p:write", "other"])).toEqual(["a", "b", "c"]);
  });
});

describe("MCP without MCP_RESOURCE_URL", () => {
  it("refuses every token, even one for the very URL the request came to, and describes no resource", async () => {
    const issuer = await createDevIssuer();
    const config = loadConfig(devIssuerEnv(issuer));
    const app = createApp({
      config,
      load: () => {
        throw new Error("a refused request loads no dependencies");
      },
    });
    const own = await mintToken(issuer, WRITER, { audience: "https://api.example.com/mcp" });
    const response = await app.request("https://api.example.com/mcp", {
      method: "POST",
      headers: {
        authorization: `Bearer ${own}`,
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
        "x-forwarded-proto": "https",
      },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }),
    });
    expect(response.status).toBe(401);
    expect(ProblemSchema.parse(await response.json()).detail).toContain("MCP_RESOURCE_URL unset");
    expect(response.headers.get("www-authenticate")).not.toContain("resource_metadata");
    const metadata = await app.request("https://api.example.com/.well-known/oauth-protected-resource/mcp");
    expect(metadata.status).toBe(404);
  });
});
