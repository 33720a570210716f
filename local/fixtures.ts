import { randomUUID } from "node:crypto";
import { dispatchToolCall } from "../shared/agent/dispatcher.js";
import type { ApiDeps } from "../shared/deps.js";

/**
 * recordInvoice arguments for the scripted model (JSON text), over a fresh real quote: calculateTax runs
 * for `owner` (a tenant id, or the tenant and user: a quote is recorded only by the user it was made
 * for, so pass the user the run will act as; default user `usr_idem`) through the dispatcher (100.00 GBP in GB) under a run scope of its own (quote ids are
 * derived from the operation, and a quote is recorded at most once), and its quoteId goes into the
 * arguments. The one place tests and benchmarks spell recordInvoice's input.
 * @throws Error when calculateTax does not succeed
 */
export async function quotedRecordInvoiceArgs(
  deps: Pick<ApiDeps, "tools">,
  owner: string | { tenantId: string; userId: string },
  clientName = "Acme Ltd",
): Promise<string> {
  const { tenantId, userId } = typeof owner === "string" ? { tenantId: owner, userId: "usr_idem" } : owner;
  const quote = await dispatchToolCall(
    {
      id: "call_quote",
      name: "calculateTax",
      arguments: JSON.stringify({
        amount: "100.00",
        currency: "GBP",
        jurisdiction: "GB",
        taxPointDate: null,
      }),
    },
    deps.tools,
    { userId, tenantId, permissions: [] },
    {
      runId: "run_quote",
      runScope: `run_quote_${randomUUID()}`,
      occurrence: 0,
      signal: new AbortController().signal,
    },
  );
  const quoteId = (quote.data as { quoteId?: string } | null)?.quoteId;
  if (quote.status !== "success" || !quoteId)
    throw new Error(`calculateTax failed: ${JSON.stringify(quote.error)}`);
  return JSON.stringify({ clientName, quoteId, clientReference: null, description: null });
}
