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

/**
 * One line for a run event as `npm start -- --watch` prints it while the run goes on: its sequence, its
 * type and what it says (cycle, tool, status, error code, tokens, latency in ms). `event` is the JSON
 * data of one SSE event of the run's stream (docs/run-events.md).
 */
export function formatRunEvent(event: Record<string, unknown>): string {
  const cycle = event.cycle === undefined ? "" : `cycle ${String(event.cycle)} `;
  const usage = event.usage as { totalTokens?: number } | undefined;
  const detail = (() => {
    switch (event.type) {
      case "run.started": {
        const limits = event.limits as { maxCycles: number; timeoutMs: number };
        return `max ${limits.maxCycles} cycles, ${limits.timeoutMs} ms${event.previousRunId ? `, continues ${String(event.previousRunId)}` : ""}`;
      }
      case "model.call.finished":
        return `${cycle}${String(event.finishReason ?? "no reply")}, ${usage?.totalTokens ?? 0} tokens, ${String(event.latencyMs)} ms${event.summary ? " (summary)" : ""}`;
      case "tool.call.started":
        return `${cycle}${String(event.name)} ${JSON.stringify(event.arguments)}`;
      case "tool.call.finished":
        return `${cycle}${String(event.name)} ${String(event.status)}${event.errorCode ? ` ${String(event.errorCode)}` : ""}, ${String(event.latencyMs)} ms${event.idempotencyKey ? `, key ${String(event.idempotencyKey)}` : ""}`;
      case "approval.requested":
        return `${cycle}${String(event.toolName)} waits for approval ${String(event.approvalId)}`;
      case "approval.decided":
        return `${String(event.approvalId)} ${String(event.decision)} by ${String(event.decidedBy ?? "?")}`;
      case "approval.expired":
        return String(event.approvalId);
      case "answer.ungrounded": {
        const numbers = (event.ungrounded ?? []) as Array<{ text: string }>;
        return `${numbers.map((number) => number.text).join(", ")} (${String(event.action)})`;
      }
      case "run.finished":
        return `${String(event.status)}${event.reason ? ` (${String(event.reason)})` : ""}, ${String(event.cycles ?? 0)} cycle(s), ${usage?.totalTokens ?? 0} tokens, ${String(event.durationMs ?? "?")} ms`;
      default:
        return "";
    }
  })();
  return `  [${String(event.seq)}] ${String(event.type).padEnd(19)} ${detail}`.trimEnd();
}
