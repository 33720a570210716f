/**
 * boundloop's own annotation on a Cedar policy, checked with the set (docs/policies.md): `@approval` asks
 * a person only as `@approval("required")` on a permit. Cedar accepts any annotation and the engine never
 * reads them, so without this check a typo (`@approval("require")`, `@Approval(…)`, a bare `@approval`)
 * would be a plain permit and the call would run without the approval it was written to ask for; on a
 * forbid it would mean nothing (the forbid refuses the call whatever anyone decides).
 */

import { type ParsedPolicySet, type ParseOutcome, validatePolicySet } from "../cedar/policy-set.js";
import type { CedarWasm } from "../cedar/wasm.js";
import type { PolicyIssue } from "../store/policy-records.js";

/** The annotation that makes a permit ask for approval, and its one value. */
const APPROVAL = "approval";
const REQUIRED = "required";

/**
 * `validatePolicySet` (parse, then strict validation against `schema`), then the `@approval`
 * annotations ({@link approvalIssues}).
 */
export function validatePolicies(engine: CedarWasm, text: string, schema: object): ParseOutcome {
  const checked = validatePolicySet(engine, text, schema);
  if (!checked.ok) return checked;
  const issues = approvalIssues(checked.set, text);
  return issues.length > 0 ? { ok: false, issues } : checked;
}

/**
 * The `@approval` annotations of a parsed `set` (of `text`) that ask nobody: one with another value,
 * without a value, with another case, or on a forbid (`line`/`column`: the annotation's), in text order.
 * Empty when every one is `@approval("required")` on a permit. Checked when a set is stored and again
 * when a stored set is loaded for decisions (shared/policies/sets.ts): a set that reached the table any
 * other way is refused, never read as plain permits.
 */
export function approvalIssues(set: ParsedPolicySet, text: string): PolicyIssue[] {
  const issues: PolicyIssue[] = [];
  for (const policy of set.policies) {
    for (const [key, value] of Object.entries(policy.annotations)) {
      if (key.toLowerCase() !== APPROVAL) continue;
      if (key === APPROVAL && value === REQUIRED && policy.effect === "permit") continue;
      const written = value === "" ? `@${key}` : `@${key}(${JSON.stringify(value)})`;
      const at = policy.offset + Math.max(0, policy.text.indexOf(`@${key}`));
      const before = text.slice(0, at);
      issues.push({
        policyId: policy.id,
        line: before.split("\n").length,
        column: at - before.lastIndexOf("\n"),
        message: `${written} asks nobody: write @approval("required"), on a permit (a forbid refuses the call whatever anyone decides)`,
      });
    }
  }
  return issues;
}
