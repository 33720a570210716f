/** The HTTP contract of approvals: deciding one, listing the tenant's (docs/approvals.md). */

import { createRoute, z } from "@hono/zod-openapi";
import { ApprovalRecordSchema } from "../../../shared/store/approval-record.js";
import { InvoiceListQuery, requiredField, security } from "./common.js";
import { authErrors, payloadTooLarge, problem } from "./problems.js";

/**
 * One approval: its one schema (shared/store/approval-record.ts); the durable callback id is never shown.
 * `.strict()` (which it is already) makes an instance built after @hono/zod-openapi extended zod.
 */
export const ApprovalSchema = ApprovalRecordSchema.strict().openapi("Approval", {
  description: "A person's sign-off on one tool call (docs/approvals.md).",
});

/** A pending approval as a run shows it. */
export const PendingApprovalSchema = ApprovalSchema.pick({
  approvalId: true,
  toolName: true,
  arguments: true,
  preview: true,
  requestedBy: true,
  requestedAt: true,
  expiresAt: true,
})
  .strict()
  .openapi("PendingApproval");

/** Body of `POST /v1/runs/{runId}/approvals/{approvalId}`. */
export const DecideApprovalBody = z
  .object({
    decision: z.enum(["approve", "reject"], requiredField("decision")),
    reason: z
      .string()
      .trim()
      .min(1)
      .max(500)
      .optional()
      .openapi({ description: "Why (1-500 characters); a rejection's reason is given to the model." }),
  })
  .strict()
  .openapi("DecideApprovalRequest");

/** Path parameters of `POST /v1/runs/{runId}/approvals/{approvalId}`. */
export const ApprovalParams = z.object({
  runId: z
    .string()
    .regex(/^[A-Za-z0-9_-]{1,128}$/)
    .openapi({ param: { name: "runId", in: "path" }, example: "run_0b6f0e53-8f0c-4a6e-9f33-3c1f0d6b5e21" }),
  approvalId: z
    .string()
    .regex(/^apr_[a-f0-9]{32}$/)
    .openapi({ param: { name: "approvalId", in: "path" }, example: "apr_5c1f0d6b5e213c1f0d6b5e213c1f0d6b" }),
});

/** 200 body of `GET /v1/approvals`. */
export const ApprovalPageSchema = z
  .object({
    items: z.array(ApprovalSchema),
    nextCursor: z
      .string()
      .nullable()
      .openapi({ description: "Pass as `cursor` for the next page; null on the last page." }),
  })
  .strict()
  .openapi("ApprovalPage");

/**
 * Query of `GET /v1/approvals`: `status` (`pending`, the default, or `decided`), and page size and cursor
 * as `GET /v1/invoices` (a cursor belongs to the status it was issued for).
 */
export const ApprovalListQuery = z.object({
  status: z
    .enum(["pending", "decided"])
    .default("pending")
    .openapi({
      param: { name: "status", in: "query" },
      description:
        "Which approvals: `pending` (waiting for a decision; oldest `requestedAt` first) or `decided` (no longer pending: approved, rejected, expired or cancelled; newest `decidedAt` first). A page holds `limit` approvals unless it is the last. The lists are eventually consistent: a decision moves its approval from one to the other within moments.",
    }),
  limit: InvoiceListQuery.shape.limit,
  cursor: InvoiceListQuery.shape.cursor,
});

/** `POST /v1/runs/{runId}/approvals/{approvalId}`: a person approves or rejects a paused call. */
export const decideApprovalRoute = createRoute({
  method: "post",
  path: "/v1/runs/{runId}/approvals/{approvalId}",
  summary: "Approve or reject a call a run waits on (needs billing:approve; not the run's own user)",
  security,
  request: {
    params: ApprovalParams,
    body: { required: true, content: { "application/json": { schema: DecideApprovalBody } } },
  },
  responses: {
    200: {
      description: "The decision was recorded (or the same decision had been: the stored one is returned).",
      content: { "application/json": { schema: ApprovalSchema } },
    },
    400: problem("INVALID_REQUEST: malformed ids or body."),
    403: problem(
      "FORBIDDEN: the caller lacks billing:approve (`requiredPermission`), or started the run (`rule`: four_eyes).",
    ),
    404: problem("NOT_FOUND: the tenant has no such run or approval."),
    409: problem(
      "APPROVAL_DECIDED: the opposite decision was taken first; APPROVAL_EXPIRED: the approval expired; APPROVAL_CANCELLED: its run was cancelled (`approvalStatus`).",
    ),
    413: payloadTooLarge,
    415: problem("UNSUPPORTED_MEDIA_TYPE: send application/json."),
    ...authErrors,
  },
});

/** `GET /v1/approvals`: the tenant's pending or decided approvals, paginated (needs billing:approve). */
export const listApprovalsRoute = createRoute({
  method: "get",
  path: "/v1/approvals",
  summary: "The tenant's pending or decided approvals, a page at a time (needs billing:approve)",
  security,
  request: { query: ApprovalListQuery },
  responses: {
    200: {
      description:
        "One page: with `status=decided`, who decided (`decidedBy`, null for an expired or cancelled approval), when (`decidedAt`) and why (`reason`), beside the backend's `preview`.",
      content: { "application/json": { schema: ApprovalPageSchema } },
    },
    400: problem(
      "INVALID_REQUEST: bad `status` (not `pending` or `decided`), `limit` or `cursor` (also a cursor of the other status); `errors` names the parameter.",
    ),
    403: problem("FORBIDDEN: the caller lacks billing:approve."),
    ...authErrors,
  },
});
