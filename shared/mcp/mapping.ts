/**
 * The MCP adapter's mapping (docs/mcp.md): a `tools/call` request → the application layer's one-cycle
 * tool-call run (shared/runs/tool-call-run.ts), and its tool result → an MCP CallToolResult. Only the
 * protocol's names live here: where the caller's idempotency key travels (`_meta`), how a replay and an
 * approval are flagged, how success and failure render.
 */
import type { ToolResult } from "../agent/result.js";
import type { ToolDefinition } from "../agent/tool.js";
import type { SecurityContext } from "../identity.js";
import { runToolCall, type ToolCallRunDeps } from "../runs/tool-call-run.js";

/**
 * The `_meta` key of a `tools/call` request that carries the caller's idempotency key (1-255 printable
 * ASCII characters), in the reverse-DNS `_meta` naming MCP asks for. SEP-3182 proposed an idempotency
 * key in `_meta` for every server; it was closed, so the name is this server's own.
 */
export const IDEMPOTENCY_META_KEY = "io.boundloop/idempotency-key";

/** The `_meta` key of a result replayed from an earlier call with the same idempotency key (`true`). */
export const REPLAYED_META_KEY = "io.boundloop/replayed";

/** Where the key travels, as the run's errors name it (a field path, and how a client writes it). */
const KEY_FIELD = { path: `_meta.${IDEMPOTENCY_META_KEY}`, label: `_meta["${IDEMPOTENCY_META_KEY}"]` };

/** A `tools/call` result as MCP defines it (CallToolResult). */
export interface McpToolResult {
  [key: string]: unknown;
  content: Array<{ type: "text"; text: string }>;
  structuredContent?: Record<string, unknown>;
  isError: boolean;
  _meta?: Record<string, unknown>;
}

/**
 * Answers one MCP `tools/call` as a one-cycle run of the application layer (shared/runs/tool-call-run.ts:
 * the dispatcher's checks, exactly once per `_meta["io.boundloop/idempotency-key"]`, approvals, the run's
 * audit, events and spans), rendered by {@link toMcpResult}. Failures are tool errors (`isError: true`)
 * in the dispatcher's categories with codes and field paths. Never throws.
 * @param options.remainingMs the Lambda's remaining time (ms) when the request arrived
 */
export async function callMcpTool(
  deps: ToolCallRunDeps,
  security: SecurityContext,
  params: { name: string; arguments?: unknown; _meta?: Record<string, unknown> | undefined },
  options: { remainingMs?: number | undefined } = {},
): Promise<McpToolResult> {
  const run = await runToolCall(deps, {
    security,
    toolName: params.name,
    arguments: params.arguments,
    key: params._meta?.[IDEMPOTENCY_META_KEY],
    keyField: KEY_FIELD,
    remainingMs: options.remainingMs,
  });
  return toMcpResult(run.result, run.tool, run.replayed);
}

/**
 * A tool result as an MCP CallToolResult: a success has the data as JSON text and, for a tool with an
 * `outputSchema`, as `structuredContent`; a failure is `isError: true` with `{ status, error }` (code,
 * message, details with field paths, retryable) as JSON text. `_meta` names the call's run
 * (`io.boundloop/toolCallId`), its approval's audit, the policy decision's explanation
 * (`io.boundloop/policy`, docs/policies.md) and whether it was replayed.
 */
export function toMcpResult(
  result: ToolResult,
  tool: Pick<ToolDefinition, "outputSchema"> | undefined,
  replayed = false,
): McpToolResult {
  const meta = {
    "io.boundloop/toolCallId": result.metadata.toolCallId,
    ...(result.metadata.approval ? { "io.boundloop/approval": result.metadata.approval } : {}),
    ...(result.metadata.policy ? { "io.boundloop/policy": result.metadata.policy } : {}),
    ...(replayed ? { [REPLAYED_META_KEY]: true } : {}),
  };
  if (result.status === "success") {
    const structured =
      tool?.outputSchema && result.data && typeof result.data === "object" && !Array.isArray(result.data)
        ? { structuredContent: result.data as Record<string, unknown> }
        : {};
    return {
      content: [{ type: "text", text: JSON.stringify(result.data) }],
      ...structured,
      isError: false,
      _meta: meta,
    };
  }
  // No structuredContent on a failure: clients validate any structuredContent against the tool's
  // outputSchema, which describes success.
  const failure = { status: result.status, error: result.error };
  return { content: [{ type: "text", text: JSON.stringify(failure) }], isError: true, _meta: meta };
}
