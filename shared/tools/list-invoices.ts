import * as z from "zod";
import { defineTool, type ToolDefinition } from "../agent/tool.js";
import type { Invoice } from "../store/invoice.js";
import type { LedgerStore } from "../store/ledger.js";
import { ListInvoicesOutput } from "./output-schemas.js";

/** Most invoices one listInvoices call returns. */
export const LIST_INVOICES_MAX = 50;
/** How many invoices listInvoices returns when `limit` is null. */
export const LIST_INVOICES_DEFAULT = 20;

/** listInvoices' input: `limit`, 1 to {@link LIST_INVOICES_MAX}, or null (or absent) for {@link LIST_INVOICES_DEFAULT}. */
export const ListInvoicesInput = z
  .object({
    limit: z
      .number()
      .int()
      .min(1)
      .max(LIST_INVOICES_MAX)
      // null is declared, not only stripped: the JSON Schemas a model and an MCP client see say it is accepted.
      .nullable()
      .optional()
      .describe(`How many invoices to return, 1-${LIST_INVOICES_MAX}; null for ${LIST_INVOICES_DEFAULT}.`),
  })
  .strict();

/**
 * What listInvoices returns: up to `limit` invoices of the caller's tenant in invoice-id order (not
 * creation order), and `hasMore` when the tenant has more.
 */
export interface ListInvoicesResult {
  invoices: Invoice[];
  count: number;
  hasMore: boolean;
}

/**
 * listInvoices: read-only, needs `billing:read`. Lists the caller's tenant's invoices (consistent read);
 * never another tenant's, since the tenant is the partition key.
 */
export function listInvoicesTool(ledger: LedgerStore): ToolDefinition<typeof ListInvoicesInput> {
  return defineTool({
    name: "listInvoices",
    description:
      `List the caller's tenant's recorded invoices, at most ${LIST_INVOICES_MAX} (limit null: ` +
      `${LIST_INVOICES_DEFAULT}), in invoice-id order, not by date; hasMore says whether there are more. ` +
      "Amounts are exact decimal strings (amount) plus integer minor units (minorUnits). Needs the " +
      "billing:read permission.",
    inputSchema: ListInvoicesInput,
    isMutating: false,
    hints: { readOnly: true, destructive: false, idempotent: true },
    outputSchema: ListInvoicesOutput,
    requiredPermission: "billing:read",
    handler: async (input, security, context): Promise<ListInvoicesResult> => {
      const limit = input.limit ?? LIST_INVOICES_DEFAULT;
      const { invoices, nextCursor } = await ledger.listPage(security.tenantId, { limit }, context.signal);
      return { invoices, count: invoices.length, hasMore: nextCursor !== undefined };
    },
  });
}
