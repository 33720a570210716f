/**
 * What the MCP test files (test/mcp*.test.ts) share besides their stack (test/support/mcp.ts): a tool
 * result's parts, the GB quote's arguments, the idempotency key's `_meta`, a raw request that sends the
 * `Host` header it is given, a quote and the tenant's invoices.
 */
import { request as httpRequest } from "node:http";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { IDEMPOTENCY_META_KEY } from "../../shared/mcp/mapping.js";
import type { McpStack } from "./mcp.js";

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
