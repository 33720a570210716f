/**
 * The operator console's script (served by functions/api/console.ts, built by console/build.ts): sign-in,
 * the caller's runs with a live timeline, the tenant's approvals inbox and ledger. Views are chosen by the
 * URL fragment (`#/runs`, `#/runs/<runId>`, `#/approvals`, `#/ledger`) and built with DOM calls only
 * (text is never parsed as HTML; the page's CSP enforces Trusted Types). Every number shown comes from
 * the API's answers; the page decides nothing.
 */
import {
  api,
  type Caller,
  callerOf,
  clearToken,
  followEvents,
  getToken,
  type Problem,
  type RunEvent,
  setToken,
  whenUnauthorized,
} from "./api.js";

type Child = Node | string | null | undefined | false;

/** Builds an element: `attrs` become attributes (`on*` functions become listeners), children are appended. */
function h(tag: string, attrs: Record<string, unknown> = {}, ...children: Child[]): HTMLElement {
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

const view = () => document.getElementById("view") as HTMLElement;

/** `2026-12-01T10:00:00.000Z` → `2026-12-01 10:00:00 UTC`. */
const time = (iso: unknown) =>
  typeof iso === "string" ? `${iso.slice(0, 10)} ${iso.slice(11, 19)} UTC` : "—";
const seconds = (ms: unknown) => (typeof ms === "number" ? `${(ms / 1000).toFixed(1)} s` : "—");
const json = (value: unknown) => JSON.stringify(value, null, 1);
const amount = (money: unknown) =>
  money && typeof money === "object" && "amount" in money ? String(money.amount) : String(money ?? "—");

/** What is left of a deadline, e.g. `23 h 59 min left`, or `expired`. */
function timeLeft(expiresAt: string): string {
  const ms = Date.parse(expiresAt) - Date.now();
  if (!(ms > 0)) return "expired";
  const minutes = Math.floor(ms / 60_000);
  return minutes >= 60 ? `${Math.floor(minutes / 60)} h ${minutes % 60} min left` : `${minutes} min left`;
}

/** A problem answer as one sentence for people. */
function problemText(status: number, body: unknown): string {
  const problem = (body ?? {}) as Problem;
  if (problem.rule === "four_eyes") {
    return `Four eyes: you started this run, so another person of your tenant must decide. (${problem.detail ?? "FORBIDDEN"})`;
  }
  return `${problem.code ?? `HTTP ${status}`}: ${problem.detail ?? problem.title ?? "the request was refused."}`;
}

const alert = (text: string) => h("p", { role: "alert", class: "error" }, text);

/** A data table in a horizontally scrolling box: its caption, column headers, and `body` (its rows). */
function scrollTable(caption: string, columns: readonly string[], body: HTMLElement): HTMLElement {
  return h(
    "div",
    { class: "scroll" },
    h(
      "table",
      {},
      h("caption", {}, caption),
      h("thead", {}, h("tr", {}, ...columns.map((c) => h("th", { scope: "col" }, c)))),
      body,
    ),
  );
}

/**
 * Reads a listing of the API (`path` answers `{items, nextCursor}`) a page at a time: `show` gets each
 * page's items (`first`: the first page), the `more` button stays visible while another page exists and
 * loads it, and a refusal is shown in `status`.
 * @param path the listing's URL with its query (`limit`, a `status`), without the cursor
 * @returns whether the API answered the page (false: refused, and said so in `status`)
 */
async function paged<T>(
  path: string,
  parts: {
    show: (items: T[], page: { first: boolean }) => void;
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
  parts.show(page.body.items, { first: cursor === undefined });
  parts.more.hidden = next === null;
  parts.more.onclick = () => paged(path, parts, next ?? undefined);
  return true;
}

let caller: Caller | null = null;
/** Aborts the live work (event streams) of the view being left. */
let leaving = new AbortController();

// ---------------------------------------------------------------- sign-in

const meta = (name: string) =>
  document.querySelector<HTMLMetaElement>(`meta[name="${name}"]`)?.content || undefined;
const oidc = { issuer: meta("boundloop-oidc-issuer"), clientId: meta("boundloop-oidc-client-id") };

/** A token in the fragment (`#token=…`, what `npm run dev` prints) moves to session storage at once. */
function takeFragmentToken(): void {
  const match = /^#token=([^&]+)/.exec(location.hash);
  if (!match?.[1]) return;
  setToken(decodeURIComponent(match[1]));
  history.replaceState(null, "", `${location.pathname}#/runs`);
}

/**
 * Completes an OIDC redirect (`?code=…&state=…`, or `?error=…&state=…` when the issuer refused), then
 * clears the query from the address bar.
 * @throws the sign-in's error (shown on the sign-in form)
 */
async function takeOidcRedirect(): Promise<void> {
  const query = new URLSearchParams(location.search);
  if (!oidc.issuer || !oidc.clientId || !query.has("state")) return;
  if (!query.has("code") && !query.has("error")) return;
  const { completeSignIn } = await import("./oidc.js");
  try {
    setToken(await completeSignIn(oidc.issuer, oidc.clientId));
  } finally {
    history.replaceState(null, "", `${location.pathname}#/runs`);
  }
}

function signInView(note?: string): void {
  leaving.abort();
  document.getElementById("who")?.replaceChildren();
  const field = h("textarea", { id: "token", name: "token", rows: 3, required: true, autocomplete: "off" });
  const form = h(
    "form",
    {
      onsubmit: (event: Event) => {
        event.preventDefault();
        setToken((field as HTMLTextAreaElement).value.trim());
        location.hash = "#/runs";
        void route();
      },
    },
    h("label", { for: "token" }, "Access token"),
    field,
    h("button", { type: "submit" }, "Sign in with the token"),
  );
  view().replaceChildren(
    h("h1", {}, "Sign in"),
    ...(note ? [alert(note)] : []),
    oidc.issuer && oidc.clientId
      ? h(
          "p",
          {},
          h(
            "button",
            {
              type: "button",
              onclick: async () => {
                const { signIn } = await import("./oidc.js");
                await signIn(oidc.issuer as string, oidc.clientId as string);
              },
            },
            "Sign in",
          ),
        )
      : h("p", {}, "Locally, npm run dev prints a console link that signs you in."),
    form,
  );
}

/** Forgets the bearer token, and the tokens oidc-client-ts kept when the page signs in at an issuer. */
async function forgetTokens(): Promise<void> {
  clearToken();
  caller = null;
  if (oidc.issuer && oidc.clientId)
    await (await import("./oidc.js")).forgetSignIn(oidc.issuer, oidc.clientId);
}

function showCaller(): void {
  const who = document.getElementById("who");
  if (!who || !caller) return;
  who.replaceChildren(
    `Signed in as ${caller.sub} (tenant ${caller.tenant}) `,
    h(
      "button",
      {
        type: "button",
        onclick: async () => {
          await forgetTokens();
          signInView();
        },
      },
      "Sign out",
    ),
  );
}

// ---------------------------------------------------------------- runs

interface RunRecord {
  runId: string;
  userId: string;
  status: string;
  cycles: number | null;
  cyclesRecorded: number;
  usage: { totalTokens: number };
  startedAt: string;
  durationMs: number | null;
  answer: string | null;
  reason: string | null;
  steps?: Array<{
    cycle: number;
    toolCalls: Array<{ id: string; name: string; arguments: string; result: ToolResult }>;
  }>;
  pendingApprovals?: Approval[];
}

interface ToolResult {
  status: string;
  data: unknown;
  error: { code?: string } | null;
}

/** A tool result in a line: its status and error code, or the backend's numbers from its data. */
function resultText(result: ToolResult): string {
  if (result.error) return `${result.status} ${result.error.code ?? ""}`.trim();
  const raw = (result.data ?? {}) as Record<string, unknown>;
  // recordInvoice answers `{invoice, replayed}`; calculateTax the quote itself.
  const data = (raw.invoice && typeof raw.invoice === "object" ? raw.invoice : raw) as Record<
    string,
    unknown
  >;
  const fields = [
    "jurisdiction",
    "subtotal",
    "taxAmount",
    "grossTotal",
    "currency",
    "rateVersion",
    "invoiceId",
  ];
  const parts = fields
    .filter((name) => data[name] !== undefined)
    .map((name) => `${name} ${amount(data[name])}`);
  return parts.length > 0 ? parts.join(", ") : result.status;
}

async function runsView(): Promise<void> {
  const prompt = h("textarea", { id: "prompt", name: "prompt", rows: 3, required: true });
  const status = h("div", { "aria-live": "polite" });
  const start = async (event: Event) => {
    event.preventDefault();
    status.replaceChildren("Starting…");
    const answer = await api<{ runId?: string }>("/v1/runs", {
      method: "POST",
      body: { prompt: (prompt as HTMLTextAreaElement).value },
      headers: { prefer: "respond-async", "idempotency-key": crypto.randomUUID() },
    });
    if (answer.body?.runId && answer.status < 300) location.hash = `#/runs/${answer.body.runId}`;
    else status.replaceChildren(alert(problemText(answer.status, answer.body)));
  };
  const rows = h("tbody");
  const more = h("button", { type: "button", hidden: true }, "More runs");
  view().replaceChildren(
    h("h1", {}, "Runs"),
    h(
      "form",
      { onsubmit: start },
      h("label", { for: "prompt" }, "Prompt"),
      prompt,
      h("button", { type: "submit" }, "Start run"),
    ),
    status,
    scrollTable("Your runs", ["Run", "Status", "Cycles", "Tokens", "Started", "Duration"], rows),
    more,
  );
  await paged<RunRecord>("/v1/runs?limit=20", {
    status,
    more,
    show: (page) => {
      const items = [...page].sort((a, b) => b.startedAt.localeCompare(a.startedAt));
      for (const run of items) {
        rows.append(
          h(
            "tr",
            {},
            h("td", {}, h("a", { href: `#/runs/${run.runId}` }, run.runId)),
            h("td", {}, run.status),
            h("td", {}, String(run.cycles ?? run.cyclesRecorded)),
            h("td", {}, String(run.usage.totalTokens)),
            h("td", {}, time(run.startedAt)),
            h("td", {}, seconds(run.durationMs)),
          ),
        );
      }
    },
  });
}

/** One timeline row's text for an event. */
function eventText(event: RunEvent): Child[] {
  // biome-ignore lint/suspicious/noExplicitAny: event fields per type, docs/run-events.md
  const e = event as Record<string, any>;
  switch (event.type) {
    case "run.started":
      return [`Run started: at most ${e.limits?.maxCycles} cycles, ${seconds(e.limits?.timeoutMs)}`];
    case "model.call.finished":
      return [
        `Model call, cycle ${e.cycle}: ${e.finishReason ?? "no finish reason"}, ${e.usage?.totalTokens ?? 0} tokens, ${e.latencyMs} ms`,
      ];
    case "tool.call.started":
      return [`Tool call ${e.name} (cycle ${e.cycle}) with `, h("code", {}, JSON.stringify(e.arguments))];
    case "tool.call.finished":
      return [
        `Tool result ${e.name}: ${e.status}${e.errorCode ? ` ${e.errorCode}` : ""} (${e.latencyMs} ms)`,
      ];
    case "approval.requested":
      return [
        `Approval requested for ${e.toolName}: gross total ${e.preview?.grossTotal} ${e.preview?.currency} (subtotal ${e.preview?.subtotal}, tax ${e.preview?.taxAmount})`,
      ];
    case "approval.decided":
      return [`Approval ${e.decision} by ${e.decidedBy}${e.reason ? `: ${e.reason}` : ""}`];
    case "approval.expired":
      return ["Approval expired"];
    case "answer.ungrounded":
      return [
        `Answer numbers no tool result gave: ${(e.ungrounded ?? []).map((n: { text: string }) => n.text).join(", ")} (${e.action})`,
      ];
    case "run.finished":
      return [
        `Run ${e.status} after ${e.cycles} cycle(s), ${seconds(e.durationMs)}`,
        e.answer ? h("p", { class: "answer" }, String(e.answer)) : null,
      ];
    default:
      return [event.type];
  }
}

/**
 * A run's facts as `dt`/`dd` pairs, the same terms whatever the run's state (values "…" before the
 * record is read), so updating them moves nothing: status, cycles, tokens, started, duration, who started
 * it, and what it waits for (the pending approvals, with a link to the inbox).
 */
function runFacts(run: RunRecord | undefined): HTMLElement[] {
  const fact = (term: string, ...value: Array<string | HTMLElement>) => [
    h("dt", {}, term),
    h("dd", {}, ...value),
  ];
  const pending = run?.pendingApprovals ?? [];
  const waiting = pending.map(
    (approval) =>
      `approval of ${approval.toolName} (gross total ${approval.preview.grossTotal} ${approval.preview.currency})`,
  );
  return [
    ...fact("Status", run?.status ?? "…"),
    ...fact("Cycles", run ? String(run.cycles ?? run.cyclesRecorded) : "…"),
    ...fact("Tokens", run ? String(run.usage.totalTokens) : "…"),
    ...fact("Started", run ? time(run.startedAt) : "…"),
    ...fact("Duration", run ? seconds(run.durationMs) : "…"),
    ...fact("Started by", run?.userId ?? "…"),
    ...(waiting.length === 0
      ? fact("Waiting for", run ? "nothing" : "…")
      : fact(
          "Waiting for",
          `${waiting.join("; ")}. `,
          h("a", { href: "#/approvals" }, "Open the approvals inbox"),
        )),
  ];
}

/** Fills a run view's parts from the run's record: its facts, tool calls and results. */
function showRunRecord(run: RunRecord, parts: { summary: HTMLElement; results: HTMLElement }): void {
  const { summary, results } = parts;
  summary.replaceChildren(...runFacts(run));
  results.replaceChildren(
    ...(run.steps ?? []).flatMap((step) =>
      step.toolCalls.map((call) =>
        h(
          "tr",
          {},
          h("td", {}, String(step.cycle)),
          h("td", {}, call.name),
          h("td", {}, h("code", {}, call.arguments)),
          h("td", {}, resultText(call.result)),
        ),
      ),
    ),
  );
}

/** One timeline row of an event, keyed by its sequence. */
function timelineRow(event: RunEvent): HTMLElement {
  return h(
    "li",
    { "data-seq": event.seq, "data-type": event.type },
    h("span", { class: "type" }, event.type),
    " ",
    h("time", { datetime: event.at }, time(event.at).slice(11)),
    " ",
    ...eventText(event),
  );
}

/**
 * A run's view. Nothing in it moves while events arrive (no layout shift): the facts keep their rows and
 * change values in place, the timeline is a box of fixed height that scrolls (following the newest row
 * while the reader is at its end), and the table of tool calls, the one part that grows, comes last.
 */
async function runView(runId: string): Promise<void> {
  const signal = leaving.signal;
  const summary = h("dl", { class: "facts" });
  const results = h("tbody");
  // Focusable, so a keyboard can scroll it.
  const timeline = h("ol", { class: "timeline", "aria-label": "Timeline", tabindex: "0" });
  const live = h("p", { "aria-live": "polite", class: "live" }, "Following the run's events…");
  view().replaceChildren(
    h("h1", {}, `Run ${runId}`),
    summary,
    h("h2", {}, "Timeline"),
    live,
    timeline,
    scrollTable("Tool calls and the backend's results", ["Cycle", "Tool", "Arguments", "Result"], results),
  );
  summary.replaceChildren(...runFacts(undefined));
  const refresh = async () => {
    const answer = await api<RunRecord>(`/v1/runs/${encodeURIComponent(runId)}`);
    if (signal.aborted) return;
    if (!answer.ok) return summary.replaceChildren(alert(problemText(answer.status, answer.body)));
    showRunRecord(answer.body, { summary, results });
  };
  await refresh();
  const seen = new Set<number>();
  await followEvents(runId, {
    signal,
    onEvent: (event) => {
      if (seen.has(event.seq)) return;
      seen.add(event.seq);
      const atEnd = timeline.scrollTop + timeline.clientHeight >= timeline.scrollHeight - 4;
      timeline.append(timelineRow(event));
      if (atEnd) timeline.scrollTop = timeline.scrollHeight;
      if (event.type !== "model.call.finished") void refresh();
      if (event.type === "run.finished") live.textContent = "The run has ended.";
    },
    onError: (status) => {
      live.replaceChildren(alert(`The run's events could not be read (HTTP ${status}).`));
    },
  });
}

// ---------------------------------------------------------------- approvals

interface Approval {
  approvalId: string;
  runId?: string;
  toolName: string;
  arguments: unknown;
  preview: Record<string, string>;
  requestedBy: string;
  requestedAt: string;
  expiresAt: string;
  status?: string;
  decidedBy?: string | null;
  decidedAt?: string | null;
  reason?: string | null;
}

function decidedText(approval: Approval): string {
  return `${approval.status} by ${approval.decidedBy} at ${time(approval.decidedAt)}${approval.reason ? `: ${approval.reason}` : ""}`;
}

/** The backend's numbers of an approval beside what the model asked for. */
function previewColumns(approval: Approval): HTMLElement {
  const preview = approval.preview;
  const fact = (term: string, value: unknown) => [h("dt", {}, term), h("dd", {}, String(value ?? "—"))];
  return h(
    "div",
    { class: "columns" },
    h(
      "section",
      { "aria-label": "The backend's numbers" },
      h("h4", {}, "The backend's numbers (from the quote)"),
      h(
        "dl",
        { class: "facts" },
        ...fact("Subtotal", preview.subtotal),
        ...fact("Tax", preview.taxAmount),
        ...fact("Gross total", preview.grossTotal),
        ...fact("Currency", preview.currency),
        ...fact("Jurisdiction", preview.jurisdiction),
        ...fact("Rate version", preview.rateVersion),
        ...fact("Quote", preview.quoteId),
        ...fact("Threshold", preview.threshold),
      ),
    ),
    h(
      "section",
      { "aria-label": "What the model asked for" },
      h("h4", {}, "What the model asked for"),
      h("pre", {}, json(approval.arguments)),
    ),
  );
}

/**
 * An approval card of the inbox: the backend's numbers, who asked and when, time left, and the decision
 * form; `onDecided` gets the approval as the API stored the decision.
 */
function approvalCard(approval: Approval, onDecided: (decided: Approval) => void): HTMLElement {
  const id = approval.approvalId;
  const reason = h("input", { id: `reason-${id}`, name: "reason", type: "text", maxlength: 500 });
  const outcome = h("div", { "aria-live": "polite" });
  const decide = async (decision: "approve" | "reject") => {
    const text = (reason as HTMLInputElement).value.trim();
    if (decision === "reject" && text === "") {
      outcome.replaceChildren(alert("Give a reason to reject."));
      (reason as HTMLInputElement).focus();
      return;
    }
    const answer = await api<Approval>(
      `/v1/runs/${encodeURIComponent(approval.runId ?? "")}/approvals/${encodeURIComponent(id)}`,
      { method: "POST", body: text ? { decision, reason: text } : { decision } },
    );
    if (!answer.ok) return outcome.replaceChildren(alert(problemText(answer.status, answer.body)));
    form.remove();
    outcome.replaceChildren(h("p", { class: "decided" }, `Decided: ${decidedText(answer.body)}`));
    onDecided(answer.body);
  };
  const form = h(
    "form",
    { onsubmit: (event: Event) => event.preventDefault() },
    h("label", { for: `reason-${id}` }, "Reason (required to reject)"),
    reason,
    h(
      "div",
      { class: "actions" },
      h("button", { type: "button", onclick: () => decide("approve") }, "Approve"),
      h("button", { type: "button", onclick: () => decide("reject") }, "Reject"),
    ),
  );
  const own = caller && approval.requestedBy === caller.sub;
  return h(
    "article",
    { class: "approval", "aria-labelledby": `title-${id}` },
    h(
      "h3",
      { id: `title-${id}` },
      `${approval.toolName} for run `,
      h("a", { href: `#/runs/${approval.runId}` }, String(approval.runId)),
    ),
    previewColumns(approval),
    h(
      "p",
      {},
      `Requested by ${approval.requestedBy} at ${time(approval.requestedAt)}; ${timeLeft(approval.expiresAt)}.`,
    ),
    own
      ? h("p", { class: "note" }, "You started this run: under the four-eyes rule another person decides.")
      : null,
    form,
    outcome,
  );
}

/** The columns of the decided approvals' table: the decision, the backend's numbers, then where from. */
const DECIDED_COLUMNS = [
  "Decided",
  "Decision",
  "By",
  "Reason",
  "Subtotal",
  "Tax",
  "Gross total",
  "Currency",
  "Rate version",
  "Tool",
  "Requested by",
  "Run",
];

/** A decided approval as a table row: who decided, when and why, beside the backend's numbers. */
function decidedRow(approval: Approval): HTMLElement {
  const { preview } = approval;
  const numbers = [
    preview.subtotal,
    preview.taxAmount,
    preview.grossTotal,
    preview.currency,
    preview.rateVersion,
  ];
  return h(
    "tr",
    { "data-approval-id": approval.approvalId },
    h("td", {}, time(approval.decidedAt)),
    h("td", {}, String(approval.status)),
    h("td", {}, approval.decidedBy ?? "—"),
    h("td", {}, approval.reason ?? "—"),
    ...numbers.map((value) => h("td", {}, String(value ?? "—"))),
    h("td", {}, approval.toolName),
    h("td", {}, approval.requestedBy),
    h("td", {}, h("a", { href: `#/runs/${approval.runId}` }, String(approval.runId))),
  );
}

/**
 * The inbox: the tenant's pending approvals (`GET /v1/approvals?status=pending`, oldest request first)
 * as cards, then its decided ones, newest first (`?status=decided`), each listing paginated. A decision
 * taken on the page joins the decided table at once (the API's lists are eventually consistent on AWS,
 * so a reload a moment later may not show it yet).
 */
async function approvalsView(): Promise<void> {
  const pending = h("div");
  const pendingStatus = h("div", { "aria-live": "polite" });
  const morePending = h("button", { type: "button", hidden: true }, "More approvals");
  const decided = h("tbody");
  const decidedStatus = h("div", { "aria-live": "polite" });
  const moreDecided = h("button", { type: "button", hidden: true }, "More decisions");
  const shown = new Set<string>();
  const addDecided = (items: Approval[], where: "top" | "end") => {
    const rows = items.filter((item) => !shown.has(item.approvalId)).map(decidedRow);
    for (const item of items) shown.add(item.approvalId);
    if (where === "top") decided.prepend(...rows);
    else decided.append(...rows);
    decidedStatus.replaceChildren(shown.size === 0 ? h("p", {}, "No decisions yet.") : "");
  };
  view().replaceChildren(
    h("h1", {}, "Approvals"),
    h("h2", {}, "Waiting for a decision"),
    pendingStatus,
    pending,
    morePending,
    h("h2", {}, "Decided"),
    decidedStatus,
    scrollTable("The tenant's decided approvals, newest first", DECIDED_COLUMNS, decided),
    moreDecided,
  );
  const answered = await paged<Approval>("/v1/approvals?status=pending&limit=50", {
    status: pendingStatus,
    more: morePending,
    show: (items, { first }) => {
      pending.append(...items.map((item) => approvalCard(item, (done) => addDecided([done], "top"))));
      // A page is full unless it is the last: an empty first page means nothing is pending.
      const empty = first && items.length === 0;
      pendingStatus.replaceChildren(empty ? h("p", {}, "Nothing waits for a decision.") : "");
    },
  });
  if (!answered) return;
  await paged<Approval>("/v1/approvals?status=decided&limit=20", {
    status: decidedStatus,
    more: moreDecided,
    show: (items) => addDecided(items, "end"),
  });
}

// ---------------------------------------------------------------- ledger

interface Invoice {
  invoiceId: string;
  clientName: string;
  jurisdiction: string;
  currency: string;
  rateVersion: string;
  subtotal: unknown;
  taxAmount: unknown;
  grossTotal: unknown;
  runId: string;
  createdBy: string;
  createdAt: string;
}

async function ledgerView(): Promise<void> {
  const rows = h("tbody");
  const status = h("div", { "aria-live": "polite" });
  const more = h("button", { type: "button", hidden: true }, "More invoices");
  const columns = [
    "Invoice",
    "Client",
    "Jurisdiction",
    "Subtotal",
    "Tax",
    "Gross total",
    "Currency",
    "Rate version",
    "Recorded",
    "By",
    "Run",
  ];
  view().replaceChildren(
    h("h1", {}, "Ledger"),
    status,
    scrollTable("The tenant's invoices", columns, rows),
    more,
  );
  await paged<Invoice>("/v1/invoices?limit=20", {
    status,
    more,
    show: (items, { first }) => {
      for (const invoice of items) {
        rows.append(
          h(
            "tr",
            {},
            ...[
              invoice.invoiceId,
              invoice.clientName,
              invoice.jurisdiction,
              amount(invoice.subtotal),
              amount(invoice.taxAmount),
              amount(invoice.grossTotal),
              invoice.currency,
              invoice.rateVersion,
              time(invoice.createdAt),
              invoice.createdBy,
            ].map((cell) => h("td", {}, cell)),
            h("td", {}, h("a", { href: `#/runs/${invoice.runId}` }, invoice.runId)),
          ),
        );
      }
      if (items.length === 0 && first) status.replaceChildren(h("p", {}, "No invoices yet."));
    },
  });
}

// ---------------------------------------------------------------- routing

async function route(): Promise<void> {
  leaving.abort();
  leaving = new AbortController();
  const token = getToken();
  caller = token ? callerOf(token) : null;
  if (!caller) return signInView();
  showCaller();
  const hash = location.hash || "#/runs";
  for (const link of document.querySelectorAll("nav a")) {
    const here = hash.startsWith(link.getAttribute("href") ?? "");
    if (here) link.setAttribute("aria-current", "page");
    else link.removeAttribute("aria-current");
  }
  const run = /^#\/runs\/([\w-]+)$/.exec(hash);
  if (run?.[1]) await runView(run[1]);
  else if (hash === "#/approvals") await approvalsView();
  else if (hash === "#/ledger") await ledgerView();
  else await runsView();
  document.title = `${view().querySelector("h1")?.textContent ?? "Console"} · boundloop console`;
}

whenUnauthorized(() => {
  void forgetTokens();
  signInView("The API did not accept the token (expired?). Sign in again.");
});
takeFragmentToken();
window.addEventListener("hashchange", () => {
  void route();
  view().focus();
});
takeOidcRedirect().then(
  () => route(),
  (error: unknown) => signInView(`Sign-in failed: ${String(error)}`),
);
