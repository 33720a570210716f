import * as z from "zod";
import { defineTool, ToolBusinessError, type ToolDefinition, type ToolFacts } from "../agent/tool.js";
import { computeTax, Decimal } from "../money/money.js";
import type { Invoice } from "../store/invoice.js";
import { invoiceIdForQuote, type LedgerStore, QuoteAlreadyRecordedError } from "../store/ledger.js";
import { QUOTE_ID_PATTERN, type Quote, type QuoteStore } from "../store/quotes.js";
import { RecordInvoiceOutput } from "./output-schemas.js";
import { TaxFacts, taxFactsOf } from "./tax-facts.js";

/**
 * recordInvoice's input: who the invoice is for and which quote to record. It has no amount, tax, rate
 * or currency field, and extra properties are rejected, so no number from the model can reach the
 * ledger: every amount is copied from the stored quote.
 * - `clientName`: 1-200 chars; `quoteId`: from calculateTax
 * - `clientReference` (1-64 chars, e.g. a purchase order number) and `description` (1-500 chars):
 *   optional, null (or absent) when not given
 */
export const RecordInvoiceInput = z
  .object({
    clientName: z
      .string()
      .trim()
      .min(1)
      .max(200)
      .describe("The client's name as the user gave it (1-200 chars)."),
    quoteId: z
      .string()
      .trim()
      .regex(QUOTE_ID_PATTERN, "a quoteId returned by calculateTax (qt_ and 32 hex characters)")
      .describe("The quoteId from a successful calculateTax call in this conversation."),
    clientReference: z
      .string()
      .trim()
      .min(1)
      .max(64)
      // null is declared, not only stripped: the JSON Schemas a model and an MCP client see say it is accepted.
      .nullable()
      .optional()
      .describe("The client's own reference, e.g. a purchase order number (1-64 chars), or null."),
    description: z
      .string()
      .trim()
      .min(1)
      .max(500)
      // null is declared, not only stripped: the JSON Schemas a model and an MCP client see say it is accepted.
      .nullable()
      .optional()
      .describe("What the invoice is for (1-500 chars), or null."),
  })
  .strict();

/**
 * What recordInvoice needs: the ledger, the quote store, and a clock (defaults to the system clock) that
 * decides whether a quote has expired.
 */
export interface RecordInvoiceDeps {
  ledger: LedgerStore;
  quotes: QuoteStore;
  clock?: () => Date;
}

/**
 * The caller's own quote: a quote belongs to the user who calculated it (its `createdBy`), so another
 * user's quote, even in the same tenant, is `missing`, the same answer as an unknown id (no hint that it
 * exists). The hostile suite's foreign-user-ids attack (docs/evals.md) found it recordable before.
 */
async function ownQuote(
  deps: Pick<RecordInvoiceDeps, "quotes">,
  security: { tenantId: string; userId: string },
  quoteId: string,
  nowMs: number,
  signal: AbortSignal | undefined,
): Promise<Awaited<ReturnType<QuoteStore["lookup"]>>> {
  const found = await deps.quotes.lookup(security.tenantId, quoteId, nowMs, signal);
  return found.kind !== "missing" && found.quote.createdBy !== security.userId ? { kind: "missing" } : found;
}

/**
 * recordInvoice's facts (docs/policies.md): its quote's amounts, currency and jurisdiction, read from the
 * caller's own quote (see ownQuote), so a policy sees the backend's numbers, never the model's. A quote
 * that is missing or expired gives none: the call then fails QUOTE_NOT_FOUND / QUOTE_EXPIRED as usual,
 * or returns the invoice a retry of the same operation already recorded, and writes nothing new. Before
 * a person is asked to approve a call, `settled` ({@link recordedByAnother}) tells whether another
 * operation already recorded the quote: such a call cannot record a second invoice, so nobody signs off
 * on an invoice that exists; it runs and the tool answers QUOTE_ALREADY_RECORDED.
 * @throws the quote store's errors (the call then does not run: POLICY_CHECK_FAILED)
 */
function invoiceFacts(
  deps: RecordInvoiceDeps,
  clock: () => Date,
  read: QuoteReads,
): ToolFacts<typeof RecordInvoiceInput> {
  return {
    schema: TaxFacts,
    metered: true,
    read: async (input, security, context) => {
      const found = await read.forFacts(input, () =>
        ownQuote(deps, security, input.quoteId, clock().getTime(), context.signal),
      );
      return found.kind === "live" ? taxFactsOf(found.quote) : null;
    },
    settled: (input, security, context) => recordedByAnother(deps, security.tenantId, input.quoteId, context),
    replayed: (output) => (output as Partial<RecordedInvoice> | null)?.replayed === true,
  };
}

/**
 * Whether the ledger of `tenantId` holds the invoice of `quoteId` under another operation's idempotency
 * key than `context.operationKey`'s, i.e. whether this call is certain to be QUOTE_ALREADY_RECORDED (an
 * invoice is never deleted or changed, so the answer cannot turn back before the call runs). Whenever it
 * cannot tell, it answers false and the call is decided on its facts as usual, so a policy that asks for
 * approval still asks (fail closed): no operation key, or a failed read (never an error that skips an
 * approval).
 */
async function recordedByAnother(
  deps: Pick<RecordInvoiceDeps, "ledger">,
  tenantId: string,
  quoteId: string,
  context: { signal: AbortSignal; operationKey?: () => string },
): Promise<boolean> {
  if (!context.operationKey) return false;
  try {
    const existing = await deps.ledger.get(tenantId, invoiceIdForQuote(quoteId), context.signal);
    return existing !== undefined && existing.idempotencyKey !== context.operationKey();
  } catch {
    return false;
  }
}

type QuoteLookup = Awaited<ReturnType<QuoteStore["lookup"]>>;

/**
 * One read of the quote per call: the facts' read (before the policy decision) keeps its lookup for the
 * handler of the same call, keyed by the call's validated arguments object (the dispatcher passes the
 * same object to both), so a call under policies reads its quote once, not twice. A call resumed after
 * an approval has new arguments and reads again; the handler takes a kept lookup once and re-checks the
 * quote's expiry at its own time. Quotes are never changed once written, so the kept item is current.
 */
class QuoteReads {
  private readonly kept = new WeakMap<object, Promise<QuoteLookup>>();

  /** Reads for the facts and keeps the lookup for the call's handler. */
  forFacts(input: object, read: () => Promise<QuoteLookup>): Promise<QuoteLookup> {
    const pending = read();
    this.kept.set(input, pending);
    // A failed read refuses the call (fail closed): nothing to keep, and no unhandled rejection.
    pending.catch(() => this.kept.delete(input));
    return pending;
  }

  /** The kept lookup of this call (taken once, its expiry checked at `nowMs`), else a fresh read. */
  async forHandler(input: object, nowMs: number, read: () => Promise<QuoteLookup>): Promise<QuoteLookup> {
    const kept = this.kept.get(input);
    if (!kept) return read();
    this.kept.delete(input);
    const found = await kept.catch(() => undefined);
    if (!found) return read();
    if (found.kind === "live" && nowMs >= Date.parse(found.quote.expiresAt))
      return { kind: "expired", quote: found.quote };
    return found;
  }
}

/**
 * Recomputes a stored quote from its own subtotal and rule, so a damaged or hand-edited item cannot
 * reach the ledger.
 * @throws Error when the stored amounts differ from the recomputation
 */
function assertQuoteConsistent(quote: Quote): void {
  const again = computeTax(new Decimal(quote.subtotal.amount), quote.rate, quote.currency, quote.rounding);
  const same = (["subtotal", "taxAmount", "grossTotal"] as const).every(
    (key) =>
      again[key].amount === quote[key].amount &&
      again[key].minorUnits === quote[key].minorUnits &&
      again[key].currency === quote[key].currency,
  );
  if (!same) throw new Error(`Stored quote ${quote.quoteId} does not match its own recomputation.`);
}

/** The business error for a quote another operation already recorded, naming its invoice. */
function alreadyRecorded(invoice: Invoice): ToolBusinessError {
  return new ToolBusinessError(
    "QUOTE_ALREADY_RECORDED",
    `Quote ${invoice.quoteId} is already recorded as invoice ${invoice.invoiceId} (for ${invoice.clientName}, created ${invoice.createdAt}); a quote is recorded at most once. Use that invoice, or call calculateTax again for a new quote.`,
    { quoteId: invoice.quoteId, invoiceId: invoice.invoiceId, runId: invoice.runId },
  );
}

/** What recordInvoice returns: the invoice, and whether an earlier call of the same operation wrote it. */
interface RecordedInvoice {
  invoice: Invoice;
  replayed: boolean;
}

/**
 * A call whose quote is not live (gone, or expired): a retry of the operation that recorded it returns
 * its invoice, even once the quote has gone; otherwise it is refused.
 * @throws ToolBusinessError QUOTE_ALREADY_RECORDED (another operation recorded it), QUOTE_EXPIRED,
 *   QUOTE_NOT_FOUND
 */
async function replayWithoutQuote(
  deps: RecordInvoiceDeps,
  tenantId: string,
  quoteId: string,
  found: Exclude<Awaited<ReturnType<QuoteStore["lookup"]>>, { kind: "live" }>,
  context: { idempotencyKey?: string | undefined; signal?: AbortSignal | undefined },
): Promise<RecordedInvoice> {
  const existing = await deps.ledger.get(tenantId, invoiceIdForQuote(quoteId), context.signal);
  if (existing && existing.idempotencyKey === context.idempotencyKey) {
    return { invoice: existing, replayed: true };
  }
  if (existing) throw alreadyRecorded(existing);
  if (found.kind === "expired") {
    throw new ToolBusinessError(
      "QUOTE_EXPIRED",
      `Quote ${quoteId} expired at ${found.quote.expiresAt}; call calculateTax again for a new quote.`,
      { quoteId, expiresAt: found.quote.expiresAt },
    );
  }
  throw new ToolBusinessError(
    "QUOTE_NOT_FOUND",
    // One sentence for a missing quote and another user's (a quote is its maker's): true for both, and
    // it says nothing of whether the quote exists.
    `You have no quote ${quoteId}; use a quoteId your own calculateTax call returned.`,
    { quoteId },
  );
}

/**
 * recordInvoice: mutating, needs `billing:write`. Writes at most one invoice per quote, with every
 * amount copied from the caller's tenant's quote. A retry of the same operation (same idempotency key)
 * returns its invoice and writes nothing, even after the quote expired; any other recording of a
 * recorded quote (another run, another call) is refused.
 * It vouches for its quote's amounts (see invoiceFacts): policies, APPROVAL_RULES among them, decide
 * on those (docs/policies.md).
 * @throws (as tool results) business_error QUOTE_NOT_FOUND (no such quote for this caller: missing,
 *   deleted, another tenant's, or another user's), QUOTE_EXPIRED (past its expiresAt) and QUOTE_ALREADY_RECORDED
 *   (another operation recorded it; `details.invoiceId` names that invoice)
 */
export function recordInvoiceTool(deps: RecordInvoiceDeps): ToolDefinition<typeof RecordInvoiceInput> {
  const clock = deps.clock ?? (() => new Date());
  const reads = new QuoteReads();
  return defineTool({
    facts: invoiceFacts(deps, clock, reads),
    name: "recordInvoice",
    description:
      "Record an invoice in the ledger for a client, from a quote returned by calculateTax. Every amount " +
      "(subtotal, taxAmount, grossTotal, currency, rate) is copied from the quote; this tool takes no " +
      "amounts. A quote belongs to the caller's tenant and expires (see calculateTax's expiresAt): an " +
      "unknown quote is QUOTE_NOT_FOUND, an expired one QUOTE_EXPIRED (calculate again). A quote is " +
      "recorded at most once: recording it again is QUOTE_ALREADY_RECORDED, naming the existing invoice. " +
      "Safe to retry: the same request records once. Needs the billing:write permission.",
    inputSchema: RecordInvoiceInput,
    isMutating: true,
    hints: { readOnly: false, destructive: false, idempotent: true },
    outputSchema: RecordInvoiceOutput,
    businessKey: "quoteId",
    requiredPermission: "billing:write",
    describeEffect: (data) => {
      const { invoice, replayed } = data as { invoice: Invoice; replayed: boolean };
      return (
        `recordInvoice recorded invoice ${invoice.invoiceId} for ${invoice.clientName} ` +
        `(gross total ${invoice.grossTotal.amount} ${invoice.currency})${replayed ? ", already recorded by an earlier call" : ""}`
      );
    },
    handler: async (input, security, context): Promise<RecordedInvoice> => {
      const idempotencyKey = context.idempotencyKey;
      if (!idempotencyKey) throw new Error("recordInvoice needs an idempotency key.");
      const { tenantId } = security;
      const nowMs = clock().getTime();
      const found = await reads.forHandler(input, nowMs, () =>
        ownQuote(deps, security, input.quoteId, nowMs, context.signal),
      );
      if (found.kind !== "live") return replayWithoutQuote(deps, tenantId, input.quoteId, found, context);
      const quote = found.quote;
      assertQuoteConsistent(quote);
      const recorded = await deps.ledger
        .recordOnce(
          {
            tenantId,
            clientName: input.clientName,
            clientReference: input.clientReference ?? null,
            description: input.description ?? null,
            quoteId: quote.quoteId,
            jurisdiction: quote.jurisdiction,
            currency: quote.currency,
            rateVersion: quote.rateVersion,
            rate: quote.rate,
            taxPointDate: quote.taxPointDate,
            subtotal: quote.subtotal,
            taxAmount: quote.taxAmount,
            grossTotal: quote.grossTotal,
            runId: context.runId,
            createdBy: security.userId,
          },
          idempotencyKey,
          context.signal,
        )
        .catch((error: unknown) => {
          throw error instanceof QuoteAlreadyRecordedError ? alreadyRecorded(error.invoice) : error;
        });
      return { invoice: recorded.invoice, replayed: !recorded.created };
    },
  });
}
