import * as z from "zod";
import { MoneyValueSchema } from "../money/money.js";
import { InvoiceSchema } from "../store/invoice.js";

/**
 * The shapes of the accounting tools' successful results, declared once as zod and published as MCP
 * `outputSchema` (the result's `structuredContent`). Objects are loose (extra fields allowed) so a field
 * added to a result is not a breaking change for clients that validate; the fields listed are always there.
 */

/** An exact amount as a tool returns it: the one money schema ({@link MoneyValueSchema}), loose. */
export const MoneyOutput = MoneyValueSchema.loose();

/**
 * One recorded invoice as a tool returns it: the invoice's schema (shared/store/invoice.ts), loose,
 * without the two fields that are the ledger's bookkeeping and not for a client to act on (its tenant
 * is the caller's; its tool idempotency key is an internal retry key). They are in the data all the same.
 */
export const InvoiceOutput = InvoiceSchema.omit({ tenantId: true, idempotencyKey: true })
  .extend({ subtotal: MoneyOutput, taxAmount: MoneyOutput, grossTotal: MoneyOutput })
  .loose();

/** calculateTax's result: the stored quote (shared/tools/calculate-tax.ts `CalculateTaxResult`). */
export const CalculateTaxOutput = z.looseObject({
  quoteId: z.string(),
  jurisdiction: z.string(),
  currency: z.string(),
  rateVersion: z.string(),
  rate: z.string(),
  taxPointDate: z.string(),
  subtotal: MoneyOutput,
  taxAmount: MoneyOutput,
  grossTotal: MoneyOutput,
  expiresAt: z.string(),
});

/** recordInvoice's result: the invoice, and whether this call replayed an earlier recording of it. */
export const RecordInvoiceOutput = z.looseObject({ invoice: InvoiceOutput, replayed: z.boolean() });

/** getInvoice's result. */
export const GetInvoiceOutput = z.looseObject({ invoice: InvoiceOutput });

/** listInvoices' result. */
export const ListInvoicesOutput = z.looseObject({
  invoices: z.array(InvoiceOutput),
  count: z.number().int(),
  hasMore: z.boolean(),
});
