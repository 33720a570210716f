/**
 * What of a request a policy set can read, from its policies' JSON form (Cedar's EST, as
 * `policyToJson` returns it), so a decision passes the engine only that: every value crossing into the
 * engine is converted field by field, and most of a decision's time is that conversion, not evaluation.
 * Leaving out what no policy reads cannot change a decision: a policy reads a context value only through
 * a `.` or `has` chain from `context` (kept whole from where the chain ends), any other use of `context`
 * keeps all of it, and the principal's entity is passed whenever a condition names `principal` at all
 * (its scope alone, `principal in …`, needs no entity: it has no parents).
 */

/** A tree of context attribute paths: `true` keeps the value at that path whole. */
export type PathTree = { [attribute: string]: PathTree | true };

/** What a set reads: the context paths (`"all"`: the whole context) and whether any condition reads the principal. */
export interface SetReferences {
  context: PathTree | "all";
  principal: boolean;
}

/** The `.`/`has` chain an expression is, as [variable, ...attributes], or undefined when it is not one. */
function chainOf(expr: unknown): string[] | undefined {
  if (typeof expr !== "object" || expr === null) return undefined;
  const node = expr as Record<string, { left?: unknown; attr?: string } | string>;
  if (typeof node.Var === "string") return [node.Var];
  const access = node["."] ?? node.has;
  if (typeof access !== "object" || typeof access.attr !== "string") return undefined;
  const left = chainOf(access.left);
  return left ? [...left, access.attr] : undefined;
}

/** Adds `path` (attributes below `context`) to `tree`: a shorter kept path covers longer ones. */
function addPath(tree: PathTree, path: string[]): void {
  let at = tree;
  for (const [index, attribute] of path.entries()) {
    const child = at[attribute];
    if (child === true) return;
    if (index === path.length - 1 || child === undefined) {
      if (index === path.length - 1) {
        at[attribute] = true;
        return;
      }
      at[attribute] = {};
    }
    at = at[attribute] as PathTree;
  }
}

/** Walks one condition body, recording what it reads into `refs`. */
function walk(expr: unknown, refs: { context: PathTree | "all"; principal: boolean }): void {
  if (Array.isArray(expr)) {
    for (const item of expr) walk(item, refs);
    return;
  }
  if (typeof expr !== "object" || expr === null) return;
  const chain = chainOf(expr);
  if (chain) {
    const [variable, ...path] = chain;
    if (variable === "principal") refs.principal = true;
    if (variable === "context") {
      if (path.length === 0) refs.context = "all";
      else if (refs.context !== "all") addPath(refs.context, path);
    }
    return;
  }
  for (const [key, value] of Object.entries(expr)) {
    // A literal's JSON is data, not expressions.
    if (key !== "Value") walk(value, refs);
  }
}

/** What the conditions of `policies` (their JSON form) read. */
export function referencesOf(policies: Array<{ conditions?: Array<{ body: unknown }> }>): SetReferences {
  const refs: SetReferences = { context: {}, principal: false };
  for (const policy of policies) for (const condition of policy.conditions ?? []) walk(condition.body, refs);
  return refs;
}

/** `value` cut down to `tree`'s paths (a value that is not a record is kept as it is). */
function pruned(value: unknown, tree: PathTree): unknown {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return value;
  // Cedar's escapes (an entity reference, an extension value) are one value, not records.
  if ("__extn" in value || "__entity" in value || "__expr" in value) return value;
  const kept: Record<string, unknown> = {};
  for (const [attribute, child] of Object.entries(tree)) {
    const inner = (value as Record<string, unknown>)[attribute];
    if (inner === undefined) continue;
    kept[attribute] = child === true ? inner : pruned(inner, child);
  }
  return kept;
}

/** The context a set can read of `context`. */
export function prunedContext(
  context: Record<string, unknown>,
  references: SetReferences,
): Record<string, unknown> {
  return references.context === "all"
    ? context
    : (pruned(context, references.context) as Record<string, unknown>);
}
