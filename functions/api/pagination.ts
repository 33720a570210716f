import { ProblemError } from "../../shared/errors.js";
import type { Page } from "../../shared/runs/approvals.js";
import { InvalidCursorError } from "../../shared/store/errors.js";
import type { Invoice, LedgerStore } from "../../shared/store/ledger.js";

/**
 * One page of `GET /v1/invoices` for the caller's tenant: up to `limit` invoices in invoice-id order (or
 * newest first, `order: "newest"`) and `nextCursor` (null on the last page). Cursors are the store's (`LedgerStore.listPage`): opaque here,
 * passed through as they are.
 * @param query.limit page size, already validated by the route (1 to `INVOICE_PAGE.max`)
 * @param query.cursor the `nextCursor` of an earlier page, if any
 * @throws ProblemError INVALID_REQUEST (400) when the cursor is not one the store issued for this
 *   tenant's invoices (malformed, tampered, or another tenant's); the store's errors otherwise
 */
export async function listInvoicePage(
  ledger: LedgerStore,
  tenantId: string,
  query: { limit: number; cursor?: string | undefined; order?: "id" | "newest" },
): Promise<Page<Invoice>> {
  return withCursorProblem(async () => {
    const options = { limit: query.limit, ...(query.cursor === undefined ? {} : { cursor: query.cursor }) };
    const page =
      query.order === "newest"
        ? await ledger.listNewestPage(tenantId, options)
        : await ledger.listPage(tenantId, options);
    return { items: page.invoices, nextCursor: page.nextCursor ?? null };
  });
}

/**
 * Runs one page read of a listing; a cursor the store did not issue for it (InvalidCursorError) becomes
 * 400 INVALID_REQUEST naming the `cursor` query parameter.
 * @throws ProblemError INVALID_REQUEST; anything else `read` throws
 */
export async function withCursorProblem<T>(read: () => Promise<T>): Promise<T> {
  try {
    return await read();
  } catch (error) {
    if (!(error instanceof InvalidCursorError)) throw error;
    throw new ProblemError("INVALID_REQUEST", "The cursor is not valid for this listing.", {
      cause: error,
      extensions: { errors: [{ in: "query", path: "cursor", message: "unknown or malformed cursor" }] },
    });
  }
}
