/**
 * The console's building blocks: elements made with DOM calls only (text is never parsed as HTML; the
 * page's CSP enforces Trusted Types), the formats every view shares (times, durations, ids, problems),
 * status badges, data tables and paged listings. Every value shown comes from the API's answers.
 */
import { api, type Problem } from "./api.js";

/** What {@link h} appends: nodes and text; nullish and `false` are skipped. */
export type Child = Node | string | null | undefined | false;

/** Builds an element: `attrs` become attributes (`on*` functions become listeners), children are appended. */
export function h(tag: string, attrs: Record<string, unknown> = {}, ...children: Child[]): HTMLElement {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value === undefined || value === false || value === null) continue;
    if (name.startsWith("on") && typeof value === "function") {
      element.addEventListener(name.slice(2), value as EventListener);
    } else element.setAttribute(name, value === true ? "" : String(value));
  }
  for (const child of children) if (child) element.append(child);
  return element;
}

/** The page's main region, which each view fills. */
export const view = () => document.getElementById("view") as HTMLElement;

/** `2026-12-01T10:00:00.000Z` → `2026-12-01 10:00:00 UTC`; "—" for none. */
export const time = (iso: unknown) =>
  typeof iso === "string" ? `${iso.slice(0, 10)} ${iso.slice(11, 19)} UTC` : "—";

/** Milliseconds as seconds with one decimal (`0.6 s`); "—" for none. */
export const seconds = (ms: unknown) => (typeof ms === "number" ? `${(ms / 1000).toFixed(1)} s` : "—");

/** A count with thin groups of three (`12 345`), or "—". */
export const count = (value: unknown) =>
  typeof value === "number" ? value.toLocaleString("en-GB").replaceAll(",", "\u202f") : "—";

/** Money as the API writes it (`{amount: "1.20", currency: "USD"}`: the exact decimal string), or "—". */
export const money = (value: { amount: string; currency: string } | null | undefined) =>
  value ? `${value.amount} ${value.currency}` : "—";

/** A run or invoice id cut after its first 8 characters past the prefix (`run_1a404d44…`). */
export function shortId(id: string): string {
  const match = /^([a-z]+_)(.*)$/.exec(id);
  const [prefix, rest] = match ? [match[1] as string, match[2] as string] : ["", id];
  return rest.length > 9 ? `${prefix}${rest.slice(0, 8)}…` : id;
}

/** A link to an id's view, its text the short id (the full id in its tooltip and in the view itself). */
export const idLink = (href: string, id: string) =>
  h("a", { href, title: id, class: "id", "data-id": id }, shortId(id));

/** An alert paragraph (announced at once by assistive technology). */
export const alert = (text: string) => h("p", { role: "alert", class: "error" }, text);

/** A problem answer as one sentence for people. */
export function problemText(status: number, body: unknown): string {
  const problem = (body ?? {}) as Problem;
  if (problem.rule === "four_eyes") {
    return `Four eyes: you started this run, so another person of your tenant must decide. (${problem.detail ?? "FORBIDDEN"})`;
  }
  // A 400's `errors` name the fields and why; without them "The request is invalid." says nothing.
  const fields = (problem.errors ?? []).map((e) => (e.path ? `${e.path}: ${e.message}` : e.message));
  const text = `${problem.code ?? `HTTP ${status}`}: ${problem.detail ?? problem.title ?? "the request was refused."}`;
  return [text, ...fields].join(" ");
}

/** A badge's tone: its colour and its mark (never colour alone). */
const MARKS = { ok: "✓", run: "●", wait: "◷", stop: "■", bad: "✕" } as const;

/** How a run status reads, and its tone. */
const STATUS: Record<string, { label: string; tone: keyof typeof MARKS }> = {
  completed: { label: "Completed", tone: "ok" },
  running: { label: "Running", tone: "run" },
  awaiting_approval: { label: "Awaiting approval", tone: "wait" },
  awaiting_quota: { label: "Waiting for budget", tone: "wait" },
  cancelled: { label: "Cancelled", tone: "stop" },
  abandoned: { label: "Abandoned", tone: "bad" },
  handed_over: { label: "Handed over", tone: "run" },
  max_cycles_exceeded: { label: "Cycle limit", tone: "stop" },
  deadline_exceeded: { label: "Deadline passed", tone: "stop" },
  budget_exceeded: { label: "Budget used up", tone: "stop" },
  loop_detected: { label: "Loop stopped", tone: "stop" },
  permission_denied: { label: "Permission denied", tone: "bad" },
  model_refused: { label: "Model refused", tone: "bad" },
  model_output_truncated: { label: "Answer cut off", tone: "bad" },
  model_error: { label: "Model error", tone: "bad" },
  context_length_exceeded: { label: "Context too long", tone: "bad" },
  failed: { label: "Failed", tone: "bad" },
  quota_exceeded: { label: "Quota reached", tone: "stop" },
  answer_ungrounded: { label: "Answer refused: ungrounded", tone: "bad" },
};

/**
 * The statuses a runs filter offers: every status a run record has (`GET /v1/runs` filters by each, a
 * durable run waiting for budget's too), in the order people look for them. `handed_over` is a turn's
 * outcome that no record keeps, so the API refuses it as a filter.
 */
export const RUN_STATUS_CHOICES = Object.keys(STATUS).filter((status) => status !== "handed_over");

/** The words a status badge shows for `status` (the raw status for one it does not know). */
export const statusLabel = (status: string) => STATUS[status]?.label ?? status;

/** A run status badge: a mark and words on the status's tone; `data-status` keeps the API's value. */
export const statusBadge = (status: string) => badgeOf(STATUS, status);

/** How a tool result's category reads (docs/loop.md: the fixed categories a call ends in). */
const TOOL_STATUS: Record<string, { label: string; tone: keyof typeof MARKS }> = {
  success: { label: "Success", tone: "ok" },
  business_error: { label: "Refused by a business rule", tone: "stop" },
  validation_error: { label: "Invalid arguments", tone: "bad" },
  permission_denied: { label: "Not permitted", tone: "bad" },
  fatal_error: { label: "Failed", tone: "bad" },
};

/** How an approval's state reads. */
const DECISION: Record<string, { label: string; tone: keyof typeof MARKS }> = {
  pending: { label: "Pending", tone: "wait" },
  approved: { label: "Approved", tone: "ok" },
  rejected: { label: "Rejected", tone: "bad" },
  expired: { label: "Expired", tone: "stop" },
  cancelled: { label: "Cancelled", tone: "stop" },
};

/** A badge of `status` as `table` reads it; `data-status` keeps the API's value. */
function badgeOf(table: Record<string, { label: string; tone: keyof typeof MARKS }>, status: string) {
  const { label, tone } = table[status] ?? { label: status, tone: "stop" as const };
  return h(
    "span",
    { class: `badge ${tone}`, "data-status": status },
    h("span", { "aria-hidden": "true" }, MARKS[tone]),
    label,
  );
}

/** A badge for a tool result's category. */
export const toolBadge = (status: string) => badgeOf(TOOL_STATUS, status);

/** A badge for an approval's state (pending, approved, rejected, expired, cancelled). */
export const decisionBadge = (status: string) => badgeOf(DECISION, status);

/** Whether a run in `status` may still change (it is going, or waits for a person). */
export const isLive = (status: string) =>
  status === "running" || status === "awaiting_approval" || status === "awaiting_quota";

/**
 * A data table in a box that scrolls sideways on a narrow screen: its caption, column headers (a
 * column's `class` aligns it, e.g. `num` for amounts) and `body`, its rows.
 */
export function scrollTable(
  caption: string,
  columns: ReadonlyArray<string | { label: string; class: string }>,
  body: HTMLElement,
  foot?: HTMLElement,
): HTMLElement {
  const header = columns.map((column) =>
    typeof column === "string"
      ? h("th", { scope: "col" }, column)
      : h("th", { scope: "col", class: column.class }, column.label),
  );
  return h(
    "div",
    { class: "scroll" },
    h("table", {}, h("caption", {}, caption), h("thead", {}, h("tr", {}, ...header)), body, foot),
  );
}

/**
 * Reads a listing of the API (`path` answers `{items, nextCursor}`) a page at a time: `show` gets each
 * page's items (`first`: the first page), the `more` button stays visible while another page exists and
 * loads it, and a refusal is shown in `status`.
 * @param path the listing's URL with its query (`limit`, filters), without the cursor
 * @returns whether the API answered the page (false: refused, and said so in `status`)
 */
export async function paged<T>(
  path: string,
  parts: {
    show: (items: T[], page: { first: boolean; more: boolean }) => void;
    more: HTMLElement;
    status: HTMLElement;
  },
  cursor?: string,
): Promise<boolean> {
  const page = await api<{ items: T[]; nextCursor: string | null }>(
    `${path}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`,
  );
  if (!page.ok) {
    parts.status.replaceChildren(alert(problemText(page.status, page.body)));
    return false;
  }
  const next = page.body.nextCursor;
  parts.show(page.body.items, { first: cursor === undefined, more: next !== null });
  parts.more.hidden = next === null;
  parts.more.onclick = () => paged(path, parts, next ?? undefined);
  return true;
}
