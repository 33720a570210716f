/**
 * Invalid params of an MCP request are JSON-RPC `-32602`, naming the field (docs/mcp.md). The SDK's
 * `Server` parses a request with its schema inside the handler it registers and answers a refusal with
 * `-32603` (internal error) and zod's issues as text; JSON-RPC 2.0 (§5.1) and MCP say invalid params are
 * `-32602`. This gate checks the same requests with the same SDK schemas between the transport and the
 * `Server`, so a refused request never reaches a handler: nothing runs, nothing is written.
 */
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import {
  CallToolRequestSchema,
  ErrorCode,
  InitializeRequestSchema,
  isJSONRPCRequest,
  type JSONRPCMessage,
  ListToolsRequestSchema,
  PingRequestSchema,
} from "@modelcontextprotocol/sdk/types.js";
import type { z } from "zod";
import { zodIssues } from "../agent/zod-issues.js";

/**
 * The requests the `/mcp` server answers, each by the SDK's own schema of it: the `Server`'s own
 * (initialize, ping) and the two handlers of shared/mcp/server.ts (tools/list, tools/call). A method not
 * here is left to the `Server` (-32601 when it has no handler).
 */
const ANSWERED: ReadonlyMap<string, z.ZodType> = new Map(
  [InitializeRequestSchema, PingRequestSchema, ListToolsRequestSchema, CallToolRequestSchema].map(
    (schema) => [schema.shape.method.value, schema],
  ),
);

/**
 * Puts the params gate between `transport` and the server connected to it (call it after
 * `server.connect(transport)`): a request of a method in {@link ANSWERED} whose params its schema refuses
 * is answered on the transport with JSON-RPC `-32602`, message `Invalid params for <method>: <path>:
 * expected <type>, received <type>; …` and `data.issues` (path, expected, received: the issues MCP tool
 * errors and HTTP problems carry, shared/agent/zod-issues.ts); every other message reaches the server as sent.
 * @throws Error when no server is connected to `transport` yet
 */
export function answerInvalidParams(transport: Transport): void {
  const deliver = transport.onmessage;
  if (!deliver) throw new Error("Connect the MCP server to the transport before gating its params.");
  const gate = (message: JSONRPCMessage, extra?: Parameters<typeof deliver>[1]) => {
    const schema = isJSONRPCRequest(message) ? ANSWERED.get(message.method) : undefined;
    const parsed = schema?.safeParse(message);
    if (!isJSONRPCRequest(message) || !parsed || parsed.success) {
      deliver(message, extra);
      return;
    }
    const issues = zodIssues(parsed.error, message).map(jsonTerms);
    const clauses = issues.map((issue) =>
      issue.expected === undefined
        ? `${String(issue.path)}: ${String(issue.message)}`
        : `${String(issue.path)}: expected ${String(issue.expected)}, received ${String(issue.received)}`,
    );
    const error = {
      code: ErrorCode.InvalidParams,
      message: `Invalid params for ${message.method}: ${clauses.join("; ")}`,
      data: { issues },
    };
    transport
      .send({ jsonrpc: "2.0", id: message.id, error })
      .catch((failed: unknown) =>
        transport.onerror?.(failed instanceof Error ? failed : new Error(String(failed))),
      );
  };
  transport.onmessage = gate as Transport["onmessage"];
}

/** An issue in JSON's words: zod's "record" (an object of any keys) is a JSON "object". */
function jsonTerms(issue: Record<string, unknown>): Record<string, unknown> {
  return issue.expected === "record" ? { ...issue, expected: "object" } : issue;
}
