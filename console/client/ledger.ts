/**
 * The ledger (`#/ledger`): the tenant's invoices newest first (`GET /v1/invoices?order=newest`), each
 * linked to its invoice view and to the run that recorded it, with totals per currency of the invoices
 * shown; and one invoice (`#/invoices/<invoiceId>`, `GET /v1/invoices/{invoiceId}`). Amounts are the
 * backend's decimal strings; totals add their integer minor units exactly (never floating point).
 */
import { api } from "./api.js";
import { alert, h, idLink, paged, problemText, scrollTable, time, view } from "./dom.js";
import { fields } from "./values.js";

/** Money as the API sends it: the exact decimal string and its integer minor units. */
interface Money {
  amount: string;
  minorUnits: number;
  currency: string;
}

/** An invoice as `GET /v1/invoices` answers it (the fields the ledger shows). */
interface Invoice {
  invoiceId: string;
  clientName: string;
  jurisdiction: string;
  currency: string;
  rateVersion: string;
  subtotal: Money;
  taxAmount: Money;
  grossTotal: Money;
  runId: string;
  createdBy: string;
  createdAt: string;
}

/** Running totals of one currency, in minor units, with the number of decimals its amounts have. */
interface Total {
  invoices: number;
  decimals: number;
  subtotal: bigint;
  taxAmount: bigint;
  grossTotal: bigint;
}

/** Minor units as a decimal string with `decimals` places (`180000n`, 2 → `1800.00`). */
export function fromMinorUnits(units: bigint, decimals: number): string {
  const negative = units < 0n;
  const digits = (negative ? -units : units).toString().padStart(decimals + 1, "0");
  const whole = decimals === 0 ? digits : `${digits.slice(0, -decimals)}.${digits.slice(-decimals)}`;
  return `${negative ? "-" : ""}${whole}`;
}

/** Adds an invoice to the totals of its currency. */
function addTo(totals: Map<string, Total>, invoice: Invoice): void {
  const total = totals.get(invoice.currency) ?? {
    invoices: 0,
    decimals: invoice.grossTotal.amount.split(".")[1]?.length ?? 0,
    subtotal: 0n,
    taxAmount: 0n,
    grossTotal: 0n,
  };
  total.invoices += 1;
  total.subtotal += BigInt(invoice.subtotal.minorUnits);
  total.taxAmount += BigInt(invoice.taxAmount.minorUnits);
  total.grossTotal += BigInt(invoice.grossTotal.minorUnits);
  totals.set(invoice.currency, total);
}

/** A cell of two lines: the value, and a smaller second line. */
const twoLines = (first: string, second: string, cls?: string) =>
  h("td", cls ? { class: cls } : {}, first, h("span", { class: "sub" }, second));

/** The ledger's columns: when, which invoice and client, where, the amounts, who, which run. */
const COLUMNS = [
  "Recorded",
  "Invoice",
  "Jurisdiction",
  { label: "Subtotal", class: "num" },
  { label: "Tax", class: "num" },
  { label: "Gross total", class: "num" },
  "Currency",
  "Recorded by",
  "Run",
];

/** An invoice as a ledger row. */
function invoiceRow(invoice: Invoice): HTMLElement {
  const when = time(invoice.createdAt);
  const invoiceCell = h(
    "td",
    {},
    idLink(`#/invoices/${invoice.invoiceId}`, invoice.invoiceId),
    h("span", { class: "sub" }, invoice.clientName),
  );
  return h(
    "tr",
    { "data-invoice-id": invoice.invoiceId },
    twoLines(when.slice(0, 10), when.slice(11)),
    invoiceCell,
    twoLines(invoice.jurisdiction, invoice.rateVersion),
    h("td", { class: "num" }, invoice.subtotal.amount),
    h("td", { class: "num" }, invoice.taxAmount.amount),
    h("td", { class: "num" }, invoice.grossTotal.amount),
    h("td", {}, invoice.currency),
    h("td", {}, invoice.createdBy),
    h("td", {}, idLink(`#/runs/${invoice.runId}`, invoice.runId)),
  );
}

/** The totals rows: one per currency, of the invoices shown. */
function totalRows(totals: Map<string, Total>): HTMLElement[] {
  return [...totals.entries()]
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([currency, total]) =>
      h(
        "tr",
        { "data-currency": currency },
        h("th", { scope: "row", colspan: 3 }, `Total ${currency}, ${total.invoices} invoice(s)`),
        ...[total.subtotal, total.taxAmount, total.grossTotal].map((units) =>
          h("td", { class: "num" }, fromMinorUnits(units, total.decimals)),
        ),
        h("td", {}, currency),
        h("td", { colspan: 2 }),
      ),
    );
}

/** The ledger view (see the module comment). */
export async function ledgerView(): Promise<void> {
  const rows = h("tbody");
  const foot = h("tfoot");
  const status = h("div", { "aria-live": "polite" });
  const more = h("button", { type: "button", hidden: true, class: "secondary" }, "More invoices");
  const note = h("p", { class: "muted" });
  const totals = new Map<string, Total>();
  const table = scrollTable("The tenant's invoices, newest first", COLUMNS, rows, foot);
  view().replaceChildren(h("h1", {}, "Ledger"), status, table, note, more);
  const answered = await paged<Invoice>("/v1/invoices?order=newest&limit=20", {
    status,
    more,
    show: (items, { first, more: another }) => {
      rows.append(...items.map(invoiceRow));
      for (const invoice of items) addTo(totals, invoice);
      foot.replaceChildren(...totalRows(totals));
      note.textContent = another
        ? "Totals are of the invoices shown; load more to include older ones."
        : totals.size > 0
          ? "Totals are of every invoice of the tenant's ledger."
          : "";
      if (items.length === 0 && first) status.replaceChildren(h("p", {}, "No invoices yet."));
    },
  });
  // A refused ledger (no billing:read) is the refusal alone, not an empty table of invoices under it.
  if (!answered) table.remove();
}

/** One invoice's view: every field the ledger keeps, its run linked. */
export async function invoiceView(invoiceId: string): Promise<void> {
  const body = h("div", {}, "…");
  view().replaceChildren(
    h("h1", {}, "Invoice ", h("span", { class: "run-id" }, invoiceId)),
    h("p", {}, h("a", { href: "#/ledger" }, "Back to the ledger")),
    body,
  );
  const answer = await api<Record<string, unknown>>(`/v1/invoices/${encodeURIComponent(invoiceId)}`);
  if (!answer.ok) return body.replaceChildren(alert(problemText(answer.status, answer.body)));
  const { tenantId: _tenant, ...invoice } = answer.body;
  body.replaceChildren(fields(invoice));
}
