/** The HTTP contract of the ledger: `GET /v1/invoices` and `GET /v1/invoices/{invoiceId}`. */

import { createRoute, z } from "@hono/zod-openapi";
import type { Invoice } from "../../../shared/store/ledger.js";
import { InvoiceListQuery, type Same, sameShape, security } from "./common.js";
import { authErrors, problem } from "./problems.js";

const MoneySchema = z
  .object({ amount: z.string(), minorUnits: z.number().int(), currency: z.string() })
  .strict()
  .openapi("Money", { description: "Exact decimal string plus integer minor units (ISO 4217)." });

/** An invoice of the ledger (`Invoice` in shared/store/ledger.ts); amounts are exact decimal strings. */
export const InvoiceSchema = z
  .object({
    invoiceId: z.string(),
    tenantId: z.string(),
    clientName: z.string(),
    clientReference: z.string().nullable().openapi({ description: "The client's own reference, if given." }),
    description: z.string().nullable(),
    quoteId: z.string().openapi({ description: "The calculateTax quote the amounts come from." }),
    jurisdiction: z.string(),
    currency: z.string(),
    rateVersion: z.string().openapi({ description: "Version of the tax rule the rate comes from." }),
    rate: z.string(),
    taxPointDate: z.string().openapi({ description: "The date the tax rule was chosen for (YYYY-MM-DD)." }),
    subtotal: MoneySchema,
    taxAmount: MoneySchema,
    grossTotal: MoneySchema,
    idempotencyKey: z.string(),
    runId: z.string(),
    createdBy: z.string(),
    createdAt: z.string(),
  })
  .strict()
  .openapi("Invoice");

/** 200 body of `GET /v1/invoices`: one page and the cursor of the next. */
export const InvoicePageSchema = z
  .object({
    items: z.array(InvoiceSchema),
    nextCursor: z
      .string()
      .nullable()
      .openapi({ description: "Pass as `cursor` for the next page; null on the last page." }),
  })
  .strict()
  .openapi("InvoicePage");

/** Path parameters of `GET /v1/invoices/{invoiceId}`. */
export const InvoiceIdParam = z.object({
  invoiceId: z
    .string()
    .regex(/^[A-Za-z0-9_-]{1,64}$/)
    .openapi({ param: { name: "invoiceId", in: "path" }, example: "inv_f0fe8491dc0c6e51d9d6d30e" }),
});

/** Query of `GET /v1/invoices`: page size, cursor and `order` (`id` or `newest`). */
const InvoicesQuery = InvoiceListQuery.extend({
  order: z
    .enum(["id", "newest"])
    .default("id")
    .openapi({
      param: { name: "order", in: "query" },
      description:
        "`id` (default): invoice-id order, every invoice. `newest`: newest `createdAt` first (a cursor belongs to the order it was issued for).",
    }),
});

/** `GET /v1/invoices`: the tenant's ledger, paginated (needs billing:read). */
export const listInvoicesRoute = createRoute({
  method: "get",
  path: "/v1/invoices",
  summary: "The tenant's invoices, a page at a time (needs billing:read)",
  security,
  request: { query: InvoicesQuery },
  responses: {
    200: {
      description:
        "One page: in invoice-id order (`order=id`, the default: every invoice, read consistently), or newest first (`order=newest`: the ledger's list, eventually consistent on AWS, without invoices recorded before the list existed).",
      content: { "application/json": { schema: InvoicePageSchema } },
    },
    400: problem("INVALID_REQUEST: bad `limit` or `cursor`."),
    403: problem("FORBIDDEN: the caller lacks billing:read."),
    ...authErrors,
  },
});

/** `GET /v1/invoices/{invoiceId}`: one invoice of the tenant (needs billing:read). */
export const getInvoiceRoute = createRoute({
  method: "get",
  path: "/v1/invoices/{invoiceId}",
  summary: "One invoice of the tenant (needs billing:read)",
  security,
  request: { params: InvoiceIdParam },
  responses: {
    200: { description: "The invoice.", content: { "application/json": { schema: InvoiceSchema } } },
    400: problem("INVALID_REQUEST: malformed invoiceId."),
    403: problem("FORBIDDEN: the caller lacks billing:read."),
    404: problem("NOT_FOUND: the tenant has no such invoice."),
    ...authErrors,
  },
});

/** One invoice as `GET /v1/invoices…` return it. */
export type InvoiceResponse = z.infer<typeof InvoiceSchema>;

// The domain type the routes return is exactly its schema's type: a field added to one and not the
// other fails `tsc` here.
sameShape<Same<Invoice, InvoiceResponse>>(true);
