/**
 * Policy sets, the application's side (docs/policies.md): the deployment's default set and each tenant's
 * own, read for decisions through a per-container cache (a tenant's change reaches every container within
 * {@link POLICY_CACHE_MS} + a read), managed through GET/PUT /v1/policies (versions kept with who and when,
 * ETag preconditions), and checked before anything is stored: a set that does not parse or validate
 * against the schema generated from the tool registry never reaches the table.
 */
import type { ToolRegistry } from "../agent/dispatcher.js";
import { type ParsedPolicySet, parsePolicySet, preparse } from "../cedar/policy-set.js";
import { type CedarWasm, cedar, cedarIfLoaded } from "../cedar/wasm.js";
import { MAX_POLICIES_CHARS } from "../config/policies.js";
import type { PolicyIssue, PolicyMode, PolicySetBody, PolicySetVersion } from "../store/policy-records.js";
import type { PolicySetHead, PolicySetStore } from "../store/policy-sets.js";
import { approvalIssues, validatePolicies } from "./annotations.js";
import { policySchemaOf } from "./schema.js";

/** How long a container trusts what it read of a tenant's sets, in ms (changes reach it within this + a read). */
export const POLICY_CACHE_MS = 30_000;

/** The longest policy set accepted, in characters (a PUT body, and POLICIES). */
export const MAX_POLICY_CHARS = MAX_POLICIES_CHARS;

/** One set in force for decisions: parsed, where it comes from, and its version (null: the default). */
export interface ActiveSet {
  set: ParsedPolicySet;
  source: "tenant" | "default";
  version: number | null;
}

/**
 * What decides a tenant's calls: `enforced` (null: no policies at all, every call that passes its
 * permission runs) and, while the tenant tries a set in shadow mode, `shadow`.
 */
export interface TenantSets {
  enforced: ActiveSet | null;
  shadow?: ActiveSet & { version: number };
}

/** A tenant's set as GET and PUT /v1/policies answer it: the body ({@link PolicySetBody}) and its ETag. */
export type PolicySetView = PolicySetBody & { etag: string };

/** The ETag of a tenant's default view (it has no set of its own). */
export const DEFAULT_ETAG = '"default"';

/** The ETag of a tenant's version. */
export function versionEtag(version: number): string {
  return `"v${version}"`;
}

/** The preconditions a PUT came with (`If-Match`, `If-None-Match`), as sent. */
export interface PutPreconditions {
  ifMatch?: string | undefined;
  ifNoneMatch?: string | undefined;
}

/**
 * What a PUT did: `stored` (the new view), `precondition_required` (neither header: 428),
 * `precondition_failed` (the set moved since the ETag the client had, or `If-None-Match: *` while the
 * tenant has a set: 412; `etag` is the current one), `invalid` (the set does not parse or validate: 400,
 * each issue naming the policy, line and error). Only `stored` wrote anything.
 */
export type PutOutcome =
  | { kind: "stored"; view: PolicySetView }
  | { kind: "precondition_required" }
  | { kind: "precondition_failed"; etag: string }
  | { kind: "invalid"; issues: PolicyIssue[] };

/** What the service is built from: the store, the registry (its schema), the default set's text, a clock. */
export interface PolicySetsDeps {
  store: PolicySetStore;
  tools: ToolRegistry;
  defaultText: string | null;
  now?: () => number;
}

/**
 * A tenant's cached head: what the store held at `readAt` (undefined: no set of its own), and `previous`,
 * the sets this container last read before (kept while a re-read is in flight, for offering tools only).
 */
interface Cached {
  readAt: number;
  sets: Promise<TenantSets>;
  previous?: TenantSets | undefined;
}

/** See the module's doc. */
export class PolicySets {
  private readonly cache = new Map<string, Cached>();
  private readonly now: () => number;
  /** The generated Cedar schema (JSON), every set is validated against. */
  readonly schema: object;

  constructor(private readonly deps: PolicySetsDeps) {
    this.now = deps.now ?? Date.now;
    this.schema = policySchemaOf(deps.tools);
  }

  /** Whether a decision could need the engine at all: a default set exists (tenants' sets aside). */
  get hasDefault(): boolean {
    return this.deps.defaultText !== null;
  }

  /**
   * The sets deciding `tenantId`'s calls, from the cache when it is fresh. Loads the engine when a set
   * needs parsing.
   * @throws the store's or the engine's errors (the caller fails closed); the default set's issues as an
   *   Error naming the policy and line (POLICIES was not validated: the caller fails closed)
   */
  forTenant(tenantId: string, signal?: AbortSignal): Promise<TenantSets> {
    const cached = this.cache.get(tenantId);
    if (cached && this.now() - cached.readAt < POLICY_CACHE_MS) return cached.sets;
    const sets = this.load(tenantId, signal);
    const previous = cached ? (settledValues.get(cached.sets) ?? cached.previous) : undefined;
    this.cache.set(tenantId, { readAt: this.now(), sets, previous });
    sets.then(
      (value) => settledValues.set(sets, value),
      () => this.cache.delete(tenantId),
    );
    return sets;
  }

  /**
   * The sets of `tenantId` when they are cached, else undefined (loading them); `engine` when it is
   * loaded (its load is started only when a set needs it: a tenant without sets never loads the module).
   * While a warm container re-reads the sets (past {@link POLICY_CACHE_MS}) it answers what it read last,
   * so the tools a run is offered do not widen every 30 s; decisions always wait for the read.
   */
  readyFor(tenantId: string): { sets: TenantSets; engine: CedarWasm | undefined } | undefined {
    const loading = this.forTenant(tenantId);
    const settled = settledValues.get(loading) ?? this.cache.get(tenantId)?.previous;
    if (!settled) return undefined;
    return { sets: settled, engine: settled.enforced || settled.shadow ? cedarIfLoaded() : undefined };
  }

  /**
   * Reads the tenant's head and parses what it and the default hold (each text once per container). With
   * a default set the engine is needed whatever the head holds, so its load runs beside the head's read.
   */
  private async load(tenantId: string, signal?: AbortSignal): Promise<TenantSets> {
    const early = this.deps.defaultText === null ? undefined : cedar();
    // Awaited below; a failed load is the read's caller's error then, never an unhandled rejection.
    early?.catch(() => undefined);
    const head = await this.deps.store.head(tenantId, signal);
    const enforcedVersion = head?.enforced ?? null;
    const shadowVersion = head && head.latest.mode === "shadow" ? head.latest : null;
    if (!enforcedVersion && !shadowVersion && this.deps.defaultText === null) return { enforced: null };
    const engine = await (early ?? cedar());
    const enforced = enforcedVersion
      ? {
          set: parsed(engine, enforcedVersion.policies),
          source: "tenant" as const,
          version: enforcedVersion.version,
        }
      : this.deps.defaultText === null
        ? null
        : { set: parsed(engine, this.deps.defaultText), source: "default" as const, version: null };
    if (!shadowVersion) return { enforced };
    const shadow = {
      set: parsed(engine, shadowVersion.policies),
      source: "tenant" as const,
      version: shadowVersion.version,
    };
    return { enforced, shadow };
  }

  /** The tenant's view for GET /v1/policies (its latest version, or the default). */
  async view(tenantId: string): Promise<PolicySetView> {
    return viewOf(await this.deps.store.head(tenantId), this.deps.defaultText);
  }

  /**
   * Stores a new version of the tenant's set, if its preconditions hold and it validates (see
   * {@link PutOutcome}). Enforcing makes it the enforced set; shadow keeps the enforced one as it was.
   * The container's cache of the tenant is dropped, so its next decision reads the new head.
   */
  async put(
    tenantId: string,
    userId: string,
    body: { policies: string; mode: PolicyMode },
    preconditions: PutPreconditions,
  ): Promise<PutOutcome> {
    if (preconditions.ifMatch === undefined && preconditions.ifNoneMatch === undefined) {
      return { kind: "precondition_required" };
    }
    const head = await this.deps.store.head(tenantId);
    const current = viewOf(head, this.deps.defaultText).etag;
    if (!preconditionHolds(preconditions, head, current))
      return { kind: "precondition_failed", etag: current };
    const checked = validatePolicies(await cedar(), body.policies, this.schema);
    if (!checked.ok) return { kind: "invalid", issues: checked.issues };
    const version: PolicySetVersion = {
      policies: body.policies,
      mode: body.mode,
      version: (head?.latest.version ?? 0) + 1,
      updatedBy: userId,
      updatedAt: new Date(this.now()).toISOString(),
    };
    const enforced = body.mode === "enforce" ? version : (head?.enforced ?? null);
    const stored = await this.deps.store.putVersion(
      tenantId,
      version,
      enforced,
      head?.latest.version ?? null,
    );
    if (stored.kind === "conflict") {
      return {
        kind: "precondition_failed",
        etag: viewOf(await this.deps.store.head(tenantId), this.deps.defaultText).etag,
      };
    }
    this.cache.delete(tenantId);
    return { kind: "stored", view: viewOf(stored.head, this.deps.defaultText) };
  }

  /**
   * Checks a set's text as a PUT would (parse, then strict validation against the generated schema),
   * without storing it: the issues, empty when it is valid. Used for POLICIES at synth and by `npm start
   * -- --policies`.
   */
  async check(text: string): Promise<PolicyIssue[]> {
    const checked = validatePolicies(await cedar(), text, this.schema);
    return checked.ok ? [] : checked.issues;
  }
}

/** The generated schema in Cedar's schema syntax (loads the engine). */
export async function schemaText(schema: object): Promise<string> {
  const answer = (await cedar()).schemaToText(schema as never);
  if (answer.type === "failure") throw new Error(answer.errors.map((error) => error.message).join("; "));
  return answer.text;
}

/** Values of settled set promises, so a caller that must not wait can use them synchronously. */
const settledValues = new WeakMap<Promise<TenantSets>, TenantSets>();

/**
 * Parses a stored (validated) text, preparsed into the engine once.
 * @throws Error naming the first policy, line and issue when the text does not parse or one of its
 *   `@approval` annotations asks nobody ({@link approvalIssues}): the caller fails closed
 */
function parsed(engine: CedarWasm, text: string): ParsedPolicySet {
  const outcome = parsePolicySet(engine, text);
  const issues = outcome.ok ? approvalIssues(outcome.set, text) : outcome.issues;
  if (!outcome.ok || issues.length > 0) {
    const issue = issues[0];
    throw new Error(
      `A policy set is refused: ${issue?.policyId ?? "policy"} at line ${issue?.line}: ${issue?.message}`,
    );
  }
  preparse(engine, outcome.set);
  return outcome.set;
}

/** Whether a PUT's preconditions hold against the head it read (`current`: its ETag). */
function preconditionHolds(
  preconditions: PutPreconditions,
  head: PolicySetHead | undefined,
  current: string,
): boolean {
  if (preconditions.ifNoneMatch !== undefined)
    return preconditions.ifNoneMatch.trim() === "*" && head === undefined;
  const tags = (preconditions.ifMatch ?? "").split(",").map((tag) => tag.trim());
  return tags.includes(current) || (tags.includes("*") && head !== undefined);
}

/** The view of a head (none: the default). */
function viewOf(head: PolicySetHead | undefined, defaultText: string | null): PolicySetView {
  if (!head) {
    return {
      policies: defaultText ?? "",
      mode: "enforce",
      version: null,
      updatedBy: null,
      updatedAt: null,
      source: "default",
      etag: DEFAULT_ETAG,
      enforcedVersion: null,
    };
  }
  const { latest } = head;
  return {
    policies: latest.policies,
    mode: latest.mode,
    version: latest.version,
    updatedBy: latest.updatedBy,
    updatedAt: latest.updatedAt,
    source: "tenant",
    etag: versionEtag(latest.version),
    enforcedVersion: head.enforced?.version ?? null,
  };
}
