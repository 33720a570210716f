/**
 * What a caller may read, one function per question, the same for every surface: a run (with its steps
 * and pending approvals), the caller's runs, the tenant's invoices and approvals. Each applies the
 * access rules (shared/runs/access.ts) and pages one way ({@link Page}): a page of up to `limit` items and
 * the opaque cursor of the next (null on the last page), a cursor the store did not issue for that
 * listing being INVALID_CURSOR.
 */
import { DomainError } from "../domain-errors.js";
import type { SecurityContext } from "../identity.js";
import type { ApprovalRecord } from "../store/approval-record.js";
import type { ApprovalStore } from "../store/approvals.js";
import { InvalidCursorError } from "../store/errors.js";
import type { Invoice } from "../store/invoice.js";
import type { LedgerStore } from "../store/ledger.js";
import type { RunStore } from "../store/runs.js";
import {
  BILLING_APPROVE,
  BILLING_READ,
  canSeeRun,
  requirePermission,
  runIfAllowed,
  runListUser,
} from "./access.js";
import { type PendingApprovalView, pendingApprovalsOf } from "./approval-service.js";
import type { AgentRunRecord, AgentRunShapes, AgentRunStep } from "./run-shapes.js";

/**
 * One page of a listing: its items, the cursor of the next page (null on the last), and when the
 * listing was asked for it, `total`: how many items the whole listing holds.
 */
export interface Page<T> {
  items: T[];
  nextCursor: string | null;
  total?: number;
}

/** Which page to read: its size (the edge bounds it) and the `nextCursor` of the page before, if any. */
export interface PageRequest {
  limit: number;
  cursor?: string | undefined;
}

/**
 * One page read through a store listing (`read` gets the size and the cursor when there is one).
 * @throws DomainError INVALID_CURSOR (`field: "cursor"`) for a cursor the store did not issue for this
 *   listing (malformed, tampered, another tenant's or another listing's); the store's errors otherwise
 */
export async function readPage<T>(
  request: PageRequest,
  read: (options: {
    limit: number;
    cursor?: string;
  }) => Promise<{ items: T[]; nextCursor: string | undefined; total?: number | undefined }>,
): Promise<Page<T>> {
  try {
    const page = await read({
      limit: request.limit,
      ...(request.cursor === undefined ? {} : { cursor: request.cursor }),
    });
    return {
      items: page.items,
      nextCursor: page.nextCursor ?? null,
      ...(page.total === undefined ? {} : { total: page.total }),
    };
  } catch (error) {
    if (!(error instanceof InvalidCursorError)) throw error;
    throw new DomainError("INVALID_CURSOR", "The cursor is not valid for this listing.", {
      facts: { field: "cursor" },
      cause: error,
    });
  }
}

/** A run as its readers see it: the record, its audit steps, and while it waits its pending approvals. */
export interface RunView {
  run: AgentRunRecord;
  steps: AgentRunStep[];
  pendingApprovals?: PendingApprovalView[];
}

/**
 * The run `runId` of the caller's tenant with its steps, if the caller may see it (its own, or any with
 * billing:read), and its pending approvals while it is `awaiting_approval`.
 * @throws DomainError NOT_FOUND (also for a run the caller may not see); the store's errors
 */
export async function readRun(
  deps: { runs: RunStore<AgentRunShapes>; approvals: Pick<ApprovalStore, "pendingForRun"> },
  security: SecurityContext,
  runId: string,
): Promise<RunView> {
  const found = runIfAllowed(
    await deps.runs.get(security.tenantId, runId),
    (run) => canSeeRun(security, run.run),
    runId,
  );
  if (found.run.status !== "awaiting_approval") return found;
  return { ...found, pendingApprovals: await pendingApprovalsOf(deps.approvals, security.tenantId, runId) };
}

/**
 * The record alone of the run `runId` (no steps), if the caller may see it: what a reader of the run's
 * events needs.
 * @throws DomainError NOT_FOUND; the store's errors
 */
export async function readRunRecord(
  runs: RunStore<AgentRunShapes>,
  security: SecurityContext,
  runId: string,
): Promise<AgentRunRecord> {
  return runIfAllowed(
    await runs.getRecord(security.tenantId, runId),
    (run) => canSeeRun(security, run),
    runId,
  );
}

/**
 * Which runs a listing holds: whose (`scope` "own", the default, is the caller's; "tenant" everyone's,
 * needing billing:read; `userId` narrows either, another user's needing billing:read: {@link
 * runListUser}), and which: `status` now, started at or after `from` and before `to` (ISO 8601 with
 * any offset), and `runId` a prefix of the run's id; `statuses` (any of them now) and `conversationId`
 * for listings in another protocol's terms (A2A's task state, context). `withTotal` also counts every run
 * the listing holds (the page's `total`: a read of the tenant's whole run listing, see
 * `RunStore.listPage`).
 */
export interface RunListRequest extends PageRequest {
  scope?: "own" | "tenant" | undefined;
  userId?: string | undefined;
  status?: string | undefined;
  from?: string | undefined;
  to?: string | undefined;
  runId?: string | undefined;
  statuses?: readonly string[] | undefined;
  conversationId?: string | undefined;
  /** Runs whose record changed strictly after this instant (any ISO 8601 form `Date.parse` reads). */
  updatedAfter?: string | undefined;
  withTotal?: boolean | undefined;
}

/**
 * One page of the runs the caller may list ({@link RunListRequest}), records without steps, newest
 * `startedAt` first; a page may hold fewer than `limit` while more follow (see `RunStore.listPage`).
 * @throws DomainError FORBIDDEN (another user's runs or the tenant's without billing:read),
 *   INVALID_CURSOR; the store's errors
 */
export function listRuns(
  runs: Pick<RunStore<AgentRunShapes>, "listPage">,
  security: SecurityContext,
  request: RunListRequest,
): Promise<Page<AgentRunRecord>> {
  const filter = {
    userId: runListUser(security, { scope: request.scope ?? "own", userId: request.userId }),
    status: request.status,
    startedFrom: request.from && new Date(request.from).toISOString(),
    startedBefore: request.to && new Date(request.to).toISOString(),
    runIdPrefix: request.runId,
    statuses: request.statuses,
    conversationId: request.conversationId,
    updatedAfter: request.updatedAfter && new Date(request.updatedAfter).toISOString(),
  };
  const withTotal = request.withTotal === true;
  return readPage(request, async (options) => {
    const page = await runs.listPage(security.tenantId, { ...options, filter, withTotal });
    return { items: page.runs, nextCursor: page.nextCursor, total: page.total };
  });
}

/**
 * One page of the tenant's invoices (needs billing:read): in invoice-id order (`order` "id", the
 * default: every invoice, read consistently), or newest `createdAt` first (`order` "newest": the
 * ledger's list, eventually consistent on AWS; a cursor belongs to the order it was issued for).
 * @throws DomainError FORBIDDEN, INVALID_CURSOR; the store's errors
 */
export function listInvoices(
  ledger: Pick<LedgerStore, "listPage" | "listNewestPage">,
  security: SecurityContext,
  request: PageRequest & { order?: "id" | "newest" | undefined },
): Promise<Page<Invoice>> {
  requirePermission(security, BILLING_READ);
  return readPage(request, async (options) => {
    const page =
      request.order === "newest"
        ? await ledger.listNewestPage(security.tenantId, options)
        : await ledger.listPage(security.tenantId, options);
    return { items: page.invoices, nextCursor: page.nextCursor };
  });
}

/**
 * One invoice of the tenant (needs billing:read).
 * @throws DomainError FORBIDDEN, NOT_FOUND; the store's errors
 */
export async function readInvoice(
  ledger: Pick<LedgerStore, "get">,
  security: SecurityContext,
  invoiceId: string,
): Promise<Invoice> {
  requirePermission(security, BILLING_READ);
  const invoice = await ledger.get(security.tenantId, invoiceId);
  if (!invoice) throw new DomainError("NOT_FOUND", `There is no invoice ${invoiceId}.`);
  return invoice;
}

/**
 * Which approvals a listing shows: `pending` (waiting for a decision) or `decided` (no longer pending:
 * approved, rejected, expired or cancelled).
 */
export type ApprovalListStatus = "pending" | "decided";

/**
 * One page of the tenant's approvals (needs billing:approve), every approver of the tenant seeing the
 * same ones: `pending` oldest `requestedAt` first, `decided` newest `decidedAt` first with who decided,
 * when and why (see `ApprovalStore.listPending` / `listDecided`). A page holds `limit` approvals unless it
 * is the last. Both read the listing index, eventually consistent on AWS: a decision moves an approval
 * from one list to the other within moments.
 * @throws DomainError FORBIDDEN, INVALID_CURSOR (a cursor of the other status's listing too); the
 *   store's errors
 */
export function listApprovals(
  approvals: Pick<ApprovalStore, "listPending" | "listDecided">,
  security: SecurityContext,
  request: PageRequest & { status: ApprovalListStatus },
): Promise<Page<ApprovalRecord>> {
  requirePermission(security, BILLING_APPROVE);
  return readPage(request, async (options) => {
    const page =
      request.status === "decided"
        ? await approvals.listDecided(security.tenantId, options)
        : await approvals.listPending(security.tenantId, options);
    return { items: page.approvals, nextCursor: page.nextCursor };
  });
}
