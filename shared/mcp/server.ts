/**
 * The MCP server of `/mcp` (docs/mcp.md), built on the official SDK: a low-level `Server` with two
 * handlers (tools/list, tools/call) over the SDK's web-standard Streamable HTTP transport, stateless
 * (no session id: any Lambda instance answers any request) and answering JSON (no SSE stream). One
 * server and transport per HTTP request: nothing outlives the request. Loaded only by `/mcp`.
 */
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js";
import { CallToolRequestSchema, ListToolsRequestSchema, type Tool } from "@modelcontextprotocol/sdk/types.js";
import type { jsonSchemaValidator } from "@modelcontextprotocol/sdk/validation/types.js";
import * as z from "zod";
import { toolsAllowedFor } from "../agent/dispatcher.js";
import type { ToolDefinition } from "../agent/tool.js";
import type { ApiDeps } from "../deps.js";
import type { SecurityContext } from "../identity.js";
import type { ToolCallRunDeps } from "../runs/tool-call-run.js";
import { callMcpTool, IDEMPOTENCY_META_KEY } from "./mapping.js";
import { answerInvalidParams } from "./params.js";

/**
 * The Server's JSON Schema validator. A server validates with it only the answer to an elicitation,
 * which this server never sends, so it refuses every schema; giving it keeps the SDK's default (Ajv,
 * left out of the Lambda bundle, infra/bundle.ts) from being built.
 */
const NO_ELICITATION: jsonSchemaValidator = {
  getValidator() {
    throw new Error("This MCP server sends no elicitations and validates no JSON Schema.");
  },
};

/** What the server says about itself in `initialize`. */
const SERVER_INFO = { name: "boundloop", version: "0.1.0" };

const INSTRUCTIONS =
  "Accounting tools of boundloop. Every amount is computed and stored by the backend: calculateTax " +
  "returns a quoteId, recordInvoice records it (no amounts in its input). A call that changes data needs " +
  `an idempotency key in _meta["${IDEMPOTENCY_META_KEY}"]; repeating a call with the same key returns ` +
  "its first result. A call that waits for a person's approval returns APPROVAL_PENDING; repeat it with " +
  "the same key once it is decided.";

/** MCP tool descriptions by tool definition, converted once per definition. */
const described = new WeakMap<ToolDefinition, Tool>();

/**
 * A registry tool as MCP `tools/list` shows it: name, description, `inputSchema` (zod's own JSON Schema
 * of what the tool accepts), `outputSchema` (of its success data, when declared) and annotations from
 * its declared hints (readOnly / destructive / idempotent; openWorld false: the tools touch only this
 * service's own data).
 */
export function mcpToolOf(tool: ToolDefinition): Tool {
  let found = described.get(tool);
  if (!found) {
    const { $schema: _in, ...inputSchema } = z.toJSONSchema(tool.inputSchema, { io: "input" });
    const output = tool.outputSchema ? z.toJSONSchema(tool.outputSchema, { io: "output" }) : undefined;
    const hints = tool.hints ?? {};
    found = {
      name: tool.name,
      description: tool.description,
      inputSchema: inputSchema as Tool["inputSchema"],
      ...(output ? { outputSchema: withoutDialect(output) as Tool["outputSchema"] } : {}),
      annotations: {
        readOnlyHint: hints.readOnly === true,
        destructiveHint: hints.destructive === true,
        idempotentHint: hints.idempotent === true,
        openWorldHint: false,
      },
    };
    described.set(tool, found);
  }
  return found;
}

/** A JSON Schema without its `$schema` (MCP's default dialect is the one zod writes). */
function withoutDialect(schema: Record<string, unknown>): Record<string, unknown> {
  const { $schema: _dialect, ...rest } = schema;
  return rest;
}

/**
 * Answers one HTTP request to `/mcp` for a verified caller: JSON-RPC parse and protocol errors are the
 * transport's (400 with a JSON-RPC error, never 500); params a request's schema refuses are -32602
 * before any handler runs (./params.ts); `tools/list` lists only what `security` may call
 * (`toolsAllowedFor`); `tools/call` goes through {@link callMcpTool} (a one-cycle run).
 * @param options.maxBodyBytes request body cap (413 with a JSON-RPC error above it)
 * @param options.remainingMs the Lambda's remaining time (ms) when the request arrived
 */
export async function handleMcpRequest(
  request: Request,
  deps: ToolCallRunDeps,
  security: SecurityContext,
  options: { maxBodyBytes: number; remainingMs?: number | undefined },
): Promise<Response> {
  const server = new Server(SERVER_INFO, {
    capabilities: { tools: { listChanged: false } },
    instructions: INSTRUCTIONS,
    jsonSchemaValidator: NO_ELICITATION,
  });
  server.setRequestHandler(ListToolsRequestSchema, async () => {
    // The tools some request could be permitted for this caller: its permissions, then the tenant's
    // policies (docs/policies.md); the dispatcher still decides every call.
    const allowed = toolsAllowedFor(deps.tools, security);
    const decide = deps.policies?.decisions;
    const offered = decide ? await decide.offered(allowed, security, { wait: true }) : allowed;
    return { tools: offered.map(mcpToolOf) };
  });
  server.setRequestHandler(CallToolRequestSchema, (call) =>
    callMcpTool(
      deps,
      security,
      {
        name: call.params.name,
        arguments: call.params.arguments,
        _meta: call.params._meta as Record<string, unknown> | undefined,
      },
      { remainingMs: options.remainingMs },
    ),
  );
  const transport = new WebStandardStreamableHTTPServerTransport({
    sessionIdGenerator: undefined,
    enableJsonResponse: true,
    maxRequestBodySize: options.maxBodyBytes,
  });
  await server.connect(transport);
  answerInvalidParams(transport);
  try {
    return await transport.handleRequest(request);
  } finally {
    await server.close();
  }
}

/**
 * {@link handleMcpRequest} with the API's dependencies (the one idempotency store, shared/deps.ts) and
 * the caller's tenant on every log line of the request. The route's middleware (functions/api/app.ts
 * `observeRequest`) gives the lines their invocation's context, writes the request line, clears the
 * keys and publishes the request's metrics.
 * @param request the HTTP request to `/mcp`, its token already verified into `security`
 */
export async function serveMcp(
  request: Request,
  deps: ApiDeps,
  security: SecurityContext,
  remainingMs: number | undefined,
): Promise<Response> {
  deps.logger.appendKeys({ tenantId: security.tenantId });
  return handleMcpRequest(request, deps, security, {
    maxBodyBytes: deps.config.http.maxBodyBytes,
    remainingMs,
  });
}
