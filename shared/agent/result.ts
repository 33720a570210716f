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
 * `metadata.latencyMs` is the handler's wall time in ms (0 when it never ran); `metadata.truncated` is
 * present when the result was cut to the tool-result size cap (see {@link capToolResult});
 * `metadata.approval` when the call waited for a person's decision ({@link ApprovalAudit}); `metadata.policy`
 * when the tenant's policies decided it ({@link PolicyAudit}).
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
    truncated?: { originalBytes: number; maxBytes: number };
    approval?: ApprovalAudit;
    policy?: PolicyAudit;
  };
}

/**
 * Who decided on a call that needed approval, when and why (docs/approvals.md); recorded in the call's
 * result, hence in the cycle's audit step. `decision` "expired" has no `decidedBy`. Times ISO 8601.
 */
export interface ApprovalAudit {
  approvalId: string;
  decision: "approved" | "rejected" | "expired";
  decidedBy: string | null;
  decidedAt: string;
  reason: string | null;
}

/**
 * Keeps a tool result's JSON within `maxBytes` UTF-8 bytes (the tool message the model reads, and the
 * row the API returns). Over the cap, `data` becomes a string: the start of its JSON followed by a
 * marker saying it was truncated and how big it was; if the error part alone is still too big, its
 * message is cut the same way and its details dropped. `metadata.truncated` records the original size.
 * @param maxBytes config MAX_TOOL_RESULT_BYTES (default 16384)
 * @returns the (possibly new) result and its JSON, which is at most `maxBytes` bytes when `maxBytes`
 *   leaves room for the envelope (a few hundred bytes)
 */
export function capToolResult(result: ToolResult, maxBytes: number): { result: ToolResult; json: string } {
  const json = JSON.stringify(result);
  // A UTF-16 code unit is at most 3 UTF-8 bytes: short JSON fits without counting its bytes.
  if (json.length * 3 <= maxBytes) return { result, json };
  const originalBytes = Buffer.byteLength(json, "utf8");
  if (originalBytes <= maxBytes) return { result, json };
  const marker = `[truncated by boundloop: this tool result was ${originalBytes} bytes, over the ${maxBytes}-byte cap]`;
  const cut = (text: string, bytes: number) => `${utf8Prefix(text, Math.max(0, bytes))}… ${marker}`;
  const metadata = { ...result.metadata, truncated: { originalBytes, maxBytes } };
  const build = (budget: number): ToolResult => {
    const data =
      result.data === null || result.data === undefined
        ? result.data
        : cut(JSON.stringify(result.data), budget);
    const errorBytes = result.error ? Buffer.byteLength(JSON.stringify(result.error), "utf8") : 0;
    const error =
      result.error && errorBytes > maxBytes / 2
        ? { ...result.error, message: cut(result.error.message, budget), details: { truncated: true } }
        : result.error;
    return { ...result, data, error, metadata };
  };
  let budget = maxBytes;
  let capped = build(budget);
  let cappedJson = JSON.stringify(capped);
  for (
    let attempt = 0;
    attempt < 20 && Buffer.byteLength(cappedJson, "utf8") > maxBytes && budget > 0;
    attempt++
  ) {
    budget = Math.floor(budget - (Buffer.byteLength(cappedJson, "utf8") - maxBytes) - 16);
    capped = build(budget);
    cappedJson = JSON.stringify(capped);
  }
  return { result: capped, json: cappedJson };
}

/** The longest prefix of `text` that fits in `bytes` UTF-8 bytes, never splitting a character. */
function utf8Prefix(text: string, bytes: number): string {
  const buffer = Buffer.from(text, "utf8");
  if (buffer.length <= bytes) return text;
  return new TextDecoder("utf-8", { fatal: false }).decode(buffer.subarray(0, bytes)).replace(/\uFFFD+$/, "");
}

/** One running total: calls counted and their gross in minor units (in-flight calls included). */
export interface RunningTotal {
  count: number;
  grossMinor: number;
}

/**
 * The explanation of a decision (docs/policies.md), recorded in the tool result's metadata, hence in the
 * audit step, the run's events, the span and the MCP result:
 * - `decision`: permit, forbid or approval; `policyIds`: the determining policies (`@id`, else the
 *   engine's positional id); empty for a forbid means no policy permits the call
 * - `source` and `version`: the set that decided (the tenant's version, or the deployment default: null)
 * - `totals`: the running totals the decision saw, for a metered tool
 * - `shadow`: what the tenant's shadow set decided, while one is being tried
 * - `approved`: the call was decided again after a person approved it
 */
export interface PolicyAudit {
  decision: "permit" | "forbid" | "approval";
  policyIds: string[];
  source: "tenant" | "default";
  version: number | null;
  totals?: Record<string, RunningTotal>;
  shadow?: { decision: "permit" | "forbid" | "approval"; policyIds: string[]; version: number };
  approved?: boolean;
}
