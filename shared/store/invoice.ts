/**
 * The invoice: one zod schema, the source of its type, of what the ledger stores and reads back
 * (shared/store/ledger.ts), of the tools' output schemas (shared/tools/output-schemas.ts) and of the HTTP
 * contract's `Invoice` (functions/api/contract/invoices.ts), each derived from it. No store code here, so
 * the contract imports the schema without the ledger.
 */
import * as z from "zod";
import { MoneyValueSchema } from "../money/money.js";

/**
 * An invoice in the ledger. Every amount was copied from a backend-computed tax quote (calculateTax);
 * money is a decimal string plus integer minor units, never a float ({@link MoneyValueSchema}).
 * - `quoteId`: the quote the amounts came from; `rateVersion`, `rate`, `taxPointDate` (YYYY-MM-DD)
 *   identify the tax rule row used
 * - `clientReference`, `description`: optional free text from the caller (null when not given)
 * - `idempotencyKey`: the tool idempotency key of the operation that recorded it: a retry with the same
 *   key replays this invoice; another key recording the same quote gets `QuoteAlreadyRecordedError`
 * - `runId`, `createdBy`: the run and user that recorded it; `createdAt`: ISO 8601 UTC
 * Strict: an object with a field it does not name fails the parse.
 */
export const InvoiceSchema = z
  .object({
    invoiceId: z.string(),
    tenantId: z.string(),
    clientName: z.string(),
    clientReference: z.string().nullable().describe("The client's own reference, if given."),
    description: z.string().nullable(),
    quoteId: z.string().describe("The calculateTax quote the amounts come from."),
    jurisdiction: z.string(),
    currency: z.string(),
    rateVersion: z.string().describe("Version of the tax rule the rate comes from."),
    rate: z.string(),
    taxPointDate: z.string().describe("The date the tax rule was chosen for (YYYY-MM-DD)."),
    subtotal: MoneyValueSchema,
    taxAmount: MoneyValueSchema,
    grossTotal: MoneyValueSchema,
    idempotencyKey: z.string(),
    runId: z.string(),
    createdBy: z.string(),
    createdAt: z.string(),
  })
  .strict();

/** An invoice in the ledger, see {@link InvoiceSchema}. */
export type Invoice = z.infer<typeof InvoiceSchema>;

/** The invoice fields a caller supplies; the id and audit fields are derived. */
export type NewInvoice = Omit<Invoice, "invoiceId" | "idempotencyKey" | "createdAt">;
