/**
 * The Cedar text editor of the policies view: a textarea with line numbers beside it, and the API's
 * issues (`{policyId, line, column, message}` from `POST /v1/policies/check` or a refused `PUT`) shown at
 * their line: the line's number marked (a mark, not colour alone) and a list of the issues, each a
 * button that puts the cursor on its line and column.
 */
import type { PolicyIssue } from "../../shared/store/policy-records.js";
import { h } from "./dom.js";

/** One issue of an invalid set, as the API names it (shared/store/policy-records.ts). */
export type { PolicyIssue };

/** The editor's parts and what it does. */
export interface PolicyEditor {
  element: HTMLElement;
  text: () => string;
  setText: (text: string) => void;
  /** Marks the issues' lines and lists them (an empty list clears them). */
  showIssues: (issues: readonly PolicyIssue[]) => void;
}

/** Where line `line` (from 1), column `column` (from 1) of `text` is, as an offset. */
function offsetOf(text: string, line: number, column: number): number {
  let offset = 0;
  for (let n = 1; n < line; n++) {
    const next = text.indexOf("\n", offset);
    if (next === -1) return text.length;
    offset = next + 1;
  }
  return Math.min(text.length, offset + column - 1);
}

/** The editor (see the module comment); `id` is its textarea's, which its label names. */
export function policyEditor(id: string): PolicyEditor {
  const gutter = h("ol", { class: "gutter", "aria-hidden": "true" });
  const area = h("textarea", {
    id,
    name: id,
    spellcheck: "false",
    autocomplete: "off",
    wrap: "off",
    "aria-describedby": `${id}-issues`,
  }) as HTMLTextAreaElement;
  const list = h("ul", { class: "issues", id: `${id}-issues`, "aria-live": "polite" });
  let marked = new Map<number, PolicyIssue[]>();
  const numbers = () => {
    const lines = area.value.split("\n").length;
    const rows: HTMLElement[] = [];
    for (let n = 1; n <= lines; n++) {
      const issues = marked.get(n);
      rows.push(
        issues
          ? h(
              "li",
              { class: "bad", "data-line": n, title: issues.map((i) => i.message).join("\n") },
              `✕ ${n}`,
            )
          : h("li", { "data-line": n }, String(n)),
      );
    }
    gutter.replaceChildren(...rows);
    gutter.scrollTop = area.scrollTop;
  };
  area.addEventListener("input", numbers);
  area.addEventListener("scroll", () => {
    gutter.scrollTop = area.scrollTop;
  });
  const goTo = (issue: PolicyIssue) => {
    const at = offsetOf(area.value, issue.line, issue.column);
    area.focus();
    area.setSelectionRange(at, at);
  };
  const showIssues = (issues: readonly PolicyIssue[]) => {
    marked = new Map();
    for (const issue of issues) marked.set(issue.line, [...(marked.get(issue.line) ?? []), issue]);
    if (issues.length > 0) area.setAttribute("aria-invalid", "true");
    else area.removeAttribute("aria-invalid");
    list.replaceChildren(
      ...issues.map((issue) =>
        h(
          "li",
          { "data-line": issue.line },
          h(
            "button",
            { type: "button", class: "link", onclick: () => goTo(issue) },
            `Line ${issue.line}, column ${issue.column}`,
          ),
          issue.policyId ? ` (policy ${issue.policyId})` : "",
          `: ${issue.message}`,
        ),
      ),
    );
    numbers();
  };
  return {
    element: h("div", {}, h("div", { class: "editor" }, gutter, area), list),
    text: () => area.value,
    setText: (text) => {
      area.value = text;
      numbers();
    },
    showIssues,
  };
}
