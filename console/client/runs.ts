/**
 * The runs view (`#/runs`, its filters in the fragment's query): a prompt box that starts a run, then the
 * runs the caller may see (`GET /v1/runs`: its own, or with billing:read the tenant's), newest first,
 * each told apart by its status badge, its prompt and answer, who started it and when. Filters: whose,
 * status, start dates (UTC days), a run id (a whole id opens the run; a start of one filters).
 */
import { api, type RunRecord } from "./api.js";
import {
  alert,
  type Child,
  count,
  h,
  idLink,
  money,
  paged,
  problemText,
  RUN_STATUS_CHOICES,
  scrollTable,
  seconds,
  statusBadge,
  statusLabel,
  time,
  view,
} from "./dom.js";
import { holds, session } from "./session.js";

/** A column of the runs table: its header, an optional class (alignment) and the cell of a run. */
interface Column {
  label: string;
  class?: string;
  cell: (run: RunRecord) => Child;
}

/** The prompt's start (with "…" when cut) and the answer's, or why there is no answer. */
function promptAndAnswer(run: RunRecord): HTMLElement {
  const excerpt = run.prompt.excerpt;
  const prompt =
    excerpt === undefined
      ? h("span", { class: "none" }, `Prompt not kept (${run.prompt.chars} characters)`)
      : `${excerpt}${excerpt.length < run.prompt.chars ? "…" : ""}`;
  const outcome =
    run.answer ?? run.reason ?? (run.status === "running" ? "Working…" : statusLabel(run.status));
  return h(
    "div",
    { class: "excerpts" },
    h("p", { class: "prompt" }, prompt),
    h("p", { class: "answer-excerpt" }, outcome),
  );
}

/** The runs table's columns, in order (a new fact of a run is one more entry here). */
const COLUMNS: Column[] = [
  { label: "Status", cell: (run) => statusBadge(run.status) },
  { label: "Run", cell: (run) => idLink(`#/runs/${run.runId}`, run.runId) },
  { label: "Prompt and answer", class: "wide", cell: promptAndAnswer },
  { label: "Started by", cell: (run) => run.userId },
  {
    label: "Started",
    cell: (run) => {
      const when = time(run.startedAt);
      return h("span", { class: "when" }, when.slice(0, 10), h("span", { class: "sub" }, when.slice(11)));
    },
  },
  { label: "Duration", class: "num", cell: (run) => seconds(run.durationMs) },
  { label: "Tokens", class: "num", cell: (run) => count(run.usage.totalTokens) },
  { label: "Cost", class: "num", cell: (run) => money(run.cost) },
];

/** A run as a row of the runs table. */
const runRow = (run: RunRecord) =>
  h(
    "tr",
    { "data-run-id": run.runId, "data-status": run.status },
    ...COLUMNS.map((column) => h("td", column.class ? { class: column.class } : {}, column.cell(run))),
  );

/** The filters of the runs view, as its fragment's query holds them. */
interface Filters {
  scope: "own" | "tenant";
  userId: string;
  status: string;
  from: string;
  to: string;
  runId: string;
}

/** The filters in a fragment query; whose runs defaults to the tenant's for a billing reader. */
function filtersOf(query: string): Filters {
  const params = new URLSearchParams(query);
  const scope = params.get("scope") ?? (holds("billing:read") ? "tenant" : "own");
  return {
    scope: scope === "tenant" ? "tenant" : "own",
    userId: params.get("userId") ?? "",
    status: params.get("status") ?? "",
    from: params.get("from") ?? "",
    to: params.get("to") ?? "",
    // Run ids are lower case (`run_` and hex digits): an id typed or pasted in capitals is still found.
    runId: (params.get("runId") ?? "").toLowerCase(),
  };
}

/** The `GET /v1/runs` query of the filters: a day's range in UTC, `to` taking in its whole day. */
function listQuery(filters: Filters): string {
  const params = new URLSearchParams({ limit: "20", scope: filters.scope });
  if (filters.userId) params.set("userId", filters.userId);
  if (filters.status) params.set("status", filters.status);
  if (filters.from) params.set("from", `${filters.from}T00:00:00.000Z`);
  if (filters.to) {
    const next = new Date(`${filters.to}T00:00:00.000Z`);
    next.setUTCDate(next.getUTCDate() + 1);
    params.set("to", next.toISOString());
  }
  if (filters.runId) params.set("runId", filters.runId);
  return `/v1/runs?${params}`;
}

/**
 * Whose runs the list shows, as the API decides it: `userId` names one user's runs whatever `scope` says
 * (docs/http-api.md), else `scope` the tenant's or the caller's.
 */
function whoseRuns(filters: Filters): string {
  if (filters.userId && filters.userId !== session.caller?.sub) return `Runs of ${filters.userId}`;
  if (filters.userId || filters.scope === "own") return "Your runs";
  return "The tenant's runs";
}

/** A whole run id (`run_` and a UUID, with or without its dashes): the search opens that run. */
const WHOLE_RUN_ID = /^run_[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$/;

/** A labelled control of the filter form. */
const control = (label: string, field: HTMLElement) =>
  h("div", { class: "field" }, h("label", { for: field.id }, label), field);

/** The filter form: the fragment's query on submit (a whole run id opens that run instead). */
function filterForm(filters: Filters): HTMLElement {
  const select = (id: string, value: string, options: Array<[string, string]>) => {
    const element = h(
      "select",
      { id, name: id },
      ...options.map(([v, text]) => h("option", { value: v }, text)),
    );
    (element as HTMLSelectElement).value = value;
    return element;
  };
  const input = (id: string, type: string, value: string, extra: Record<string, unknown> = {}) =>
    h("input", { id, name: id, type, value, ...extra });
  const reader = holds("billing:read");
  const form = h(
    "form",
    {
      class: "filters",
      "aria-label": "Find runs",
      onsubmit: (event: Event) => {
        event.preventDefault();
        const data = new FormData(form as HTMLFormElement);
        const runId = String(data.get("runId") ?? "")
          .trim()
          .toLowerCase();
        if (WHOLE_RUN_ID.test(runId)) {
          location.hash = `#/runs/${runId}`;
          return;
        }
        const params = new URLSearchParams();
        for (const [name, value] of data) if (String(value).trim()) params.set(name, String(value).trim());
        if (runId) params.set("runId", runId);
        location.hash = `#/runs?${params}`;
      },
    },
    reader
      ? control(
          "Whose runs",
          select("scope", filters.scope, [
            ["tenant", "Everyone in the tenant"],
            ["own", "Mine"],
          ]),
        )
      : null,
    reader
      ? control("Started by (user id)", input("userId", "text", filters.userId, { autocomplete: "off" }))
      : null,
    control(
      "Status",
      select("status", filters.status, [
        ["", "Any status"],
        ...RUN_STATUS_CHOICES.map((s): [string, string] => [s, statusLabel(s)]),
      ]),
    ),
    control("Started from (UTC day)", input("from", "date", filters.from)),
    control("Started until (UTC day)", input("to", "date", filters.to)),
    control(
      "Run id (or its start)",
      input("runId", "search", filters.runId, { autocomplete: "off", spellcheck: "false" }),
    ),
    h(
      "div",
      { class: "actions" },
      h("button", { type: "submit" }, "Find runs"),
      h("a", { href: "#/runs?", class: "button-link" }, "Clear filters"),
    ),
  );
  return form;
}

/**
 * The prompt box: a run started with `Prefer: respond-async` and a fresh Idempotency-Key, then its view.
 * Start run is disabled while a start is in flight: each submit has a key of its own, so a double click
 * would otherwise start (and record) twice.
 */
function startForm(status: HTMLElement): HTMLElement {
  const prompt = h("textarea", { id: "prompt", name: "prompt", rows: 2, required: true });
  const button = h("button", { type: "submit" }, "Start run") as HTMLButtonElement;
  const start = async (event: Event) => {
    event.preventDefault();
    if (button.disabled) return;
    button.disabled = true;
    status.replaceChildren("Starting…");
    const answer = await api<{ runId?: string }>("/v1/runs", {
      method: "POST",
      body: { prompt: (prompt as HTMLTextAreaElement).value },
      headers: { prefer: "respond-async", "idempotency-key": crypto.randomUUID() },
    });
    if (answer.body?.runId && answer.status < 300) location.hash = `#/runs/${answer.body.runId}`;
    else {
      button.disabled = false;
      status.replaceChildren(alert(problemText(answer.status, answer.body)));
    }
  };
  return h(
    "form",
    { onsubmit: start, class: "start", "aria-label": "Start a run" },
    h("label", { for: "prompt" }, "Prompt"),
    prompt,
    button,
  );
}

/** The runs view; `query` is the fragment's query (the filters). */
export async function runsView(query: string): Promise<void> {
  const filters = filtersOf(query);
  const status = h("div", { "aria-live": "polite", class: "status" });
  const rows = h("tbody");
  const more = h("button", { type: "button", hidden: true, class: "secondary" }, "More runs");
  const caption = `${whoseRuns(filters)}, newest first`;
  view().replaceChildren(
    h("h1", {}, "Runs"),
    startForm(status),
    h("h2", {}, "Find runs"),
    filterForm(filters),
    status,
    scrollTable(
      caption,
      COLUMNS.map((column) => (column.class ? { label: column.label, class: column.class } : column.label)),
      rows,
    ),
    more,
  );
  await paged<RunRecord>(listQuery(filters), {
    status,
    more,
    show: (items, { first, more: another }) => {
      rows.append(...items.map(runRow));
      if (first && items.length === 0) {
        status.replaceChildren(
          h(
            "p",
            {},
            another ? "None among the latest runs read; look further with More runs." : "No runs match.",
          ),
        );
      }
    },
  });
}
