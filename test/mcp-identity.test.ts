import { describe, expect, it } from "vitest";
import { createApp } from "../functions/api/app.js";
import { ProblemSchema } from "../functions/api/contract.js";
import { createDevIssuer, devIssuerEnv, mintToken } from "../local/dev-auth.js";
import { loadConfig } from "../shared/config.js";
import { WRITER } from "./support/mcp.js";
import { keyed, mcpSession, text } from "./support/mcp-calls.js";

// docs/mcp.md (identity and protocol errors): the tools over MCP with the SDK's own client, against the real handler on DynamoDB Local.

const session = mcpSession();
const { quote, invoices, rawRequest } = session;

describe("MCP identity (OAuth 2.1 resource server)", () => {
  const post = (headers: Record<string, string>, body: string) =>
    fetch(session.mcp.mcpUrl, {
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
    const metadataUrl = `${session.mcp.server.url}/.well-known/oauth-protected-resource/mcp`;
    expect(response.headers.get("www-authenticate")).toBe(`Bearer resource_metadata="${metadataUrl}"`);
    expect(response.headers.get("content-type")).toMatch(/^application\/problem\+json/);
    expect(ProblemSchema.parse(await response.json())).toMatchObject({
      status: 401,
      code: "UNAUTHENTICATED",
    });
    for (const url of [metadataUrl, `${session.mcp.server.url}/.well-known/oauth-protected-resource`]) {
      const metadata = await fetch(url);
      expect(metadata.status).toBe(200);
      expect(await metadata.json()).toEqual({
        resource: session.mcp.mcpUrl.href,
        authorization_servers: [session.mcp.issuer.issuer],
        bearer_methods_supported: ["header"],
        resource_name: "boundloop accounting tools (MCP)",
      });
    }
  });

  it("refuses a token minted for another audience (the REST API's), an expired one and another issuer's", async () => {
    const cases = [
      [
        await session.mcp.token(WRITER, { audience: session.mcp.issuer.audience }),
        "audience is not this resource",
      ],
      [await session.mcp.token(WRITER, { expiresIn: "-5m" }), "expired"],
      [await session.mcp.token(WRITER, { issuer: "urn:someone-else" }), 'the \\"iss\\" claim is invalid'],
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
    const evil = await session.mcp.token(WRITER, { audience: "http://evil.example/mcp" });
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
      `resource_metadata="${session.mcp.server.url}/.well-known/oauth-protected-resource/mcp"`,
    );
    expect(JSON.parse(asEvil.body)).toMatchObject({ code: "UNAUTHENTICATED" });
    // The metadata a client reads names the configured resource whatever Host it was asked with.
    const metadata = await rawRequest("GET", "/.well-known/oauth-protected-resource/mcp", {
      host: "evil.example",
    });
    expect(JSON.parse(metadata.body)).toMatchObject({ resource: session.mcp.mcpUrl.href });
    // The endpoint's own token, sent with that foreign Host, is still served: the Host plays no part.
    const own = await rawRequest(
      "POST",
      "/mcp",
      {
        host: "evil.example",
        authorization: `Bearer ${await session.mcp.token(WRITER)}`,
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
      },
      list,
    );
    expect(own.status).toBe(200);
  });

  it("tenants are isolated: another tenant cannot read or record this tenant's quote", async () => {
    const quoteId = await quote();
    const recorded = await session.writer.callTool({
      name: "recordInvoice",
      arguments: { clientName: "Acme", quoteId },
      _meta: keyed("iso-1"),
    });
    const invoiceId = (recorded.structuredContent as { invoice: { invoiceId: string } }).invoice.invoiceId;
    const other = await session.mcp.connect(
      await session.mcp.token({ ...WRITER, tenant_id: "tenant_mcp_other" }),
    );
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
    fetch(session.mcp.mcpUrl, {
      method: "POST",
      headers: {
        authorization: `Bearer ${await session.mcp.token(WRITER)}`,
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
  ])("%s", async (_name, body, status, code) => {
    const response = await post(body);
    expect(response.status).toBe(status);
    const answer = (await response.json()) as { jsonrpc: string; error: { code: number } };
    expect(answer.jsonrpc).toBe("2.0");
    expect(answer.error.code).toBe(code);
  });

  // JSON-RPC 2.0 §5.1 and MCP: params the method's schema refuses are -32602 Invalid params, naming the
  // field; the call never reaches a tool, so nothing is written.
  const initialize = { capabilities: {}, clientInfo: { name: "raw", version: "1" } };
  it.each([
    ["tools/call without params", "tools/call", undefined, "params: expected object, received missing"],
    [
      "tools/call with arguments that are not an object",
      "tools/call",
      { name: "recordInvoice", arguments: "clientName=Acme", _meta: keyed("bad-args") },
      "params.arguments: expected object, received string",
    ],
    [
      "tools/call with a numeric name",
      "tools/call",
      { name: 7, arguments: { clientName: "Acme", quoteId: "q" }, _meta: keyed("bad-name") },
      "params.name: expected string, received number",
    ],
    [
      "initialize without protocolVersion",
      "initialize",
      initialize,
      "params.protocolVersion: expected string, received missing",
    ],
  ])("%s is -32602 naming the field, and nothing is written", async (_name, method, params, clause) => {
    const before = await invoices(WRITER.tenant_id);
    const response = await post(
      JSON.stringify({ jsonrpc: "2.0", id: 8, method, ...(params === undefined ? {} : { params }) }),
    );
    expect(response.status).toBe(200);
    const answer = (await response.json()) as {
      jsonrpc: string;
      id: number;
      error: { code: number; message: string; data: { issues: Array<{ path: string }> } };
    };
    expect(answer).toMatchObject({ jsonrpc: "2.0", id: 8 });
    expect(answer.error.code).toBe(-32602);
    expect(answer.error.message).toBe(`Invalid params for ${method}: ${clause}`);
    expect(answer.error.data.issues.map((issue) => issue.path)).toEqual([clause.split(":")[0]]);
    expect(await invoices(WRITER.tenant_id)).toEqual(before);
  });

  it("a wrong Accept header is 406 and GET is 405, both JSON-RPC errors", async () => {
    const wrongAccept = await post(JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }), {
      accept: "text/html",
    });
    expect(wrongAccept.status).toBe(406);
    expect(((await wrongAccept.json()) as { error: { code: number } }).error.code).toBe(-32000);
    const get = await fetch(session.mcp.mcpUrl, {
      headers: { authorization: `Bearer ${await session.mcp.token(WRITER)}` },
    });
    expect(get.status).toBe(405);
    expect(get.headers.get("allow")).toBe("POST");
  });

  it("a request from another Origin is 403 (DNS rebinding); the endpoint's own origin is served", async () => {
    const list = JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" });
    const foreign = await post(list, { origin: "http://evil.example" });
    expect(foreign.status).toBe(403);
    expect(((await foreign.json()) as { error: { code: number } }).error.code).toBe(-32000);
    expect((await post(list, { origin: session.mcp.mcpUrl.origin })).status).toBe(200);
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
