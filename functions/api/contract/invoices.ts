/** The HTTP contract of the ledger: `GET /v1/invoices` and `GET /v1/invoices/{invoiceId}`. */

import { createRoute, z } from "@hono/zod-openapi";
import { MoneyValueSchema } from "../../../shared/money/money.js";
import { InvoiceSchema as LedgerInvoiceSchema } from "../../../shared/store/invoice.js";
import { InvoiceListQuery, security } from "./common.js";
import { authErrors, problem } from "./problems.js";

/**
 * Money as the contract publishes it: the one money schema, as the component `Money`. `.strict()` (which
 * it is already) makes a new instance: one zod built before @hono/zod-openapi extended it has no `.openapi`.
 */
const MoneySchema = MoneyValueSchema.strict().openapi("Money", {
  description: "Exact decimal string plus integer minor units (ISO 4217).",
});

/**
 * An invoice of the ledger as `GET /v1/invoices…` return it: the invoice's one schema
 * (shared/store/invoice.ts), strict, its amounts referring to the component `Money`.
 */
export const InvoiceSchema = LedgerInvoiceSchema.extend({
  subtotal: MoneySchema,
  taxAmount: MoneySchema,
  grossTotal: MoneySchema,
}).openapi("Invoice");

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
