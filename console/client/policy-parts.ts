/**
 * How the console shows a policy decision (docs/policies.md): its badge (a mark and words, never colour
 * alone), the policies that determined it, which set and version decided, and what a set in shadow mode
 * decided beside it. Used by a run's tool calls, the approvals inbox and the policies view.
 */
import type { PolicyExplanation } from "./api.js";
import { type Child, h } from "./dom.js";

/** How each decision reads, its tone and mark. */
const DECISIONS: Record<string, { label: string; tone: string; mark: string }> = {
  permit: { label: "Permitted", tone: "ok", mark: "✓" },
  forbid: { label: "Refused by policy", tone: "bad", mark: "✕" },
  approval: { label: "Needs approval", tone: "wait", mark: "◷" },
};

/** A badge of a policy decision (`permit`, `forbid`, `approval`); `data-decision` keeps the API's value. */
export function policyBadge(decision: string): HTMLElement {
  const { label, tone, mark } = DECISIONS[decision] ?? { label: decision, tone: "stop", mark: "■" };
  return h(
    "span",
    { class: `badge ${tone}`, "data-decision": decision },
    h("span", { "aria-hidden": "true" }, mark),
    label,
  );
}

/** The policies that determined a decision, as code; for a refusal with none, why ("nothing permits it"). */
export function policyIdsText(decision: string, ids: readonly string[]): Child {
  if (ids.length > 0) {
    return h(
      "span",
      { class: "policy-ids" },
      ...ids.flatMap((id, i) => [i > 0 ? ", " : "", h("code", {}, id)]),
    );
  }
  return h("span", { class: "muted" }, decision === "forbid" ? "no policy permits it" : "no policy id");
}

/** Which set decided: the tenant's version, or the default set. */
export const setName = (source: string | undefined, version: number | null | undefined) =>
  source === "default" || version === null || version === undefined
    ? "the default set"
    : `version ${version}`;

/**
 * A decision in one line: its badge, the determining policies, the set that decided; then, when a set in
 * shadow mode decided otherwise, what it would have decided.
 */
export function decisionLine(audit: PolicyExplanation): HTMLElement {
  const shadow = audit.shadow;
  const ids = audit.policyIds ?? [];
  return h(
    "span",
    { class: "decision", "data-policy-ids": ids.join(" ") },
    policyBadge(audit.decision),
    " ",
    policyIdsText(audit.decision, ids),
    h(
      "span",
      { class: "muted" },
      ` (${setName(audit.source, audit.version)}${audit.approved ? ", after approval" : ""})`,
    ),
    shadow && shadow.decision !== audit.decision
      ? h(
          "span",
          { class: "sub shadow-note" },
          `Shadow version ${shadow.version ?? "?"} would have: ${DECISIONS[shadow.decision]?.label ?? shadow.decision}`,
          shadow.policyIds?.length ? ` (${shadow.policyIds.join(", ")})` : "",
        )
      : null,
  );
}
