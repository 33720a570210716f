import * as z from "zod";

/**
 * The shapes of the accounting tools' successful results, declared once as zod and published as MCP
 * `outputSchema` (the result's `structuredContent`). Objects are loose (extra fields allowed) so a field
 * added to a result is not a breaking change for clients that validate; the fields listed are always there.
 */

/** An exact amount: decimal string in major units, integer minor units, ISO 4217 currency. */
export const MoneyOutput = z.looseObject({
  amount: z.string().describe('Exact decimal string in major units, e.g. "1500.00".'),
  minorUnits: z.number().int().describe("The same amount in integer minor units (pence, cents)."),
  currency: z.string().describe("ISO 4217 code."),
});

/** One recorded invoice (shared/store/ledger.ts `Invoice`). */
export const InvoiceOutput = z.looseObject({
  invoiceId: z.string(),
  clientName: z.string(),
  clientReference: z.string().nullable(),
  description: z.string().nullable(),
  quoteId: z.string(),
  jurisdiction: z.string(),
  currency: z.string(),
  rateVersion: z.string(),
  rate: z.string(),
  taxPointDate: z.string(),
  subtotal: MoneyOutput,
  taxAmount: MoneyOutput,
  grossTotal: MoneyOutput,
  runId: z.string(),
  createdBy: z.string(),
  createdAt: z.string(),
});

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
