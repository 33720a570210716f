/**
 * The parts of a run's view that its events fill: the timeline's rows, and the tool calls, each with its
 * arguments and the backend's result side by side. A call's card is added once its result is known (from
 * the live `tool.call.finished`, or from the run's steps on a reload), so cards only ever append.
 */
import type { PolicyExplanation, RunEvent, RunRecord } from "./api.js";
import { type Child, count, h, idLink, money, seconds, time, toolBadge } from "./dom.js";
import { decisionLine } from "./policy-parts.js";
import { argumentsView, resultView, type ToolErrorShape } from "./values.js";

// biome-ignore lint/suspicious/noExplicitAny: event fields per type, docs/run-events.md
type Fields = Record<string, any>;

/** A policy decision's explanation in words: the decision, its policies, the shadow set's. */
export function policyText(policy: PolicyExplanation | undefined): string {
  if (!policy) return "";
  const ids = (list: string[] | undefined) => (list && list.length > 0 ? ` by ${list.join(", ")}` : "");
  const shadow = policy.shadow ? `; shadow: ${policy.shadow.decision}${ids(policy.shadow.policyIds)}` : "";
  return `${policy.decision}${ids(policy.policyIds)}${shadow}`;
}

/** One timeline row's words for an event. */
function eventText(event: RunEvent): Child[] {
  const e = event as Fields;
  switch (event.type) {
    case "run.started":
      return [`Run started: at most ${e.limits?.maxCycles} cycles, ${seconds(e.limits?.timeoutMs)}`];
    case "model.call.finished":
      return [
        `Model call, cycle ${e.cycle}: ${e.finishReason ?? "no finish reason"}, ${count(e.usage?.totalTokens ?? 0)} tokens${e.cost ? `, ${e.cost.amount} ${e.cost.currency}` : ""}, ${e.latencyMs} ms`,
      ];
    case "tool.call.started":
      return [`Tool call ${e.name} (cycle ${e.cycle})`];
    case "tool.call.finished":
      return [
        `Tool result ${e.name}: ${e.status}${e.errorCode ? ` ${e.errorCode}` : ""} (${e.latencyMs} ms)${e.policy ? ` — policy: ${policyText(e.policy)}` : ""}`,
      ];
    case "approval.requested":
      return [
        `Approval requested for ${e.toolName}: gross total ${e.preview?.grossTotal} ${e.preview?.currency} (subtotal ${e.preview?.subtotal}, tax ${e.preview?.taxAmount}). `,
        h("a", { href: "#/approvals" }, "Open the approvals inbox"),
      ];
    case "approval.decided":
      return [`Approval ${e.decision} by ${e.decidedBy}${e.reason ? `: ${e.reason}` : ""}`];
    case "approval.expired":
      return ["Approval expired"];
    case "answer.ungrounded":
      return [
        `The answer holds numbers no tool result or prompt gave: ${((e.ungrounded ?? []) as Array<{ text: string }>).map((n) => n.text).join(", ")} (${e.action})`,
      ];
    case "run.finished":
      return [
        [
          `Run ended: ${e.status}`,
          e.cycles === null ? "" : ` after ${e.cycles} cycle(s)`,
          e.durationMs === null ? "" : `, ${seconds(e.durationMs)}`,
          e.reason && !e.answer ? `. ${e.reason}` : "",
        ].join(""),
      ];
    default:
      return [event.type];
  }
}

/** One timeline row of an event, keyed by its sequence. */
export function timelineRow(event: RunEvent): HTMLElement {
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

/** A tool call as the run view shows it, from an event pair or from an audit step. */
export interface ToolCallView {
  id: string;
  cycle: number;
  name: string;
  arguments: unknown;
  status: string;
  latencyMs: number;
  data: unknown;
  error: ToolErrorShape | null;
  omitted?: boolean;
  /** The tenant's policies' decision on the call, when they decided it. */
  policy?: PolicyExplanation;
  /** The cost of the model call that asked for it (its cycle's); null without a price; absent unknown. */
  cost?: { amount: string; currency: string } | null;
}

/**
 * The facts of a call in its card's header, in order (a new fact of a call is one more entry here).
 */
const CALL_FACTS: Array<{ label: string; value: (call: ToolCallView) => Child }> = [
  { label: "Outcome", value: (call) => toolBadge(call.status) },
  { label: "Cycle", value: (call) => String(call.cycle) },
  { label: "Time", value: (call) => `${call.latencyMs} ms` },
  { label: "Policy", value: (call) => (call.policy ? decisionLine(call.policy) : "none decided it") },
  { label: "Model call's cost", value: (call) => (call.cost === undefined ? "—" : money(call.cost)) },
];

/**
 * A tool call's card: its facts, then the model's arguments beside the backend's result. `number` is the
 * card's place in the run (from 1): with the tool's name it tells each card's regions apart, which a
 * screen reader lists by name.
 */
export function toolCallCard(call: ToolCallView, number: number): HTMLElement {
  const title = `${call.name}`;
  const which = `of call ${number} (${call.name})`;
  return h(
    "article",
    {
      class: "call",
      "data-tool-call-id": call.id,
      "data-tool": call.name,
      "aria-label": `${title} (cycle ${call.cycle})`,
    },
    h(
      "header",
      {},
      h("h3", {}, title),
      h(
        "dl",
        { class: "inline" },
        ...CALL_FACTS.flatMap((fact) => [h("dt", {}, fact.label), h("dd", {}, fact.value(call))]),
      ),
    ),
    h(
      "div",
      { class: "columns" },
      h(
        "section",
        { "aria-label": `Arguments ${which}` },
        h("h4", {}, "Arguments (from the model)"),
        argumentsView(call.arguments),
      ),
      h(
        "section",
        { "aria-label": `The backend's result ${which}` },
        h("h4", {}, "The backend's result"),
        resultView({
          status: call.status,
          data: call.data,
          error: call.error,
          omitted: call.omitted ?? false,
        }),
      ),
    ),
  );
}

/** The calls of a run's audit steps, in cycle order. */
export function callsOfRecord(run: RunRecord): ToolCallView[] {
  return (run.steps ?? []).flatMap((step) =>
    step.toolCalls.map((call) => ({
      id: call.id,
      cycle: step.cycle,
      name: call.name,
      arguments: call.arguments,
      status: call.result.status,
      latencyMs: call.result.metadata.latencyMs,
      data: call.result.data,
      error: call.result.error,
      ...(call.result.metadata.policy ? { policy: call.result.metadata.policy } : {}),
      ...(step.cost === undefined ? {} : { cost: step.cost }),
    })),
  );
}

/**
 * Pairs `tool.call.started` (the arguments) with `tool.call.finished` (the result) as events arrive.
 * @returns a finished call once both are known, else undefined
 */
export function callPairing(): (event: RunEvent) => ToolCallView | undefined {
  const started = new Map<string, unknown>();
  const costs = new Map<number, { amount: string; currency: string } | null>();
  return (event) => {
    const e = event as Fields;
    if (event.type === "model.call.finished" && e.cost !== undefined && !e.summary)
      costs.set(e.cycle, e.cost);
    if (event.type === "tool.call.started") started.set(e.toolCallId, e.arguments);
    if (event.type !== "tool.call.finished") return undefined;
    return {
      id: e.toolCallId,
      cycle: e.cycle,
      name: e.name,
      arguments: started.get(e.toolCallId) ?? null,
      status: e.status,
      latencyMs: e.latencyMs,
      data: e.data ?? null,
      error: e.error ?? (e.errorCode ? { code: e.errorCode } : null),
      omitted: e.dataOmitted === true,
      ...(e.policy ? { policy: e.policy } : {}),
      ...(costs.has(e.cycle) ? { cost: costs.get(e.cycle) ?? null } : {}),
    };
  };
}

/**
 * Each invoice the run recorded (its recordInvoice results; for the run's facts): a link to the invoice
 * for a caller the API says may read the ledger (`mayRead`: `billing:read`), its id alone for others,
 * whom the invoice's view would refuse.
 */
export function invoiceLinks(calls: ToolCallView[], mayRead: boolean): HTMLElement[] {
  return calls.flatMap((call) => {
    // getInvoice's result names an invoice too, one the run only read: not one it recorded.
    if (call.name !== "recordInvoice") return [];
    const data = call.data as { invoice?: { invoiceId?: unknown } } | null;
    const id = data?.invoice?.invoiceId;
    if (typeof id !== "string") return [];
    return [mayRead ? idLink(`#/invoices/${id}`, id) : h("span", { class: "run-id" }, id)];
  });
}
