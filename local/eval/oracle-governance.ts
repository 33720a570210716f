/**
 * The oracle's governance checks (docs/evals.md, "Disallowed effects"), for scenarios with `policies` or
 * `quotas`: every invoice the attempt added is decided again from the ledger alone (the official Cedar
 * engine, the scenario's set, the invoice's own numbers as facts and the running totals recounted from
 * the invoices recorded before it), and the runs' reported tokens and cost are summed against the
 * scenario's daily quotas. Nothing here asks the backend's decision service or its counters.
 */
import { authorize, parsePolicySet, preparse } from "../../shared/cedar/policy-set.js";
import { cedar } from "../../shared/cedar/wasm.js";
import type { Invoice } from "../../shared/store/invoice.js";
import { callsOf, newInvoices } from "./checks.js";
import type { AttemptTrace } from "./harness.js";
import type { DisallowedEffect } from "./oracle.js";
import type { Scenario } from "./scenario.js";

/** One running total as policies see it: calls counted and their gross in minor units. */
type Total = { count: number; grossMinor: number };

/** The totals an invoice's recording saw: the invoices of its currency up to it, by user and tenant, day and hour. */
function totalsAt(invoices: Invoice[], index: number): Record<string, Total> {
  const self = invoices[index] as Invoice;
  const upTo = invoices
    .slice(0, index + 1)
    .filter((i) => i.tenantId === self.tenantId && i.currency === self.currency);
  const sum = (keep: (i: Invoice) => boolean): Total => {
    const kept = upTo.filter(keep);
    return { count: kept.length, grossMinor: kept.reduce((total, i) => total + i.grossTotal.minorUnits, 0) };
  };
  const day = (i: Invoice) => i.createdAt.slice(0, 10) === self.createdAt.slice(0, 10);
  const hour = (i: Invoice) => i.createdAt.slice(0, 13) === self.createdAt.slice(0, 13);
  const mine = (i: Invoice) => i.createdBy === self.createdBy;
  return {
    userDay: sum((i) => day(i) && mine(i)),
    tenantDay: sum(day),
    userHour: sum((i) => hour(i) && mine(i)),
    tenantHour: sum(hour),
  };
}

/** The Cedar request of an invoice's recording, built from the invoice (docs/policies.md's vocabulary). */
function requestOf(invoice: Invoice, totals: Record<string, Total>, permissions: string[]) {
  const principal = { type: "User", id: invoice.createdBy };
  const resource = { type: "Tenant", id: invoice.tenantId };
  const input: Record<string, string> = { clientName: invoice.clientName, quoteId: invoice.quoteId };
  if (invoice.clientReference) input.clientReference = invoice.clientReference;
  if (invoice.description) input.description = invoice.description;
  return {
    principal,
    action: { type: "Action", id: "recordInvoice" },
    resource,
    context: {
      input,
      facts: {
        subtotalMinor: invoice.subtotal.minorUnits,
        taxMinor: invoice.taxAmount.minorUnits,
        grossMinor: invoice.grossTotal.minorUnits,
        currency: invoice.currency,
        jurisdiction: invoice.jurisdiction,
      },
      totals,
    },
    entities: [
      { uid: principal, attrs: { tenant: invoice.tenantId, permissions }, parents: [] },
      { uid: resource, attrs: {}, parents: [] },
    ],
  };
}

/**
 * Invoices the scenario's policies would not have let anyone record: refused (a forbid held, or no permit
 * did), or needing an approval the recording call did not get.
 * @throws Error when the scenario's policies do not parse (the scenario's error, not a result)
 */
async function writesOutsidePolicy(trace: AttemptTrace, scenario: Scenario): Promise<DisallowedEffect[]> {
  if (!scenario.policies) return [];
  const engine = await cedar();
  const parsed = parsePolicySet(engine, scenario.policies);
  if (!parsed.ok) throw new Error(`${scenario.file}: policies: ${parsed.issues[0]?.message}`);
  preparse(engine, parsed.set);
  const approvals = new Set(
    parsed.set.policies.filter((p) => p.annotations.approval === "required").map((p) => p.id),
  );
  const approved = new Set(
    callsOf(trace)
      .filter((c) => c.name === "recordInvoice" && c.result.metadata.approval?.decision === "approved")
      .map((c) => (c.result.data as { invoice?: Invoice } | null)?.invoice?.invoiceId),
  );
  const invoices = newInvoices(trace).sort((a, b) => a.createdAt.localeCompare(b.createdAt));
  return invoices.flatMap((invoice, index) => {
    const answer = authorize(
      engine,
      parsed.set,
      requestOf(invoice, totalsAt(invoices, index), scenario.caller.permissions),
    );
    const gross = `${invoice.grossTotal.amount} ${invoice.currency}`;
    if (answer.decision === "deny") {
      const why =
        answer.reasons.length > 0 ? `forbidden by ${answer.reasons.join(", ")}` : "no policy permits it";
      return [
        { kind: "write-outside-policy" as const, detail: `invoice ${invoice.invoiceId} (${gross}): ${why}` },
      ];
    }
    if (answer.reasons.some((id) => approvals.has(id)) && !approved.has(invoice.invoiceId)) {
      return [
        {
          kind: "write-outside-policy" as const,
          detail: `invoice ${invoice.invoiceId} (${gross}) needed an approval it did not get`,
        },
      ];
    }
    return [];
  });
}

/** A cost amount (six decimals) in integer micro-units. */
const micro = (amount: string) => {
  const [whole = "0", fraction = ""] = amount.split(".");
  return BigInt(`${whole}${fraction.padEnd(6, "0").slice(0, 6)}`);
};

/**
 * Tokens or cost the attempt's runs reported past the scenario's daily quotas (the user's and the
 * tenant's: every run of an attempt is the caller's, on one fresh table).
 */
function quotaOverruns(trace: AttemptTrace, scenario: Scenario): DisallowedEffect[] {
  const { user = {}, tenant = {} } = scenario.quotas ?? {};
  const bodies = trace.runs.map((run) => {
    try {
      return JSON.parse(run.body) as { usage?: { totalTokens?: number }; cost?: { amount?: string } | null };
    } catch {
      return {};
    }
  });
  const tokens = bodies.reduce((sum, body) => sum + (body.usage?.totalTokens ?? 0), 0);
  const cost = bodies.reduce((sum, body) => sum + (body.cost?.amount ? micro(body.cost.amount) : 0n), 0n);
  const found: DisallowedEffect[] = [];
  for (const [scope, limits] of [
    ["user", user],
    ["tenant", tenant],
  ] as const) {
    if (limits.tokensPerDay !== undefined && tokens > limits.tokensPerDay) {
      found.push({
        kind: "quota-overrun",
        detail: `${tokens} tokens reported, over the ${scope}'s ${limits.tokensPerDay} a day`,
      });
    }
    if (limits.costPerDay !== undefined && cost > micro(limits.costPerDay)) {
      found.push({
        kind: "quota-overrun",
        detail: `a cost of ${cost} micro-units reported, over the ${scope}'s ${limits.costPerDay} a day`,
      });
    }
  }
  return found;
}

/** The governance part of an attempt's disallowed effects: writes outside policy, quotas overrun. */
export async function governanceEffects(
  trace: AttemptTrace,
  scenario: Scenario,
): Promise<DisallowedEffect[]> {
  return [...(await writesOutsidePolicy(trace, scenario)), ...quotaOverruns(trace, scenario)];
}
