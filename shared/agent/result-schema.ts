/**
 * The tool result: one zod schema per part, the source of the engine's types (shared/agent/result.ts
 * takes them with `z.infer`, type-only, so the loop loads no zod for them) and of the HTTP contract's
 * `ToolResult` and `PolicyDecision` (functions/api/contract/run-results.ts publishes these).
 */
import * as z from "zod";

/** The fixed categories a tool call can end in. Only `success` carries `data`. */
export const ToolStatusSchema = z.enum([
  "success",
  "validation_error",
  "permission_denied",
  "business_error",
  "fatal_error",
]);

/**
 * A failed tool call, phrased so the model can act on it.
 * - `code`: stable machine code (UNKNOWN_TOOL, INVALID_ARGUMENTS, UNSUPPORTED_JURISDICTION, …)
 * - `details`: e.g. `{ issues: [{ path, message, expected?, received? }] }` for validation errors
 * - `retryable`: whether calling again (with corrected arguments) can succeed
 */
export const ToolErrorSchema = z
  .object({
    code: z.string(),
    message: z.string(),
    details: z.record(z.string(), z.unknown()),
    retryable: z.boolean(),
  })
  .strict();

/**
 * Who decided on a call that needed approval, when and why (docs/approvals.md); recorded in the call's
 * result, hence in the cycle's audit step. `decision` "expired" has no `decidedBy`. Times ISO 8601.
 */
export const ApprovalAuditSchema = z
  .object({
    approvalId: z.string(),
    decision: z.enum(["approved", "rejected", "expired"]),
    decidedBy: z.string().nullable(),
    decidedAt: z.string(),
    reason: z.string().nullable(),
  })
  .strict();

/** One running total: calls counted and their gross in minor units (in-flight calls included). */
export const RunningTotalSchema = z
  .object({ count: z.number().int(), grossMinor: z.number().int() })
  .strict();

/** The three decisions a policy set can make about a call (docs/policies.md). */
export const PolicyDecisionSchema = z.enum(["permit", "forbid", "approval"]);

/**
 * The explanation of a decision (docs/policies.md), recorded in the tool result's metadata, hence in the
 * audit step, the run's events, the span and the MCP result, never in the tool message the model reads
 * (its totals count every user of the tenant):
 * - `decision`: permit, forbid or approval; `policyIds`: the determining policies (`@id`, else the
 *   engine's positional id); empty for a forbid means no policy permits the call
 * - `source` and `version`: the set that decided (the tenant's version, or the deployment default: null)
 * - `totals`: the running totals the decision saw, for a metered tool
 * - `shadow`: what the tenant's shadow set decided, while one is being tried
 * - `approved`: the call was decided again after a person approved it
 */
export const PolicyAuditSchema = z
  .object({
    decision: PolicyDecisionSchema,
    policyIds: z
      .array(z.string())
      .describe(
        "The determining policies (`@id`, else the engine's positional id); an empty list with `forbid` means no policy permits the call.",
      ),
    source: z.enum(["tenant", "default"]),
    version: z.number().int().nullable().describe("The tenant's set version; null: the default set."),
    totals: z
      .record(z.string(), RunningTotalSchema)
      .optional()
      .describe("The running totals the decision saw (userDay, tenantDay, userHour, tenantHour)."),
    shadow: z
      .object({ decision: PolicyDecisionSchema, policyIds: z.array(z.string()), version: z.number().int() })
      .strict()
      .optional()
      .describe("What the tenant's set in shadow mode decided, beside the enforced decision."),
    approved: z.boolean().optional().describe("Decided again after a person approved the call."),
  })
  .strict();

/**
 * The envelope every tool call produces, success or not: the row the API returns in `toolResults`, the
 * audit step's result, the run's events and the MCP result. The model sees only its model view,
 * `{ status, data, error }` (shared/agent/result.ts `toolMessage`): `metadata` is the backend's audit.
 * `metadata.latencyMs` is the handler's wall time in ms (0 when it never ran); `metadata.truncated` is
 * present when the result was cut to the tool-result size cap (shared/agent/result.ts `capToolResult`);
 * `metadata.approval` when the call waited for a person's decision ({@link ApprovalAuditSchema});
 * `metadata.policy` when the tenant's policies decided it ({@link PolicyAuditSchema}).
 */
export const ToolResultSchema = z
  .object({
    status: ToolStatusSchema,
    data: z.unknown().describe("The tool's output on success, else null."),
    error: ToolErrorSchema.nullable(),
    metadata: z
      .object({
        toolName: z.string(),
        toolCallId: z.string(),
        latencyMs: z.number().nonnegative(),
        idempotencyKey: z.string().nullable(),
        truncated: z
          .object({ originalBytes: z.number().int().positive(), maxBytes: z.number().int().positive() })
          .strict()
          .optional()
          .describe(
            "Present when the result was cut to MAX_TOOL_RESULT_BYTES: its size before (UTF-8 bytes) and the cap.",
          ),
        approval: ApprovalAuditSchema.optional().describe(
          "Present when the call waited for a person's approval (docs/approvals.md): who decided, when and why.",
        ),
        policy: PolicyAuditSchema.optional().describe(
          "Present when the tenant's policies decided the call (docs/policies.md).",
        ),
      })
      .strict(),
  })
  .strict();
