/**
 * A run's view (`#/runs/<runId>`): its status and facts, Cancel for those allowed to cancel it, its prompt
 * beside its answer, the live timeline of its events, and each tool call with the model's arguments
 * beside the backend's result. Nothing moves while events arrive (no layout shift): facts keep their
 * places and change values, the prompt, answer and timeline are boxes of fixed height that scroll, and
 * the tool calls, the one part that grows, come last.
 */
import { api, followEvents, type RunEvent, type RunRecord, type StreamHealth } from "./api.js";
import {
  alert,
  type Child,
  count,
  h,
  isLive,
  money,
  problemText,
  seconds,
  statusBadge,
  time,
  view,
} from "./dom.js";
import {
  callPairing,
  callsOfRecord,
  invoiceLinks,
  type ToolCallView,
  timelineRow,
  toolCallCard,
} from "./run-parts.js";
import { holds, session } from "./session.js";

/** A run's facts, in order (a new fact of a run is one more entry here); values "…" until it is read. */
const FACTS: Array<{ term: string; value: (run: RunRecord, calls: ToolCallView[]) => Child | Child[] }> = [
  { term: "Started by", value: (run) => run.userId },
  { term: "Started", value: (run) => time(run.startedAt) },
  { term: "Duration", value: (run) => seconds(run.durationMs) },
  { term: "Cycles", value: (run) => String(run.cycles ?? run.cyclesRecorded) },
  { term: "Tokens", value: (run) => count(run.usage.totalTokens) },
  { term: "Cost", value: (run) => money(run.cost) },
  {
    term: "Invoices recorded",
    value: (_run, calls) => {
      const links = invoiceLinks(calls, holds("billing:read"));
      return links.length === 0 ? "none" : links.flatMap((link, i) => (i === 0 ? [link] : [", ", link]));
    },
  },
];

/**
 * What the run waits for: its pending approvals, with a link to the inbox for those who may decide
 * (`billing:approve`; the API refuses the inbox to others, who are told who decides); budget while it is
 * `awaiting_quota` (docs/quotas.md); "nothing" otherwise.
 */
function waitingFor(run: RunRecord | undefined): Child[] {
  if (!run) return ["…"];
  if (run.status === "awaiting_quota") {
    return [
      "budget: a quota cannot cover its next model call yet; it goes on by itself when budget frees up or the quota's day turns. ",
      h("a", { href: "#/usage" }, "See the usage and limits"),
    ];
  }
  const pending = run.pendingApprovals ?? [];
  if (pending.length === 0) return [isLive(run.status) ? "nothing: it is working" : "nothing: it has ended"];
  const what = pending.map((a) => `approval of ${a.toolName}, ${a.preview.grossTotal} ${a.preview.currency}`);
  if (!holds("billing:approve"))
    return [`${what.join("; ")}. A person of your tenant with billing:approve decides it.`];
  return [`${what.join("; ")}. `, h("a", { href: "#/approvals" }, "Open the approvals inbox")];
}

/** The facts list, the same terms whatever the run's state, so updating it moves nothing. */
function factsOf(run: RunRecord | undefined, calls: ToolCallView[]): HTMLElement[] {
  const fact = (term: string, ...value: Child[]) =>
    h("div", { class: "fact" }, h("dt", {}, term), h("dd", {}, ...value));
  return [
    ...FACTS.map((f) => fact(f.term, ...(run ? [f.value(run, calls)].flat() : ["…"]))),
    h("div", { class: "fact wide" }, h("dt", {}, "Waiting for"), h("dd", {}, ...waitingFor(run))),
  ];
}

/**
 * The run's Cancel control: for its user or a billing writer while it can still change; a confirmation
 * step, then `POST /v1/runs/{runId}/cancel`, whose refusal (e.g. a synchronous run, RUN_NOT_RUNNING) is
 * shown. `after` re-reads the run.
 */
function cancelControl(run: RunRecord, box: HTMLElement, after: () => void): void {
  const allowed = run.userId === session.caller?.sub || holds("billing:write");
  if (!isLive(run.status)) {
    const ended =
      run.status === "cancelled" || run.status === "abandoned"
        ? (run.reason ?? "This run has ended.")
        : "This run has ended.";
    box.replaceChildren(h("p", { class: "muted" }, ended));
    return;
  }
  if (!allowed) {
    box.replaceChildren(h("p", { class: "muted" }, "Only its user or a billing writer may cancel this run."));
    return;
  }
  const idle = () =>
    box.replaceChildren(h("button", { type: "button", class: "danger", onclick: confirm }, "Cancel run…"));
  const confirm = () => {
    const yes = h("button", { type: "button", class: "danger", onclick: cancel }, "Yes, cancel the run");
    box.replaceChildren(
      h(
        "p",
        { id: "cancel-question" },
        "Cancel this run? Its work stops and the approvals it waits for are withdrawn.",
      ),
      h(
        "div",
        { class: "actions" },
        yes,
        h("button", { type: "button", class: "secondary", onclick: idle }, "Keep it running"),
      ),
    );
    yes.focus();
  };
  const cancel = async () => {
    box.replaceChildren(h("p", {}, "Cancelling…"));
    const answer = await api<RunRecord>(`/v1/runs/${encodeURIComponent(run.runId)}/cancel`, {
      method: "POST",
    });
    box.replaceChildren(
      answer.ok
        ? h("p", { role: "status" }, `Cancelled by ${session.caller?.sub}.`)
        : alert(problemText(answer.status, answer.body)),
    );
    after();
  };
  idle();
}

/**
 * What the live line says of the event stream's health: while it is down, why (the server's problem, or
 * no answer) and when the next attempt is; once it is back, since when and since when it was down, so a
 * timeline that stopped moving is never taken for a quiet run. `down` keeps when the trouble began.
 */
function healthText(health: StreamHealth, down: { since?: string }): string {
  if (health.state === "live") {
    const text = `Live again since ${time(new Date().toISOString())}: the stream was down from ${down.since}, and the events of that time are in the timeline.`;
    down.since = undefined;
    return text;
  }
  down.since ??= time(new Date().toISOString());
  const why =
    health.status === 0
      ? "the server did not answer"
      : `the server answered ${problemText(health.status, health.problem)}`;
  return `The live stream is down since ${down.since} (${why}): reconnecting, attempt ${health.failures + 1} in ${Math.ceil(health.retryMs / 1000)} s. The timeline may be behind.`;
}

/** A box of fixed height with a run's text (its prompt, its answer), scrolling when the text is longer. */
const textBox = (label: string, content: HTMLElement) =>
  h("section", { class: "text" }, h("h2", {}, label), content);

/** The prompt as the record keeps it: its excerpt, and how much of it that is. */
function promptText(run: RunRecord): Array<string | Node> {
  const { excerpt, chars } = run.prompt;
  if (excerpt === undefined) return [h("span", { class: "none" }, `Not kept (${chars} characters).`)];
  if (excerpt.length >= chars) return [excerpt];
  return [
    `${excerpt}…`,
    h("span", { class: "note-inline" }, ` (the first ${excerpt.length} of ${chars} characters)`),
  ];
}

/** The answer, or why there is none (yet). */
function answerText(run: RunRecord): Array<string | Node> {
  if (run.answer) return [run.answer];
  if (isLive(run.status)) return [h("span", { class: "none" }, "No answer yet.")];
  return [h("span", { class: "none" }, run.reason ?? "The run ended without an answer.")];
}

/** A run's view (see the module comment). */
export async function runView(runId: string): Promise<void> {
  const signal = session.leaving.signal;
  // A badge from the start (the status's replaces it), so the title keeps its height.
  const badge = h("span", { class: "badge-slot" }, h("span", { class: "badge stop" }, "…"));
  const actions = h("div", { class: "run-actions" });
  const facts = h("dl", { class: "facts grid" });
  // A refused read is said here: a list of terms may hold only terms and their values.
  const refusal = h("div", { class: "run-refusal" });
  const box = () => h("div", { class: "text-box", tabindex: "0" }, "…");
  const [prompt, answer] = [box(), box()];
  // Focusable, so a keyboard can scroll it.
  const timeline = h("ol", { class: "timeline", "aria-label": "Timeline", tabindex: "0" });
  const live = h("p", { "aria-live": "polite", class: "live" }, "Following the run's events…");
  const cards = h("div", { class: "calls" });
  const none = h("p", { class: "muted" }, "No tool call has finished yet.");
  view().replaceChildren(
    h("div", { class: "title-row" }, h("h1", {}, "Run ", h("span", { class: "run-id" }, runId)), badge),
    actions,
    refusal,
    facts,
    h("div", { class: "columns texts" }, textBox("Prompt", prompt), textBox("Answer", answer)),
    h("h2", {}, "Timeline"),
    live,
    timeline,
    h("h2", {}, "Tool calls: the model's arguments and the backend's results"),
    none,
    cards,
  );
  const calls: ToolCallView[] = [];
  let record: RunRecord | undefined;
  // The Cancel control changes only with the status: a read while someone confirms keeps their step.
  let controlFor: string | undefined;
  let refused4xx = false;
  facts.replaceChildren(...factsOf(undefined, calls));
  const addCall = (call: ToolCallView) => {
    if (calls.some((known) => known.id === call.id)) return;
    calls.push(call);
    cards.append(toolCallCard(call, calls.length));
    none.textContent = `${calls.length} tool call(s), in the order they finished.`;
    if (record) facts.replaceChildren(...factsOf(record, calls));
  };
  const refresh = reader(
    runId,
    signal,
    (run) => {
      record = run;
      refusal.replaceChildren();
      badge.replaceChildren(statusBadge(run.status));
      facts.replaceChildren(...factsOf(run, calls));
      prompt.replaceChildren(...promptText(run));
      answer.replaceChildren(...answerText(run));
      for (const call of callsOfRecord(run)) addCall(call);
      if (controlFor !== run.status) cancelControl(run, actions, () => void refresh());
      controlFor = run.status;
    },
    (problem, status) => {
      refused4xx = status >= 400 && status < 500;
      refusal.replaceChildren(problem);
    },
  );
  await refresh();
  // A run the API will not show (none such, another user's) has no events to read either: its refusal,
  // said once above, is the view's whole answer.
  if (!record && refused4xx) {
    live.replaceChildren();
    return;
  }
  const pair = callPairing();
  const seen = new Set<number>();
  const down: { since?: string } = {};
  await followEvents(runId, {
    signal,
    onHealth: (health) => {
      live.textContent = healthText(health, down);
    },
    onEvent: (event: RunEvent) => {
      if (seen.has(event.seq)) return;
      seen.add(event.seq);
      const atEnd = timeline.scrollTop + timeline.clientHeight >= timeline.scrollHeight - 4;
      timeline.append(timelineRow(event));
      if (atEnd) timeline.scrollTop = timeline.scrollHeight;
      const call = pair(event);
      if (call) addCall(call);
      if (!event.type.startsWith("tool.call.")) void refresh();
      if (event.type === "run.finished") live.textContent = "The run has ended.";
    },
    onError: (status, problem) => {
      live.replaceChildren(alert(`The run's events could not be read. ${problemText(status, problem)}`));
    },
  });
}

/**
 * Reads the run's record (`GET /v1/runs/{runId}`) whenever asked, one read at a time: asks while one
 * is on its way are folded into one more read after it.
 */
function reader(
  runId: string,
  signal: AbortSignal,
  show: (run: RunRecord) => void,
  refused: (problem: HTMLElement, status: number) => void,
): () => Promise<void> {
  let running: Promise<void> | undefined;
  let again = false;
  const read = async (): Promise<void> => {
    const answer = await api<RunRecord>(`/v1/runs/${encodeURIComponent(runId)}`);
    if (signal.aborted) return;
    if (!answer.ok) return refused(alert(problemText(answer.status, answer.body)), answer.status);
    show(answer.body);
  };
  const next = async (): Promise<void> => {
    if (running) {
      again = true;
      return running;
    }
    running = read().finally(() => {
      running = undefined;
      if (again) {
        again = false;
        void next();
      }
    });
    return running;
  };
  return next;
}
