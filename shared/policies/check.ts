/**
 * Checking a policy set's text synchronously, outside the request path: at synth (the deploy setting
 * `policies`, infra/settings.ts) and by `npm start -- --policies <file>`. It loads the engine with
 * `initSync` (blocking, ~0.1 s), which no Lambda request path may do: only infra/ and local/ import this
 * module, never the bundle (the functions load the engine asynchronously, shared/cedar/wasm.ts).
 */
import { readFileSync } from "node:fs";
import * as cedarWeb from "@cedar-policy/cedar-wasm/web";
import type { ToolDefinition } from "../agent/tool.js";
import { parsePolicySet } from "../cedar/policy-set.js";
import { cedarWasmPath } from "../cedar/wasm.js";
import type { PolicyIssue } from "../store/policy-records.js";
import { accountingTools } from "../tools/registry.js";
import { validatePolicies } from "./annotations.js";
import { policySchemaOf } from "./schema.js";

let initialized = false;

/** The engine, initialized synchronously once. */
function engineSync(): typeof cedarWeb {
  if (!initialized) {
    cedarWeb.initSync({ module: readFileSync(cedarWasmPath()) });
    initialized = true;
  }
  return cedarWeb;
}

/**
 * The accounting tools' declarations, for their schema: building the registry reads no store (a tool
 * touches its stores only when called), so none is given.
 */
export function accountingToolDeclarations(): ReadonlyMap<string, ToolDefinition> {
  return accountingTools({ ledger: undefined as never, quotes: undefined as never, quoteTtlSeconds: 900 });
}

/** The issues of `text` against the schema generated from the accounting tools (empty: valid). */
export function policyIssuesSync(text: string): PolicyIssue[] {
  const checked = validatePolicies(engineSync(), text, policySchemaOf(accountingToolDeclarations()));
  return checked.ok ? [] : checked.issues;
}

/**
 * The ids of the permits in `text` annotated `@approval("required")`, in text order (docs/policies.md):
 * the policies that can pause a call for a person. Empty when there are none or the text does not parse.
 */
export function approvalPolicyIdsSync(text: string): string[] {
  const parsed = parsePolicySet(engineSync(), text);
  if (!parsed.ok) return [];
  return parsed.set.policies
    .filter((policy) => policy.effect === "permit" && policy.annotations.approval === "required")
    .map((policy) => policy.id);
}

/** One line per issue: `line 3, column 12, policy "cap": <message>`. */
export function describeIssues(issues: readonly PolicyIssue[]): string {
  return issues
    .map(
      (issue) =>
        `line ${issue.line}, column ${issue.column}${issue.policyId ? `, policy "${issue.policyId}"` : ""}: ${issue.message}`,
    )
    .join("; ");
}

/** The generated schema in Cedar's human-readable form (docs/policies.md quotes it; a test compares). */
export function policySchemaText(): string {
  const answer = engineSync().schemaToText(policySchemaOf(accountingToolDeclarations()) as never);
  if (answer.type === "failure") throw new Error(answer.errors.map((e) => e.message).join("; "));
  return answer.text;
}
