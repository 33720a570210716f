import { zodFunction } from "openai/helpers/zod";
import type { ChatCompletionFunctionTool } from "openai/resources/chat/completions";
import type { z } from "zod";
import type { SecurityContext } from "../identity.js";

/**
 * What a tool handler receives besides its validated input.
 * - `runId`: the run this call belongs to
 * - `idempotencyKey`: set for mutating tools; the handler must make its effect at most once per key
 * - `signal`: aborted at the run's deadline; handlers pass it to every I/O call
 */
export interface ToolContext {
  runId: string;
  idempotencyKey: string | undefined;
  signal: AbortSignal;
}

/**
 * A tool, declared once. Its OpenAI function definition (strict mode) is derived from `inputSchema`
 * by {@link toOpenAITool}; nothing about its arguments is written twice.
 * - `requiredPermission`: checked against the caller's security context before the input is parsed
 * - `isMutating`: the dispatcher gives mutating tools an idempotency key
 * - `handler`: returns JSON-serializable data, or throws {@link ToolBusinessError} for a business rule
 */
export interface ToolDefinition<S extends z.ZodObject = z.ZodObject> {
  name: string;
  description: string;
  inputSchema: S;
  isMutating: boolean;
  requiredPermission: string | undefined;
  handler: (input: z.output<S>, security: SecurityContext, context: ToolContext) => Promise<unknown>;
}

/**
 * A business rule said no (unsupported jurisdiction, unknown invoice, …). The model sees `code`,
 * `message` and `details` as a `business_error` tool result.
 */
export class ToolBusinessError extends Error {
  readonly code: string;
  readonly details: Record<string, unknown>;
  constructor(code: string, message: string, details: Record<string, unknown> = {}) {
    super(message);
    this.name = new.target.name;
    this.code = code;
    this.details = details;
  }
}

/** Raised at registration when a tool declaration is unusable; the message says how to fix it. */
export class ToolDefinitionError extends Error {
  constructor(message: string) {
    super(message);
    this.name = new.target.name;
  }
}

/**
 * Declares a tool; keeps the schema's type for the handler's `input`.
 * @throws ToolDefinitionError when the name is not a valid OpenAI function name (`^[a-zA-Z0-9_-]{1,64}$`)
 *   or the schema cannot be expressed as an OpenAI strict JSON Schema
 * @example defineTool({ name: "ping", description: "…", inputSchema: z.object({}).strict(), isMutating: false,
 *   requiredPermission: undefined, handler: async () => ({ pong: true }) })
 */
export function defineTool<S extends z.ZodObject>(definition: ToolDefinition<S>): ToolDefinition<S> {
  if (!/^[a-zA-Z0-9_-]{1,64}$/.test(definition.name)) {
    throw new ToolDefinitionError(`Tool name "${definition.name}" must match ^[a-zA-Z0-9_-]{1,64}$.`);
  }
  toOpenAITool(definition);
  return definition;
}

/**
 * Derives the OpenAI chat-completions function tool (strict mode) from the tool's zod schema, with
 * openai's own zod helper (`zodFunction`, which uses zod's toJSONSchema and the SDK's strict transform).
 * @throws ToolDefinitionError when the helper cannot convert the schema
 */
export function toOpenAITool(definition: ToolDefinition): ChatCompletionFunctionTool {
  try {
    const tool = zodFunction({
      name: definition.name,
      description: definition.description,
      parameters: definition.inputSchema,
    });
    return { type: "function", function: { ...tool.function } };
  } catch (error) {
    throw new ToolDefinitionError(
      `Tool "${definition.name}": its zod schema cannot be converted to an OpenAI strict JSON Schema (${String(error)}).`,
    );
  }
}
