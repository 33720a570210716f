import type { z } from "zod";
import type { SecurityContext } from "../identity.js";
import { DeadlineExceededError, raceAbort } from "./deadline.js";
import { toolIdempotencyKey } from "./idempotency-key.js";
import type { ToolError, ToolResult, ToolStatus } from "./result.js";
import { ToolBusinessError, type ToolDefinition } from "./tool.js";

/** One tool call as the model asked for it: `arguments` is the raw JSON text the model produced. */
export interface ToolCallRequest {
  id: string;
  name: string;
  arguments: string;
}

/**
 * Per-call context the loop hands the dispatcher.
 * - `runScope`: the client's Idempotency-Key, else the run id (see `toolIdempotencyKey`)
 * - `occurrence`: index of this call among identical calls in the same assistant turn
 * - `signal`: the run's deadline signal
 */
export interface DispatchContext {
  runId: string;
  runScope: string;
  occurrence: number;
  signal: AbortSignal;
}

/** Tools by name. Build it once with {@link createRegistry}. */
export type ToolRegistry = ReadonlyMap<string, ToolDefinition>;

/**
 * Builds a registry from tool definitions.
 * @throws Error when two tools share a name
 */
export function createRegistry(tools: readonly ToolDefinition[]): ToolRegistry {
  const registry = new Map<string, ToolDefinition>();
  for (const tool of tools) {
    if (registry.has(tool.name)) throw new Error(`Duplicate tool name "${tool.name}".`);
    registry.set(tool.name, tool);
  }
  return registry;
}

/** Field-level problems of a zod failure: path ("items.0.amount"), message, and the failed constraint. */
function zodIssues(error: z.ZodError): Array<Record<string, unknown>> {
  return error.issues.map((issue) => {
    const { path, message, code, ...rest } = issue as z.core.$ZodIssue & Record<string, unknown>;
    const extra = Object.fromEntries(
      Object.entries(rest).filter(([key]) =>
        ["expected", "received", "minimum", "maximum", "keys", "values"].includes(key),
      ),
    );
    return { path: path.map(String).join(".") || "(root)", message, code, ...extra };
  });
}

/**
 * Runs one tool call, in this order: unknown tool → permission → JSON.parse → zod safeParse → execute.
 * Never throws: every outcome is a {@link ToolResult} in one of the fixed categories.
 * Codes: UNKNOWN_TOOL, PERMISSION_DENIED, INVALID_JSON, INVALID_ARGUMENTS, a tool's business code,
 * DEADLINE_EXCEEDED, TOOL_FAILED.
 */
export async function dispatchToolCall(
  call: ToolCallRequest,
  registry: ToolRegistry,
  security: SecurityContext,
  context: DispatchContext,
): Promise<ToolResult> {
  const tool = registry.get(call.name);
  const result = (
    status: ToolStatus,
    data: unknown,
    error: Omit<ToolError, "details"> & { details?: Record<string, unknown> },
    latencyMs = 0,
    idempotencyKey: string | null = null,
  ): ToolResult => ({
    status,
    data,
    error: status === "success" ? null : { ...error, details: error.details ?? {} },
    metadata: { toolName: call.name, toolCallId: call.id, latencyMs, idempotencyKey },
  });

  if (!tool) {
    return result("validation_error", null, {
      code: "UNKNOWN_TOOL",
      message: `There is no tool named "${call.name}". Available tools: ${[...registry.keys()].join(", ")}.`,
      retryable: true,
    });
  }
  if (tool.requiredPermission && !security.permissions.includes(tool.requiredPermission)) {
    return result("permission_denied", null, {
      code: "PERMISSION_DENIED",
      message: `The caller lacks the permission "${tool.requiredPermission}" that ${tool.name} requires.`,
      details: { requiredPermission: tool.requiredPermission },
      retryable: false,
    });
  }
  let raw: unknown;
  try {
    raw = JSON.parse(call.arguments);
  } catch (error) {
    return result("validation_error", null, {
      code: "INVALID_JSON",
      message: `The arguments are not valid JSON: ${(error as Error).message}`,
      retryable: true,
    });
  }
  const parsed = tool.inputSchema.safeParse(raw);
  if (!parsed.success) {
    const issues = zodIssues(parsed.error);
    return result("validation_error", null, {
      code: "INVALID_ARGUMENTS",
      message: `Invalid arguments for ${tool.name}: ${issues.map((i) => `${i.path}: ${i.message}`).join("; ")}`,
      details: { issues },
      retryable: true,
    });
  }

  const idempotencyKey = tool.isMutating
    ? toolIdempotencyKey({
        tenantId: security.tenantId,
        runScope: context.runScope,
        toolName: tool.name,
        args: parsed.data,
        occurrence: context.occurrence,
      })
    : null;
  const started = performance.now();
  const elapsed = () => Math.round(performance.now() - started);
  try {
    const data = await raceAbort(
      tool.handler(parsed.data, security, {
        runId: context.runId,
        idempotencyKey: idempotencyKey ?? undefined,
        signal: context.signal,
      }),
      context.signal,
    );
    return result("success", data, { code: "", message: "", retryable: false }, elapsed(), idempotencyKey);
  } catch (error) {
    if (error instanceof ToolBusinessError) {
      return result(
        "business_error",
        null,
        { code: error.code, message: error.message, details: error.details, retryable: false },
        elapsed(),
        idempotencyKey,
      );
    }
    if (error instanceof DeadlineExceededError || context.signal.aborted) {
      return result(
        "fatal_error",
        null,
        {
          code: "DEADLINE_EXCEEDED",
          message: tool.isMutating
            ? `${tool.name} was stopped at the run's deadline; it may already have had its effect (retrying with the same idempotency key is safe).`
            : `${tool.name} was stopped at the run's deadline; it has no side effects.`,
          details: { mayHaveCommitted: tool.isMutating },
          retryable: false,
        },
        elapsed(),
        idempotencyKey,
      );
    }
    const message = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
    return result(
      "fatal_error",
      null,
      { code: "TOOL_FAILED", message: `${tool.name} failed unexpectedly: ${message}`, retryable: false },
      elapsed(),
      idempotencyKey,
    );
  }
}
