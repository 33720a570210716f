/**
 * What the MCP test files (test/mcp*.test.ts) share besides their stack (test/support/mcp.ts): a tool
 * result's parts, the GB quote's arguments, the idempotency key's `_meta`, a raw request that sends the
 * `Host` header it is given, a quote and the tenant's invoices, and the file's own stack ({@link mcpSession}).
 */
import { request as httpRequest } from "node:http";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { afterAll, beforeAll } from "vitest";
import { IDEMPOTENCY_META_KEY } from "../../shared/mcp/mapping.js";
import { type McpStack, startMcpStack, WRITER } from "./mcp.js";

/** A tools/call result as the SDK client returns it. */
export type CallResult = {
  isError?: boolean;
  content: Array<{ type: string; text?: string }>;
  structuredContent?: unknown;
  _meta?: Record<string, unknown>;
};

/** The JSON of a result's first text content (null without one). */
export const text = (result: unknown) =>
  JSON.parse(((result as CallResult).content[0]?.text ?? "null") as string);

/** calculateTax's arguments for 1500.00 GBP in GB. */
export const GB = { amount: "1500.00", currency: "GBP", jurisdiction: "GB" };

/** A tools/call `_meta` carrying the idempotency key `key`. */
export const keyed = (key: string) => ({ [IDEMPOTENCY_META_KEY]: key });

/**
 * A request to the dev server at `base` with node's own client, which sends the `Host` header given
 * (fetch always sends the URL's).
 */
export function rawRequestTo(
  base: string | URL,
  method: string,
  path: string,
  headers: Record<string, string>,
  body?: string,
): Promise<{ status: number; headers: Record<string, string>; body: string }> {
  return new Promise((resolve, reject) => {
    const request = httpRequest(new URL(path, base), { method, headers }, (response) => {
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

/** A calculateTax quote for {@link GB} made by `client`: its quoteId. */
export async function quoteWith(client: Client): Promise<string> {
  const result = await client.callTool({ name: "calculateTax", arguments: GB });
  return (result.structuredContent as { quoteId: string }).quoteId;
}

/** The tenant's invoices through the REST API of `on`, read by a billing:read user of that tenant. */
export async function invoicesOf(
  on: McpStack,
  tenantId: string,
): Promise<Array<{ invoiceId: string; quoteId: string }>> {
  const response = await on.api("/v1/invoices", {
    sub: "usr_reader",
    tenant_id: tenantId,
    scope: "billing:read",
  });
  return ((await response.json()) as { items: Array<{ invoiceId: string; quoteId: string }> }).items;
}

/**
 * A test file's MCP stack and the seed writer's client, started before its tests and stopped after
 * them (vitest hooks registered by this call), with the helpers bound to them: `quote` (by the writer
 * unless a client is given), `invoices` (of this stack unless another is given) and `rawRequest` (to
 * this stack's dev server).
 */
export function mcpSession() {
  let started: { mcp: McpStack; writer: Client } | undefined;
  beforeAll(async () => {
    const mcp = await startMcpStack();
    started = { mcp, writer: await mcp.connect(await mcp.token(WRITER)) };
  });
  afterAll(async () => {
    await started?.mcp.stop();
  });
  const now = () => {
    if (!started) throw new Error("the MCP stack starts in beforeAll");
    return started;
  };
  return {
    get mcp(): McpStack {
      return now().mcp;
    },
    get writer(): Client {
      return now().writer;
    },
    quote: (client?: Client) => quoteWith(client ?? now().writer),
    invoices: (tenantId: string, on?: McpStack) => invoicesOf(on ?? now().mcp, tenantId),
    rawRequest: (method: string, path: string, headers: Record<string, string>, body?: string) =>
      rawRequestTo(now().mcp.server.url, method, path, headers, body),
  };
}
