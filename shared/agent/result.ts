/** The fixed categories a tool call can end in. Only `success` carries `data`. */
export type ToolStatus =
  | "success"
  | "validation_error"
  | "permission_denied"
  | "business_error"
  | "fatal_error";

/**
 * A failed tool call, phrased so the model can act on it.
 * - `code`: stable machine code (UNKNOWN_TOOL, INVALID_ARGUMENTS, UNSUPPORTED_JURISDICTION, …)
 * - `details`: e.g. `{ issues: [{ path, message, expected?, received? }] }` for validation errors
 * - `retryable`: whether calling again (with corrected arguments) can succeed
 */
export interface ToolError {
  code: string;
  message: string;
  details: Record<string, unknown>;
  retryable: boolean;
}

/**
 * The envelope every tool call produces, success or not. It becomes the tool message the model sees
 * and the row the API returns in `toolResults`.
 * `metadata.latencyMs` is the handler's wall time in ms (0 when it never ran).
 */
export interface ToolResult {
  status: ToolStatus;
  data: unknown;
  error: ToolError | null;
  metadata: {
    toolName: string;
    toolCallId: string;
    latencyMs: number;
    idempotencyKey: string | null;
  };
}
