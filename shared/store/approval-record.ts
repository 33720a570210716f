/**
 * The approval: one zod schema, the source of its type, of what the approval store reads back
 * (shared/store/approvals.ts parses every item it returns) and of the HTTP contract's `Approval`
 * (functions/api/contract/approvals.ts). No store code here, so the contract imports the schema without
 * the store.
 */
import * as z from "zod";

/**
 * Where an approval is: `pending` until a person decides (`approved`, `rejected`), it `expired`, or its
 * run was cancelled while it waited (`cancelled`: withdrawn, no decision can be taken on it any more).
 */
export const ApprovalStatusSchema = z
  .enum(["pending", "approved", "rejected", "expired", "cancelled"])
  .describe("`cancelled`: the run was cancelled while the approval waited; it can no longer be decided.");

/** An approval's state, see {@link ApprovalStatusSchema}. */
export type ApprovalStatus = z.infer<typeof ApprovalStatusSchema>;

/**
 * One approval of a run's tool call (sort key `APPROVAL#<runId>#<approvalId>`), as the API shows it.
 * The durable callback id is kept server-side only (the store's `ApprovalCallback`); this shape has none.
 * - `arguments`: the call's validated arguments; `preview`: the backend's numbers (decimal strings)
 * - `requestedBy`: the user who started the run (the four-eyes rule keeps them from deciding)
 * - `requestedAt`, `expiresAt`, `decidedAt`: ISO 8601; `decidedBy`, `decidedAt`, `reason` are null while
 *   pending (an expired or cancelled approval has `decidedAt` = when it was marked so, `decidedBy` null)
 * Strict: a stored item with a field it does not name fails the parse.
 */
export const ApprovalRecordSchema = z
  .object({
    approvalId: z.string(),
    runId: z.string(),
    tenantId: z.string(),
    toolName: z.string(),
    toolCallId: z.string(),
    arguments: z.unknown().describe("The call's validated arguments."),
    preview: z
      .record(z.string(), z.unknown())
      .describe(
        "The backend's numbers the decision is about (recordInvoice: quoteId, subtotal, taxAmount, grossTotal, currency, threshold; decimal strings).",
      ),
    requestedBy: z.string().describe("The user who started the run; they may not decide."),
    requestedAt: z.string(),
    expiresAt: z.string(),
    status: ApprovalStatusSchema,
    decidedBy: z.string().nullable(),
    decidedAt: z.string().nullable(),
    reason: z.string().nullable(),
  })
  .strict();

/** One approval, see {@link ApprovalRecordSchema}. */
export type ApprovalRecord = z.infer<typeof ApprovalRecordSchema>;
