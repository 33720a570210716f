/**
 * JSON values as people read them (tool arguments, tool results, approval requests): field names in
 * words, money as `1800.00 GBP` exactly as the backend wrote it, nothing as raw JSON unless it nests
 * deeper than a person would read, and ids of runs and invoices as links to their views.
 */
import { type Child, h, idLink, time } from "./dom.js";

/** Field names with a better label than their words (`taxAmount` reads "Tax amount" on its own). */
const LABELS: Record<string, string> = {
  clientName: "Client",
  invoiceId: "Invoice",
  quoteId: "Quote",
  runId: "Run",
  rateVersion: "Rate version",
  taxPointDate: "Tax point date",
  grossTotal: "Gross total",
  expiresAt: "Quote expires",
  replayed: "Replayed",
};

/**
 * The fields people look for first, in this order (the backend's numbers before their provenance); the
 * rest follow in the order the backend wrote them. `tenantId` is left out: it is always the caller's.
 */
const FIRST = [
  "invoiceId",
  "clientName",
  "jurisdiction",
  "amount",
  "subtotal",
  "rate",
  "taxAmount",
  "grossTotal",
  "currency",
  "rateVersion",
  "taxPointDate",
];
const HIDDEN = new Set(["tenantId"]);

/** A record's entries in {@link FIRST}'s order, then the others, without the hidden ones. */
function ordered(record: Record<string, unknown>): Array<[string, unknown]> {
  const rank = (name: string) => {
    const at = FIRST.indexOf(name);
    return at === -1 ? FIRST.length : at;
  };
  return Object.entries(record)
    .filter(([name]) => !HIDDEN.has(name))
    .map((entry, index) => ({ entry, index }))
    .sort((a, b) => rank(a.entry[0]) - rank(b.entry[0]) || a.index - b.index)
    .map(({ entry }) => entry);
}

/** An ISO 8601 instant as the backend writes them (`2026-12-02T10:29:03.897Z`). */
const INSTANT = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/;

/** `taxAmount` → "Tax amount". */
export function fieldLabel(name: string): string {
  if (LABELS[name]) return LABELS[name];
  const words = name.replace(/([a-z0-9])([A-Z])/g, "$1 $2").toLowerCase();
  return words.charAt(0).toUpperCase() + words.slice(1);
}

/** Money as the backend sends it: `{amount: "1800.00", currency: "GBP", minorUnits?}`. */
function isMoney(value: unknown): value is { amount: string; currency: string } {
  if (!value || typeof value !== "object") return false;
  const money = value as Record<string, unknown>;
  return typeof money.amount === "string" && typeof money.currency === "string";
}

/** The view of one value: money, ids as links, lists, nested objects; "—" for none. */
function valueView(name: string, value: unknown, depth: number): Child {
  if (value === null || value === undefined || value === "") return h("span", { class: "none" }, "—");
  if (isMoney(value)) return h("span", { class: "money" }, `${value.amount} ${value.currency}`);
  if (typeof value === "string" && name === "invoiceId") return idLink(`#/invoices/${value}`, value);
  if (typeof value === "string" && name === "runId") return idLink(`#/runs/${value}`, value);
  if (typeof value === "boolean") return value ? "yes" : "no";
  if (typeof value === "string" && INSTANT.test(value)) return time(value);
  if (typeof value !== "object") return String(value);
  if (Array.isArray(value)) {
    if (value.every((item) => item === null || typeof item !== "object")) return value.join(", ");
    return h("ol", { class: "items" }, ...value.map((item) => h("li", {}, valueView(name, item, depth + 1))));
  }
  if (depth >= 2) return h("code", {}, JSON.stringify(value));
  return fields(value as Record<string, unknown>, depth + 1);
}

/**
 * A record as a list of fields (`dl.kv`): each name in words, each value readable ({@link valueView}).
 * @param depth how deep this record is nested (deeper than 2 is shown as compact JSON)
 */
export function fields(record: Record<string, unknown>, depth = 0): HTMLElement {
  const entries = ordered(record);
  if (entries.length === 0) return h("span", { class: "none" }, "nothing");
  return h(
    "dl",
    { class: "kv" },
    ...entries.flatMap(([name, value]) => [
      h("dt", {}, fieldLabel(name)),
      h("dd", {}, valueView(name, value, depth)),
    ]),
  );
}

/**
 * A tool call's arguments as the model sent them: their fields when they are a JSON object, else the
 * text itself (what the model sent that did not parse), marked as such.
 */
export function argumentsView(args: unknown): HTMLElement {
  let parsed = args;
  if (typeof args === "string") {
    try {
      parsed = JSON.parse(args) as unknown;
    } catch {
      return h("p", {}, h("span", { class: "note-inline" }, "Not JSON: "), h("code", {}, args));
    }
  }
  if (parsed && typeof parsed === "object" && !Array.isArray(parsed)) {
    return fields(parsed as Record<string, unknown>);
  }
  return h("p", {}, h("code", {}, JSON.stringify(parsed)));
}

/** A tool error as the backend gave it to the model: its code, its message, its field issues. */
export interface ToolErrorShape {
  code?: string;
  message?: string;
  details?: Record<string, unknown>;
}

/**
 * The backend's result of a tool call: its data's fields (recordInvoice's `{invoice, replayed}` shown
 * as the invoice's fields and whether it was a replay), or its error: code, message and the fields it
 * names. `omitted`: the data was too large for the live event (the run's record has it).
 */
export function resultView(result: {
  status: string;
  data: unknown;
  error: ToolErrorShape | null;
  omitted?: boolean;
}): HTMLElement {
  if (result.error) {
    const issues = (result.error.details?.issues ?? []) as Array<{ path?: unknown; message?: unknown }>;
    return h(
      "div",
      { class: "tool-error" },
      h("p", {}, h("strong", {}, result.error.code ?? result.status)),
      result.error.message ? h("p", {}, result.error.message) : null,
      issues.length > 0
        ? h(
            "ul",
            {},
            ...issues.map((issue) =>
              h("li", {}, h("code", {}, String(issue.path ?? "")), ` ${String(issue.message ?? "")}`),
            ),
          )
        : null,
    );
  }
  if (result.omitted) return h("p", { class: "none" }, "Too large to show live; reload the run to see it.");
  const data = result.data;
  if (data && typeof data === "object" && !Array.isArray(data)) {
    const record = data as Record<string, unknown>;
    if (record.invoice && typeof record.invoice === "object") {
      const { invoice, ...rest } = record;
      return fields({ ...(invoice as Record<string, unknown>), ...rest });
    }
    return fields(record);
  }
  return h("p", {}, data === null || data === undefined ? "—" : String(data));
}
