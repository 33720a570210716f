/**
 * Cedar policy sets as boundloop keeps them: parsed once per container into the engine's pre-parsed
 * cache (`preparsePolicySet`), each policy named by its `@id("…")` annotation (the engine's positional id,
 * `policy<N>`, when it has none), validated in the engine's strict mode against a schema, and evaluated
 * (`statefulIsAuthorized`) or partially evaluated (`isAuthorizedPartial`, for the tools a caller is
 * offered). The engine is an adapter: nothing here knows tools, tenants or totals.
 */
import { sha256Hex } from "../hash.js";
import type { PolicyIssue } from "../store/policy-records.js";
import { prunedContext, referencesOf, type SetReferences } from "./references.js";
import type { CedarWasm } from "./wasm.js";

/** One policy of a set: its id, effect, annotations, text, the 1-based line it starts on and its offset. */
export interface CedarPolicy {
  id: string;
  effect: "permit" | "forbid";
  annotations: Record<string, string>;
  text: string;
  line: number;
  /** Where its text starts in the set's text (UTF-16 code units): two equal texts have two offsets. */
  offset: number;
}

/**
 * A parsed policy set: `key` (SHA-256 of its text, its name in the engine's cache), its policies in text
 * order, `positions` (each policy's id → its index in `policies`), and what of a request its conditions
 * read (shared/cedar/references.ts).
 */
export interface ParsedPolicySet {
  key: string;
  text: string;
  policies: CedarPolicy[];
  positions: ReadonlyMap<string, number>;
  references: SetReferences;
}

/**
 * The outcome of parsing (or validating) a set's text. A refusal's issues are in text order (line, then
 * column, then policy id, then message), so identical texts give identical answers: the engine reports
 * validation errors in no stable order (it differs between two calls on one text).
 */
export type ParseOutcome = { ok: true; set: ParsedPolicySet } | { ok: false; issues: PolicyIssue[] };

/** Orders issues by where they are in the text; the id and message only break ties. */
function byPosition(a: PolicyIssue, b: PolicyIssue): number {
  return (
    a.line - b.line ||
    a.column - b.column ||
    compareText(a.policyId ?? "", b.policyId ?? "") ||
    compareText(a.message, b.message)
  );
}

/** Code-unit order, the same in every locale (`localeCompare` is not). */
function compareText(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** The refusal of a set: its issues in text order ({@link ParseOutcome}). */
function refused(issues: PolicyIssue[]): ParseOutcome {
  return { ok: false, issues: [...issues].sort(byPosition) };
}

/** A Cedar entity reference in the engine's JSON form. */
export interface EntityRef {
  type: string;
  id: string;
}

/** One authorization request: entities are passed with their attributes, context as plain JSON values. */
export interface CedarRequest {
  principal: EntityRef;
  action: EntityRef;
  resource: EntityRef;
  context: Record<string, unknown>;
  entities: Array<{ uid: EntityRef; attrs: Record<string, unknown>; parents: EntityRef[] }>;
}

/**
 * The engine's answer: allow or deny, the determining policies' ids (in the set's text order: the engine
 * reports them as a set, in no stable order), and the policies that errored.
 */
export interface CedarAnswer {
  decision: "allow" | "deny";
  reasons: string[];
  errors: string[];
}

/** 1-based line and column of `offset` in `text`. */
function position(text: string, offset: number): { line: number; column: number } {
  const before = text.slice(0, offset);
  const line = before.split("\n").length;
  return { line, column: offset - before.lastIndexOf("\n") };
}

/**
 * Where each policy of `text` starts (its first annotation, else its effect), in text order: the first
 * character after the previous policy's `;` that is neither white space nor in a `//` comment. A `;` in a
 * string or a comment ends nothing.
 */
function policyStarts(text: string): number[] {
  const starts: number[] = [];
  let open = false;
  for (let i = 0; i < text.length; i++) {
    const char = text[i] as string;
    if (char === "/" && text[i + 1] === "/") {
      while (i < text.length && text[i] !== "\n") i++;
      continue;
    }
    if (/\s/.test(char)) continue;
    if (!open) {
      starts.push(i);
      open = true;
    }
    if (char === '"') {
      i++;
      while (i < text.length && text[i] !== '"') i += text[i] === "\\" ? 2 : 1;
    } else if (char === ";") {
      open = false;
    }
  }
  return starts;
}

/**
 * Which policy a parse error at `offset` is in: the `@id("…")` of the policy that offset is in, else its
 * positional id (`policy<N>`, N the policies starting before it; see {@link policyStarts}).
 */
function idAt(text: string, offset: number): string {
  const starts = policyStarts(text);
  let index = 0;
  while (index + 1 < starts.length && (starts[index + 1] as number) <= offset) index++;
  const named = /^(?:@\w+(?:\(\s*"(?:[^"\\]|\\.)*"\s*\))?\s*)*?@id\(\s*"((?:[^"\\]|\\.)*)"\s*\)/.exec(
    text.slice(starts[index] ?? 0, offset),
  );
  return named?.[1] ?? `policy${index}`;
}

/** The engine's errors as issues; `base` is the policy (id, start offset) the offsets are relative to. */
function issuesOf(
  errors: Array<{ message: string; help: string | null; sourceLocations?: Array<{ start: number }> }>,
  text: string,
  base?: { id: string; offset: number },
): PolicyIssue[] {
  return errors.map((error) => {
    const offset = (base?.offset ?? 0) + (error.sourceLocations?.[0]?.start ?? 0);
    const at = position(text, offset);
    const message = error.help ? `${error.message} (${error.help})` : error.message;
    return { policyId: base?.id ?? idAt(text, offset), ...at, message };
  });
}

/**
 * Parses a set's text into its policies, in text order, each with its id (`@id`, else `policy<N>` by
 * position) and annotations. Two policies with one id are an issue.
 */
export function parsePolicySet(engine: CedarWasm, text: string): ParseOutcome {
  const parts = engine.policySetTextToParts(text);
  if (parts.type === "failure") return refused(issuesOf(parts.errors, text));
  if (parts.policy_templates.length > 0) {
    return refused([{ policyId: null, line: 1, column: 1, message: "templates are not supported" }]);
  }
  // The engine returns the policies sorted by their positional ids (policy0, policy1, policy10, policy2…),
  // which follow the text: that order inverted is the text order, and the k-th policy is the one starting
  // at the k-th policy start of the text (a copy of its text inside another policy or a comment is not it).
  const names = parts.policies.map((_, index) => `policy${index}`).sort(compareText);
  const inTextOrder: string[] = [];
  for (const [k, name] of names.entries()) {
    inTextOrder[Number(name.slice("policy".length))] = parts.policies[k] as string;
  }
  const starts = policyStarts(text);
  const located = inTextOrder.map((policy, index) => {
    const start = starts[index];
    return {
      policy,
      at: start !== undefined && text.startsWith(policy, start) ? start : text.indexOf(policy),
    };
  });
  const policies: CedarPolicy[] = [];
  const bodies: Array<{ conditions?: Array<{ body: unknown }> }> = [];
  const issues: PolicyIssue[] = [];
  for (const [index, { policy, at }] of located.entries()) {
    const json = engine.policyToJson(policy);
    if (json.type === "failure") return refused(issuesOf(json.errors, text));
    const annotations = { ...(json.json.annotations ?? {}) } as Record<string, string>;
    const id = annotations.id ?? `policy${index}`;
    const offset = Math.max(0, at);
    const line = position(text, offset).line;
    if (policies.some((p) => p.id === id)) {
      issues.push({ policyId: id, line, column: 1, message: `another policy already has the id "${id}"` });
    }
    policies.push({ id, effect: json.json.effect, annotations, text: policy, line, offset });
    bodies.push(json.json as { conditions?: Array<{ body: unknown }> });
  }
  if (issues.length > 0) return refused(issues);
  const positions = new Map(policies.map((policy, index) => [policy.id, index]));
  const references = referencesOf(bodies);
  return { ok: true, set: { key: sha256Hex(text), text, policies, positions, references } };
}

/** The set in the engine's JSON form: policies keyed by their ids (so the engine reports our ids). */
function staticPolicies(set: ParsedPolicySet): Record<string, string> {
  return Object.fromEntries(set.policies.map((policy) => [policy.id, policy.text]));
}

/**
 * Parses `text` and validates it in the engine's strict mode against `schema` (Cedar's JSON schema
 * format). Issues name the policy and the line of its text.
 */
export function validatePolicySet(engine: CedarWasm, text: string, schema: object): ParseOutcome {
  const parsed = parsePolicySet(engine, text);
  if (!parsed.ok) return parsed;
  const answer = engine.validate({
    schema: schema as never,
    policies: { staticPolicies: staticPolicies(parsed.set) },
    validationSettings: { mode: "strict" },
  });
  if (answer.type === "failure") return refused(issuesOf(answer.errors, text));
  if (answer.validationErrors.length === 0) return parsed;
  const offsets = new Map(parsed.set.policies.map((p) => [p.id, p.offset]));
  return refused(
    answer.validationErrors.flatMap((error) =>
      issuesOf([error.error], text, {
        id: error.policyId,
        offset: offsets.get(error.policyId) ?? 0,
      }),
    ),
  );
}

/** Sets already in this container's engine cache (by key): each is parsed into it once. */
const preparsed = new Set<string>();

/**
 * Puts `set` into the engine's pre-parsed cache under its key, once per container.
 * @throws Error when the engine refuses it (a set that was validated before never is)
 */
export function preparse(engine: CedarWasm, set: ParsedPolicySet): void {
  if (preparsed.has(set.key)) return;
  const answer = engine.preparsePolicySet(set.key, { staticPolicies: staticPolicies(set) });
  if (answer.type === "failure") {
    throw new Error(`Cedar refused a policy set: ${answer.errors.map((e) => e.message).join("; ")}`);
  }
  preparsed.add(set.key);
  warm(engine, set);
}

/**
 * One throwaway decision against a freshly pre-parsed set: the engine's request decoding and evaluation
 * run (and are compiled) here, while the run's first model call is in flight, not in the first tool
 * call's decision. Its answer and any error are ignored (a real decision is made for every call).
 */
function warm(engine: CedarWasm, set: ParsedPolicySet): void {
  const principal = { type: "User", id: "warm-up" };
  try {
    engine.statefulIsAuthorized({
      principal,
      action: { type: "Action", id: "warm-up" },
      resource: { type: "Tenant", id: "warm-up" },
      context: { input: {}, facts: {}, totals: {} },
      entities: [{ uid: principal, attrs: { tenant: "warm-up", permissions: [] }, parents: [] }],
      preparsedPolicySetId: set.key,
    } as never);
  } catch {
    // A throwaway: the real decision reports the engine's failures (fail closed).
  }
}

/**
 * Evaluates one request against a pre-parsed set ({@link preparse} first). The engine gets only the
 * context the set's conditions read, and the entities only when a condition reads the principal.
 * @throws Error when the engine cannot evaluate it (a malformed request); the caller fails closed
 */
export function authorize(engine: CedarWasm, set: ParsedPolicySet, request: CedarRequest): CedarAnswer {
  const { references } = set;
  const answer = engine.statefulIsAuthorized({
    principal: request.principal,
    action: request.action,
    resource: request.resource,
    context: prunedContext(request.context, references),
    entities: references.principal ? request.entities : [],
    preparsedPolicySetId: set.key,
  } as never);
  if (answer.type === "failure") {
    throw new Error(
      `Cedar could not evaluate the request: ${answer.errors.map((e) => e.message).join("; ")}`,
    );
  }
  const { decision, diagnostics } = answer.response;
  return {
    decision,
    reasons: inTextOrder(set, diagnostics.reason),
    errors: diagnostics.errors.map((e) => e.policyId),
  };
}

/** `ids` sorted by their policies' places in the set's text. */
function inTextOrder(set: ParsedPolicySet, ids: string[]): string[] {
  if (ids.length < 2) return ids;
  const at = (id: string) => set.positions.get(id) ?? Number.MAX_SAFE_INTEGER;
  return [...ids].sort((a, b) => at(a) - at(b));
}

/** A Cedar value that partial evaluation leaves unknown, named `name`. */
export function unknownValue(name: string): unknown {
  return { __extn: { fn: "unknown", arg: name } };
}

/**
 * What partial evaluation says of a request whose context is unknown: `mayPermit` false when no context
 * could make the set permit it (a forbid holds whatever the context, or no permit can hold); `known`, the
 * answer {@link authorize} gives for every context, when the set's answer does not depend on it: the
 * decision is concrete, no policy is left with a condition on the unknowns (each is satisfied or not)
 * and none errored. The determining policies are then the satisfied ones of the decision's effect
 * (allow: the satisfied permits; deny: the satisfied forbids, none when no permit holds), as the engine's
 * diagnostics name them.
 */
export interface PartialAnswer {
  mayPermit: boolean;
  known: CedarAnswer | null;
}

/**
 * Partial evaluation of `request` (its context values may be {@link unknownValue}s) against `set`.
 * @throws Error when the engine cannot evaluate it; the caller then offers the tool (never hides one) and
 *   has the engine decide each call
 */
export function partiallyAuthorize(
  engine: CedarWasm,
  set: ParsedPolicySet,
  request: CedarRequest,
): PartialAnswer {
  const answer = engine.isAuthorizedPartial({
    ...request,
    policies: { staticPolicies: staticPolicies(set) },
  } as never);
  if (answer.type === "failure") {
    throw new Error(
      `Cedar could not evaluate the request: ${answer.errors.map((e) => e.message).join("; ")}`,
    );
  }
  const { decision, satisfied, errored, nontrivialResiduals } = answer.response;
  const mayPermit = decision !== "deny";
  if (decision === null || errored.length > 0 || nontrivialResiduals.length > 0) {
    return { mayPermit, known: null };
  }
  const effect = decision === "allow" ? "permit" : "forbid";
  const satisfiedPolicies = satisfied.map((id) => set.policies[set.positions.get(id) ?? -1]);
  // Every id is one of the set's (the engine was given them); anything else is left to the engine.
  if (satisfiedPolicies.some((policy) => policy === undefined)) return { mayPermit, known: null };
  const determining = satisfied.filter((_, n) => satisfiedPolicies[n]?.effect === effect);
  return { mayPermit, known: { decision, reasons: inTextOrder(set, determining), errors: [] } };
}
