import * as z from "zod";
import { defineTool, ToolBusinessError, type ToolDefinition } from "../agent/tool.js";
import type { Invoice } from "../store/invoice.js";
import type { LedgerStore } from "../store/ledger.js";
import { GetInvoiceOutput } from "./output-schemas.js";

/** getInvoice's input: an invoice id as recordInvoice returned it (`inv_` + 24 hex characters). */
export const GetInvoiceInput = z
  .object({
    invoiceId: z
      .string()
      .trim()
      .regex(/^inv_[0-9a-f]{24}$/, "an invoiceId returned by recordInvoice (inv_ and 24 hex characters)")
      .describe("The invoiceId returned by recordInvoice."),
  })
  .strict();

/**
 * getInvoice: read-only, needs `billing:read`. Returns one invoice of the caller's tenant (consistent
 * read), so the model can confirm what was recorded.
 * @throws (as a tool result) business_error INVOICE_NOT_FOUND when the tenant has no such invoice
 *   (another tenant's invoice is not found either)
 */
export function getInvoiceTool(ledger: LedgerStore): ToolDefinition<typeof GetInvoiceInput> {
  return defineTool({
    name: "getInvoice",
    description:
      "Read one recorded invoice of the caller's tenant by invoiceId, to confirm what was recorded. Amounts " +
      "are exact decimal strings (amount) plus integer minor units (minorUnits). Unknown ids give " +
      "INVOICE_NOT_FOUND. Needs the billing:read permission.",
    inputSchema: GetInvoiceInput,
    isMutating: false,
    hints: { readOnly: true, destructive: false, idempotent: true },
    outputSchema: GetInvoiceOutput,
    requiredPermission: "billing:read",
    handler: async (input, security, context): Promise<{ invoice: Invoice }> => {
      const invoice = await ledger.get(security.tenantId, input.invoiceId, context.signal);
      if (!invoice) {
        throw new ToolBusinessError(
          "INVOICE_NOT_FOUND",
          `There is no invoice ${input.invoiceId} for this tenant.`,
          { invoiceId: input.invoiceId },
        );
      }
      return { invoice };
    },
  });
}
