import { createRegistry, type ToolRegistry } from "../agent/dispatcher.js";
import type { LedgerStore } from "../store/ledger.js";
import type { QuoteStore } from "../store/quotes.js";
import { calculateTaxTool } from "./calculate-tax.js";
import { getInvoiceTool } from "./get-invoice.js";
import { listInvoicesTool } from "./list-invoices.js";
import { recordInvoiceTool } from "./record-invoice.js";

/**
 * What the accounting tools use.
 * - `ledger`, `quotes`: the stores
 * - `quoteTtlSeconds`: lifetime of a tax quote (config QUOTE_TTL_SECONDS)
 * - `clock`: current time, for "today" and quote expiry (defaults to the system clock; tests inject one)
 */
export interface ToolDeps {
  ledger: LedgerStore;
  quotes: QuoteStore;
  quoteTtlSeconds: number;
  clock?: () => Date;
}

/** Builds the accounting tool registry: calculateTax, recordInvoice, getInvoice, listInvoices. */
export function accountingTools(deps: ToolDeps): ToolRegistry {
  return createRegistry([
    calculateTaxTool(deps),
    recordInvoiceTool(deps),
    getInvoiceTool(deps.ledger),
    listInvoicesTool(deps.ledger),
  ]);
}
