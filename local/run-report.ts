/**
 * The terminal report of a run and of a tenant's ledger, as `npm start` prints them, shared with
 * `npm run smoke` (local/smoke.ts) so a deployed API's run reads line for line like the local one.
 */
import type { ToolResult } from "../shared/agent/result.js";
import { formatTable } from "./format.js";

/** The ledger columns the report shows; both the ledger store's invoices and the API's have them. */
export interface LedgerRow {
  invoiceId: string;
  clientName: string;
  jurisdiction: string;
  subtotal: { amount: string };
  taxAmount: { amount: string };
  grossTotal: { amount: string };
  currency: string;
  createdBy: string;
}

/**
 * A run's outcome: status, cycles and duration (ms), the continued run, the answer, and one table row
 * per tool result (tool, status, error code, latency, the backend's values). `body` is a run as
 * `POST /v1/runs` answers it (its `toolResults`).
 */
export function formatOutcome(body: Record<string, unknown>): string {
  const toolResults = (body.toolResults ?? []) as ToolResult[];
  const history = body.history as { messages: number; droppedMessages: number } | null;
  const lines = [
    `\nRun ${String(body.runId)}: ${String(body.status)} after ${String(body.cycles)} cycle(s) in ${String(body.durationMs)} ms` +
      (body.reason ? ` (${String(body.reason)})` : ""),
  ];
  if (body.previousRunId) {
    lines.push(
      `Continues ${String(body.previousRunId)} with ${history?.messages ?? 0} earlier message(s)` +
        (history?.droppedMessages ? ` (${history.droppedMessages} older dropped)` : ""),
    );
  }
  lines.push(`\nAnswer:\n${String(body.answer ?? "(none)").replace(/^/gm, "  ")}`);
  lines.push("\nTool results:");
  lines.push(
    formatTable(
      ["tool", "status", "error code", "latency", "result"],
      toolResults.map((r) => [
        r.metadata.toolName,
        r.status,
        r.error?.code ?? "",
        `${r.metadata.latencyMs} ms`,
        r.status === "success" ? summarizeData(r.data) : (r.error?.message ?? ""),
      ]),
    ),
  );
  return lines.join("\n");
}

/** One line per successful result, copying the backend's values. */
function summarizeData(data: unknown): string {
  const d = data as Record<string, unknown>;
  const amount = (value: unknown) => (value as { amount?: string } | undefined)?.amount;
  if (d.invoice) {
    const invoice = d.invoice as Record<string, unknown>;
    return `invoice ${String(invoice.invoiceId)} for ${String(invoice.clientName)}${d.replayed ? " (replayed)" : ""}`;
  }
  return `jurisdiction ${String(d.jurisdiction)}, rate ${String(d.rate)}, subtotal ${amount(d.subtotal)}, tax amount ${amount(d.taxAmount)}, gross total ${amount(d.grossTotal)}, currency ${String(d.currency)}`;
}

/** A tenant's ledger: a heading with the invoice count, then one row per invoice. */
export function formatLedger(tenantId: string, invoices: readonly LedgerRow[]): string {
  return [
    `\nLedger for ${tenantId} (${invoices.length} invoice${invoices.length === 1 ? "" : "s"}):`,
    formatTable(
      [
        "invoiceId",
        "client",
        "jurisdiction",
        "subtotal",
        "tax amount",
        "gross total",
        "currency",
        "created by",
      ],
      invoices.map((i) => [
        i.invoiceId,
        i.clientName,
        i.jurisdiction,
        i.subtotal.amount,
        i.taxAmount.amount,
        i.grossTotal.amount,
        i.currency,
        i.createdBy,
      ]),
    ),
  ].join("\n");
}
