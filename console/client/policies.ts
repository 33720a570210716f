/**
 * The tenant's policies (`#/policies`, needs `policy:admin`; docs/policies.md): the Cedar set in an
 * editor with line numbers, the generated schema beside it, a check before every save (the API's issues
 * shown at their line), Enforce or Shadow for the save, the switch of a shadow set to enforced, the
 * versions kept with who saved each and when, and what the shadow set would have decided otherwise,
 * from the decisions the backend recorded. The API decides and validates; the page only asks.
 */
// The shapes the API answers with, from their one schema (types only: nothing of shared/ is bundled).
import type {
  PolicySetBody as PolicySet,
  PolicySetVersion as PolicyVersion,
  ShadowDecisionRecord as ShadowDecision,
} from "../../shared/store/policy-records.js";
import { api } from "./api.js";
import { alert, h, idLink, paged, problemText, scrollTable, time, view } from "./dom.js";
import { type PolicyIssue, policyEditor } from "./policy-editor.js";
import { policyBadge, policyIdsText, setName } from "./policy-parts.js";
import { session } from "./session.js";
import { fields } from "./values.js";

/** A mode's badge: enforced or shadow (a mark and words). */
const modeBadge = (mode: string) =>
  h(
    "span",
    { class: `badge ${mode === "enforce" ? "ok" : "wait"}`, "data-mode": mode },
    h("span", { "aria-hidden": "true" }, mode === "enforce" ? "✓" : "◐"),
    mode === "enforce" ? "Enforced" : "Shadow",
  );

/** The set's facts: its version, mode, the version enforced, who saved it and when. */
function factsOf(set: PolicySet): HTMLElement[] {
  const fact = (term: string, ...value: Array<Node | string>) =>
    h("div", { class: "fact" }, h("dt", {}, term), h("dd", {}, ...value));
  return [
    fact("Version", set.version === null ? "none of the tenant's: the default set" : String(set.version)),
    fact("Mode", modeBadge(set.mode)),
    fact("Enforced", setName(set.enforcedVersion === null ? "default" : "tenant", set.enforcedVersion)),
    fact("Saved by", set.updatedBy ?? "—"),
    fact("Saved", time(set.updatedAt)),
  ];
}

/** A kept version as a row, its text under a disclosure and a button that opens it in the editor. */
function versionRow(version: PolicyVersion, open: (text: string) => void): HTMLElement {
  return h(
    "tr",
    { "data-version": version.version },
    h("td", { class: "num" }, String(version.version)),
    h("td", {}, modeBadge(version.mode)),
    h("td", {}, version.updatedBy),
    h("td", {}, time(version.updatedAt)),
    h(
      "td",
      {},
      h(
        "details",
        {},
        h("summary", {}, `${version.policies.split("\n").length} lines`),
        h("pre", {}, version.policies),
      ),
      h(
        "button",
        { type: "button", class: "secondary", onclick: () => open(version.policies) },
        "Open in the editor",
      ),
    ),
  );
}

/** A shadow decision as a row: when, what, who, the backend's facts, both decisions. */
function shadowRow(item: ShadowDecision): HTMLElement {
  const decision = (d: { decision: string; policyIds: string[] }, version: string) =>
    h(
      "td",
      {},
      policyBadge(d.decision),
      h("span", { class: "sub" }, policyIdsText(d.decision, d.policyIds), ` · ${version}`),
    );
  return h(
    "tr",
    { "data-tool-call-id": item.toolCallId },
    h("td", {}, time(item.decidedAt)),
    h("td", {}, item.toolName, h("span", { class: "sub" }, item.userId)),
    h("td", {}, idLink(`#/runs/${item.runId}`, item.runId)),
    h("td", {}, fields(item.facts)),
    decision(
      item.enforced,
      setName(item.enforced.version === null ? "default" : "tenant", item.enforced.version),
    ),
    decision(item.shadow, `version ${item.shadow.version}`),
  );
}

/** The preconditions of a save: the ETag of the set edited, or the tenant's first set. */
const preconditionOf = (set: PolicySet, etag: string): Record<string, string> =>
  set.version === null ? { "if-none-match": "*" } : { "if-match": etag };

/** The policies view (see the module comment). */
export async function policiesView(): Promise<void> {
  const leaving = session.leaving.signal;
  const status = h("div", { "aria-live": "polite", class: "status" });
  const facts = h("dl", { class: "facts grid" });
  const switcher = h("div", { class: "run-actions" });
  const editor = policyEditor("policies");
  const schema = h("pre", { class: "schema", tabindex: "0" }, "…");
  const outcome = h("div", { "aria-live": "polite" });
  const versions = h("tbody");
  const moreVersions = h("button", { type: "button", hidden: true, class: "secondary" }, "More versions");
  const shadows = h("tbody");
  const moreShadows = h("button", { type: "button", hidden: true, class: "secondary" }, "More decisions");
  const shadowStatus = h("div", { "aria-live": "polite" });
  const modeChoice = (value: string, label: string, note: string) =>
    h(
      "label",
      { class: "choice" },
      h("input", { type: "radio", name: "mode", value, checked: value === "enforce" }),
      ` ${label}`,
      h("span", { class: "sub" }, note),
    );
  const form = h(
    "form",
    { class: "policy-form", "aria-label": "Edit the policies" },
    h("label", { for: "policies" }, "Cedar policies"),
    editor.element,
    h(
      "fieldset",
      {},
      h("legend", {}, "When saved"),
      modeChoice("enforce", "Enforce", "The set decides every tool call from now on."),
      modeChoice(
        "shadow",
        "Shadow",
        "The enforced set keeps deciding; this one's decisions are recorded beside it.",
      ),
    ),
    h(
      "div",
      { class: "actions" },
      h("button", { type: "submit" }, "Check and save"),
      h("button", { type: "button", class: "secondary", onclick: () => void check() }, "Check only"),
    ),
    outcome,
  );
  // The rest of the view once the API has answered: a refusal (without policy:admin, it names the
  // permission) is shown alone, with no editor or buttons that could only be refused again.
  const rest = [
    facts,
    switcher,
    h(
      "div",
      { class: "columns policy-columns" },
      h("section", { "aria-label": "The tenant's policies" }, form),
      h(
        "section",
        { "aria-label": "The schema" },
        h("h2", {}, "The schema policies are checked against"),
        schema,
      ),
    ),
    h("h2", {}, "Versions"),
    scrollTable(
      "Every version kept, newest first",
      [{ label: "Version", class: "num" }, "Mode", "Saved by", "Saved", "Policies"],
      versions,
    ),
    moreVersions,
    h("h2", {}, "What the shadow set would have decided otherwise"),
    shadowStatus,
    scrollTable(
      "Recorded decisions where the shadow set differs from the enforced one, newest first",
      ["When", "Tool and user", "Run", "The backend's facts", "Enforced decision", "Shadow decision"],
      shadows,
    ),
    moreShadows,
  ];
  view().replaceChildren(h("h1", {}, "Policies"), status);
  let set: PolicySet = {
    policies: "",
    mode: "enforce",
    version: null,
    updatedBy: null,
    updatedAt: null,
    source: "default",
    enforcedVersion: null,
  };
  let etag = "";
  const load = async (): Promise<boolean> => {
    const answer = await api<PolicySet>("/v1/policies");
    if (!answer.ok) {
      status.replaceChildren(alert(problemText(answer.status, answer.body)));
      return false;
    }
    set = answer.body;
    etag = answer.headers.get("etag") ?? "";
    facts.replaceChildren(...factsOf(set));
    showSwitch();
    return true;
  };
  const lists = async () => {
    versions.replaceChildren();
    shadows.replaceChildren();
    await paged<PolicyVersion>("/v1/policies/versions?limit=20", {
      status,
      more: moreVersions,
      show: (items) => versions.append(...items.map((v) => versionRow(v, editor.setText))),
    });
    await paged<ShadowDecision>("/v1/policies/shadow-decisions?limit=20", {
      status: shadowStatus,
      more: moreShadows,
      show: (items, { first }) => {
        shadows.append(...items.map(shadowRow));
        shadowStatus.replaceChildren(
          first && items.length === 0 ? h("p", {}, "No decision differed yet.") : "",
        );
      },
    });
  };
  const put = async (policies: string, mode: string): Promise<void> => {
    const answer = await api<PolicySet & { issues?: PolicyIssue[] }>("/v1/policies", {
      method: "PUT",
      body: { policies, mode },
      headers: preconditionOf(set, etag),
    });
    if (answer.status === 412 && (await load())) {
      // Someone saved while this person edited: say who and which version, keep their text, and read the
      // set again, so the next save (a choice made knowingly) goes on from that version.
      outcome.replaceChildren(
        alert(
          `Not saved: ${set.updatedBy ?? "someone"} saved version ${set.version} while you were editing. Your text is still in the editor; compare it with the versions below, then save again.`,
        ),
      );
      await lists();
      return;
    }
    if (!answer.ok) {
      editor.showIssues(answer.body?.issues ?? []);
      outcome.replaceChildren(alert(`Not saved. ${problemText(answer.status, answer.body)}`));
      return;
    }
    await load();
    outcome.replaceChildren(
      h(
        "p",
        { role: "status" },
        `Saved version ${answer.body.version} (${answer.body.mode === "enforce" ? "enforced" : "shadow"}).`,
      ),
    );
    await lists();
  };
  const check = async (): Promise<boolean> => {
    const answer = await api<{ valid: boolean; issues: PolicyIssue[] }>("/v1/policies/check", {
      method: "POST",
      body: { policies: editor.text(), mode: "enforce" },
    });
    if (!answer.ok) {
      outcome.replaceChildren(alert(problemText(answer.status, answer.body)));
      return false;
    }
    editor.showIssues(answer.body.issues);
    const n = answer.body.issues.length;
    outcome.replaceChildren(
      n === 0
        ? h("p", { role: "status" }, "The set is valid.")
        : alert(`${n} issue(s); nothing was saved. Each is marked at its line.`),
    );
    return n === 0;
  };
  const showSwitch = () => {
    const shadowHead = set.source === "tenant" && set.mode === "shadow";
    switcher.replaceChildren(
      shadowHead
        ? h(
            "button",
            { type: "button", class: "approve", onclick: () => void put(set.policies, "enforce") },
            `Enforce version ${set.version}`,
          )
        : h("p", { class: "muted" }, "Save a set as Shadow to see what it would decide before enforcing it."),
    );
  };
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const mode =
      (form.querySelector("input[name=mode]:checked") as HTMLInputElement | null)?.value ?? "enforce";
    if (await check()) await put(editor.text(), mode);
  });
  if (!(await load()) || leaving.aborted) return;
  view().append(...rest);
  editor.setText(set.policies);
  const schemaAnswer = await api<{ cedar: string }>("/v1/policies/schema");
  schema.replaceChildren(
    schemaAnswer.ok ? schemaAnswer.body.cedar : problemText(schemaAnswer.status, schemaAnswer.body),
  );
  await lists();
}
