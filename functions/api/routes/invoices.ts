import { ProblemError } from "../../../shared/errors.js";
import { BILLING_READ, requirePermission } from "../../../shared/runs/permissions.js";
import { getInvoiceRoute, listInvoicesRoute } from "../contract/invoices.js";
import { listInvoicePage } from "../pagination.js";
import { type GetDeps, routeGroup } from "./deps.js";

/** `GET /v1/invoices` and `GET /v1/invoices/{invoiceId}` (billing:read, the caller's tenant only). */
export function invoiceRoutes(deps: GetDeps) {
  return routeGroup()
    .openapi(listInvoicesRoute, async (c) => {
      const security = requirePermission(c.get("security"), BILLING_READ);
      return c.json(await listInvoicePage(deps().ledger, security.tenantId, c.req.valid("query")), 200);
    })
    .openapi(getInvoiceRoute, async (c) => {
      const security = requirePermission(c.get("security"), BILLING_READ);
      const { invoiceId } = c.req.valid("param");
      const invoice = await deps().ledger.get(security.tenantId, invoiceId);
      if (!invoice) throw new ProblemError("NOT_FOUND", `There is no invoice ${invoiceId}.`);
      return c.json(invoice, 200);
    });
}
