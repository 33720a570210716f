/**
 * The approvals inbox (`#/approvals`): the tenant's pending approvals (`GET /v1/approvals?status=pending`,
 * oldest request first) as cards — the backend's numbers beside what the model asked for, who asked,
 * the time left, and Approve or Reject, each with a confirmation step — then its decided approvals,
 * newest first. The run's own user sees the buttons disabled with the four-eyes reason.
 */
import { type Approval, api } from "./api.js";
import {
  alert,
  type Child,
  decisionBadge,
  h,
  idLink,
  paged,
  problemText,
  scrollTable,
  time,
  view,
} from "./dom.js";
import { policyIdsText } from "./policy-parts.js";
import { session } from "./session.js";
import { fields } from "./values.js";

/**
 * What is left of `ms` milliseconds to a deadline, e.g. `23 h 59 min left`, in whole minutes rounded
 * down; "less than a minute" in the last one (an approval that can still be decided never reads "0 min");
 * none once it has passed.
 */
function timeLeft(ms: number): string {
  if (!(ms > 0)) return "its time to decide has passed";
  const minutes = Math.floor(ms / 60_000);
  if (minutes === 0) return "less than a minute left";
  return minutes >= 60 ? `${Math.floor(minutes / 60)} h ${minutes % 60} min left` : `${minutes} min left`;
}

/**
 * Keeps `left` saying the time left until `expiresAt` by the page's clock: it changes when the whole
 * minutes left do (a timer set for that moment, not a poll), and at the expiry `expired` is called (the
 * API refuses a decision from then on: 409 APPROVAL_EXPIRED). Stops when `signal` aborts (the view is
 * left, the card decided or closed).
 */
function countdown(expiresAt: string, left: HTMLElement, signal: AbortSignal, expired: () => void): void {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const tick = () => {
    const ms = Date.parse(expiresAt) - Date.now();
    left.textContent = `; ${timeLeft(ms)}`;
    if (!(ms > 0)) return expired();
    timer = setTimeout(tick, (ms % 60_000) + 1);
  };
  signal.addEventListener("abort", () => clearTimeout(timer));
  tick();
}

/** Who decided, when and why. */
const decidedText = (approval: Approval) =>
  `${approval.status} by ${approval.decidedBy} at ${time(approval.decidedAt)}${approval.reason ? `: ${approval.reason}` : ""}`;

/** The policies that asked for the approval (`preview.policyIds`), or the rule that did. */
function askedBy(approval: Approval): Child {
  const ids = (approval.preview as Record<string, unknown>).policyIds;
  if (Array.isArray(ids) && ids.length > 0) return policyIdsText("approval", ids.map(String));
  return approval.preview.threshold ? "the approval threshold (APPROVAL_RULES)" : "—";
}

/**
 * The backend's numbers of an approval (from the quote) beside what the model asked for. Each region is
 * named by its heading and the card's title, so the regions of several cards are told apart.
 */
function previewColumns(approval: Approval): HTMLElement {
  const { preview, approvalId: id } = approval;
  const fact = (term: string, value: unknown) => [h("dt", {}, term), h("dd", {}, String(value ?? "—"))];
  return h(
    "div",
    { class: "columns" },
    h(
      "section",
      { "aria-labelledby": `numbers-${id} title-${id}` },
      h("h4", { id: `numbers-${id}` }, "The backend's numbers (from the quote)"),
      h(
        "dl",
        { class: "kv" },
        ...fact("Subtotal", preview.subtotal),
        ...fact("Tax", preview.taxAmount),
        ...fact("Gross total", preview.grossTotal),
        ...fact("Currency", preview.currency),
        ...fact("Jurisdiction", preview.jurisdiction),
        ...fact("Rate version", preview.rateVersion),
        ...fact("Quote", preview.quoteId),
        ...fact("Threshold", preview.threshold),
        h("dt", {}, "Asked for by"),
        h("dd", { class: "asked-by" }, askedBy(approval)),
      ),
    ),
    h(
      "section",
      { "aria-labelledby": `asked-${id} title-${id}` },
      h("h4", { id: `asked-${id}` }, "What the model asked for"),
      approval.arguments && typeof approval.arguments === "object"
        ? fields(approval.arguments as Record<string, unknown>)
        : h("p", {}, String(approval.arguments)),
    ),
  );
}

/** What each decision does, said in its confirmation step. */
const CONSEQUENCE = {
  approve: (a: Approval) =>
    `Approve ${a.toolName} for ${a.preview.grossTotal} ${a.preview.currency}? The run goes on and the call runs with the backend's numbers above.`,
  reject: (a: Approval) =>
    `Reject ${a.toolName} for ${a.preview.grossTotal} ${a.preview.currency}? The call does not run; the run goes on, and the model is told your reason.`,
} as const;

/**
 * The decision form of a card: the optional reason, Approve and Reject (distinct), a confirmation step
 * for each, then `POST /v1/runs/{runId}/approvals/{approvalId}`. For the run's own user the buttons
 * are disabled, described by the four-eyes reason. `closed` gets the approval's status when the API
 * says it can take no decision any more (409: decided elsewhere, expired, cancelled with its run).
 */
function decisionForm(
  approval: Approval,
  done: (decided: Approval) => void,
  closed: (status: string) => void,
): HTMLElement {
  const id = approval.approvalId;
  const own = approval.requestedBy === session.caller?.sub;
  const reason = h("input", {
    id: `reason-${id}`,
    name: "reason",
    type: "text",
    maxlength: 500,
    disabled: own,
  });
  const outcome = h("div", { "aria-live": "polite" });
  const actions = h("div", { class: "actions" });
  const note = h(
    "p",
    { class: "note", id: `four-eyes-${id}` },
    "You started this run: under the four-eyes rule another person of your tenant decides.",
  );
  const send = async (decision: "approve" | "reject") => {
    const text = (reason as HTMLInputElement).value.trim();
    actions.replaceChildren(h("p", {}, "Sending the decision…"));
    const answer = await api<Approval>(
      `/v1/runs/${encodeURIComponent(approval.runId ?? "")}/approvals/${encodeURIComponent(id)}`,
      { method: "POST", body: text ? { decision, reason: text } : { decision } },
    );
    if (!answer.ok) {
      const over = (answer.body as { approvalStatus?: unknown } | null)?.approvalStatus;
      // Offering the buttons again after such a refusal would only bring the same refusal.
      if (typeof over === "string") {
        actions.replaceChildren();
        (reason as HTMLInputElement).disabled = true;
        closed(over);
      } else choose();
      return outcome.replaceChildren(alert(problemText(answer.status, answer.body)));
    }
    done(answer.body);
  };
  const confirm = (decision: "approve" | "reject") => {
    outcome.replaceChildren();
    const yes = h(
      "button",
      { type: "button", class: decision === "approve" ? "approve" : "danger", onclick: () => send(decision) },
      decision === "approve" ? "Confirm approval" : "Confirm rejection",
    );
    actions.replaceChildren(
      h("p", { class: "confirm" }, CONSEQUENCE[decision](approval)),
      yes,
      h("button", { type: "button", class: "secondary", onclick: choose }, "Back"),
    );
    yes.focus();
  };
  const button = (decision: "approve" | "reject", label: string, cls: string) =>
    h(
      "button",
      {
        type: "button",
        class: cls,
        disabled: own,
        "aria-describedby": own ? `four-eyes-${id}` : undefined,
        onclick: () => confirm(decision),
      },
      label,
    );
  function choose() {
    actions.replaceChildren(button("approve", "Approve…", "approve"), button("reject", "Reject…", "danger"));
  }
  choose();
  return h(
    "form",
    { class: "decision", onsubmit: (event: Event) => event.preventDefault() },
    own ? note : null,
    h("label", { for: `reason-${id}` }, "Reason (optional; a rejection's reason is given to the model)"),
    reason,
    actions,
    outcome,
  );
}

/**
 * An approval card of the inbox: the backend's numbers, who asked and when, the time left while it is
 * pending, and the decision form; `onDecided` gets the approval as the API stored the decision.
 */
function approvalCard(
  approval: Approval,
  signal: AbortSignal,
  onDecided: (decided: Approval) => void,
): HTMLElement {
  const id = approval.approvalId;
  const left = h("span", { class: "left" });
  const state = h("p", { class: "state" }, decisionBadge("pending"));
  // The countdown stops with the view, or once the card is decided or closed.
  const ticking = new AbortController();
  signal.addEventListener("abort", () => ticking.abort());
  const card = h(
    "article",
    { class: "approval", "aria-labelledby": `title-${id}`, "data-approval-id": id },
    h(
      "h3",
      { id: `title-${id}` },
      `${approval.toolName}: ${approval.preview.grossTotal} ${approval.preview.currency}, run `,
      idLink(`#/runs/${approval.runId}`, String(approval.runId)),
    ),
    state,
    h(
      "p",
      { class: "when" },
      `Requested by ${approval.requestedBy} at ${time(approval.requestedAt)}`,
      left,
      ".",
    ),
    previewColumns(approval),
  );
  const form = decisionForm(
    approval,
    (decided) => {
      ticking.abort();
      left.remove();
      state.replaceChildren(decisionBadge(String(decided.status)));
      form.replaceWith(h("p", { class: "decided", role: "status" }, `Decided: ${decidedText(decided)}`));
      onDecided(decided);
    },
    (status) => {
      ticking.abort();
      left.remove();
      state.replaceChildren(decisionBadge(status));
    },
  );
  card.append(form);
  countdown(approval.expiresAt, left, ticking.signal, () => {
    state.replaceChildren(decisionBadge("expired"));
    form.replaceWith(
      h(
        "p",
        { class: "decided", role: "status" },
        `Expired at ${time(approval.expiresAt)}: nobody can decide it any more; the call gets APPROVAL_EXPIRED and the run goes on.`,
      ),
    );
  });
  return card;
}

/** The decided approvals' table: when, the decision, who and why, the backend's numbers, where from. */
const DECIDED_COLUMNS = [
  "Decided",
  "Decision",
  "By",
  "Reason",
  { label: "Gross total", class: "num" },
  "Tool",
  "Requested by",
  "Run",
];

/** A decided approval as a row: the decision beside the backend's numbers. */
function decidedRow(approval: Approval): HTMLElement {
  const { preview } = approval;
  const small = (text: string) => h("span", { class: "sub" }, text);
  return h(
    "tr",
    { "data-approval-id": approval.approvalId },
    h("td", {}, time(approval.decidedAt)),
    h("td", {}, decisionBadge(String(approval.status))),
    h("td", {}, approval.decidedBy ?? "—"),
    h("td", { class: "free-text" }, approval.reason ?? "—"),
    h(
      "td",
      { class: "num" },
      `${preview.grossTotal ?? "—"} ${preview.currency ?? ""}`,
      small(`${preview.subtotal} + ${preview.taxAmount} tax`),
    ),
    h("td", {}, approval.toolName, small(String(preview.rateVersion ?? ""))),
    h("td", {}, approval.requestedBy),
    h("td", {}, idLink(`#/runs/${approval.runId}`, String(approval.runId))),
  );
}

/**
 * The inbox (see the module comment). A decision taken on the page joins the decided table at once (the
 * API's lists are eventually consistent on AWS, so a reload a moment later may not show it yet).
 */
export async function approvalsView(): Promise<void> {
  const pending = h("div");
  const pendingStatus = h("div", { "aria-live": "polite" });
  const morePending = h("button", { type: "button", hidden: true, class: "secondary" }, "More approvals");
  const decided = h("tbody");
  const decidedStatus = h("div", { "aria-live": "polite" });
  const moreDecided = h("button", { type: "button", hidden: true, class: "secondary" }, "More decisions");
  const shown = new Set<string>();
  const addDecided = (items: Approval[], where: "top" | "end") => {
    const rows = items.filter((item) => !shown.has(item.approvalId)).map(decidedRow);
    for (const item of items) shown.add(item.approvalId);
    if (where === "top") decided.prepend(...rows);
    else decided.append(...rows);
    decidedStatus.replaceChildren(shown.size === 0 ? h("p", {}, "No decisions yet.") : "");
  };
  const decidedPart = [
    h("h2", {}, "Decided"),
    decidedStatus,
    scrollTable("The tenant's decided approvals, newest first", DECIDED_COLUMNS, decided),
    moreDecided,
  ];
  view().replaceChildren(
    h("h1", {}, "Approvals"),
    h("h2", {}, "Waiting for a decision"),
    pendingStatus,
    pending,
    morePending,
    ...decidedPart,
  );
  const answered = await paged<Approval>("/v1/approvals?status=pending&limit=50", {
    status: pendingStatus,
    more: morePending,
    show: (items, { first }) => {
      const signal = session.leaving.signal;
      pending.append(...items.map((item) => approvalCard(item, signal, (done) => addDecided([done], "top"))));
      const empty = first && items.length === 0;
      pendingStatus.replaceChildren(empty ? h("p", {}, "Nothing waits for a decision.") : "");
    },
  });
  // Refused (no billing:approve): the refusal alone, not an empty table that reads as "nothing decided".
  if (!answered) {
    for (const part of decidedPart) part.remove();
    return;
  }
  await paged<Approval>("/v1/approvals?status=decided&limit=20", {
    status: decidedStatus,
    more: moreDecided,
    show: (items) => addDecided(items, "end"),
  });
}
