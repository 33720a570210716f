import { listInvoices, readInvoice } from "../../../shared/runs/queries.js";
import { getInvoiceRoute, listInvoicesRoute } from "../contract/invoices.js";
import { type GetDeps, routeGroup } from "./deps.js";

/** `GET /v1/invoices` and `GET /v1/invoices/{invoiceId}` (billing:read, the caller's tenant only). */
export function invoiceRoutes(deps: GetDeps) {
  return routeGroup()
    .openapi(listInvoicesRoute, async (c) => {
      return c.json(await listInvoices(deps().ledger, c.get("security"), c.req.valid("query")), 200);
    })
    .openapi(getInvoiceRoute, async (c) => {
      return c.json(await readInvoice(deps().ledger, c.get("security"), c.req.valid("param").invoiceId), 200);
    });
}
