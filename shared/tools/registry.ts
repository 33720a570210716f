import { createRegistry, type ToolRegistry } from "../agent/dispatcher.js";
import type { ToolDefinition } from "../agent/tool.js";
import type { LedgerStore } from "../store/ledger.js";
import { calculateTaxTool } from "./calculate-tax.js";
import { recordInvoiceTool } from "./record-invoice.js";

/** The stores the accounting tools use. */
export interface ToolDeps {
  ledger: LedgerStore;
}

/** Builds the accounting tool registry (calculateTax, recordInvoice) over the given stores. */
export function accountingTools(deps: ToolDeps): ToolRegistry {
  return createRegistry([calculateTaxTool, recordInvoiceTool(deps.ledger)] as unknown as ToolDefinition[]);
}
