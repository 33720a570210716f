/**
 * The policy decision service (docs/policies.md): the one place a tool call is decided, for the loop, the
 * durable runner and MCP alike (it implements the engine's {@link ToolCallDecider} port). For a call that
 * passed its permission and validation it reads the tenant's sets, the facts the tool vouches for, reserves
 * the call in the running totals (metered tools), evaluates the enforced set (and the shadow set beside
 * it) with Cedar, and answers run, approval or refused. Forbid beats approval, approval beats a plain
 * permit. Any failure of the engine or a store refuses the call (fail closed: POLICY_CHECK_FAILED, a fixed
 * sentence; the detail goes to the logs).
 */
import type { CallDecision, DecisionRequest, ToolCallDecider } from "../agent/decision.js";
import { policyCheckFailed, withPolicy } from "../agent/decision.js";
import { describeThrown, type PreparedToolCall } from "../agent/dispatcher.js";
import type { PolicyAudit, RunningTotal, ToolResult } from "../agent/result.js";
import type { ApprovalPreview, ToolDefinition, ToolFacts, VouchedFacts } from "../agent/tool.js";
import {
  authorize,
  type CedarRequest,
  type PartialAnswer,
  partiallyAuthorize,
  unknownValue,
} from "../cedar/policy-set.js";
import { type CedarWasm, cedar } from "../cedar/wasm.js";
import type { SecurityContext } from "../identity.js";
import type { ShadowDecisionRecord } from "../store/policy-records.js";
import { type CedarType, contextTypeOf, contextValue } from "./schema.js";
import type { ActiveSet, PolicySets, TenantSets } from "./sets.js";
import { denied, type Verdict, verdictOf } from "./verdicts.js";

/** One call's place in the running totals: the reservation a metered call makes before its decision. */
export interface TotalsReservation {
  tenantId: string;
  userId: string;
  toolName: string;
  currency: string;
  grossMinor: number;
  /** The reservation's key: the tool's business key value (recordInvoice: the quote), else the operation key. */
  key: string;
  atMs: number;
}

/**
 * Running totals for policies (the counters store's policy side, shared/policies/totals.ts):
 * `reserve` counts a call (once per key) and returns the totals including it and every call in flight,
 * `fresh` false when the key was counted before (a replay or retry); `release` takes a fresh reservation
 * back (the call was refused or failed without an effect).
 */
export interface PolicyTotals {
  reserve(reservation: TotalsReservation): Promise<{ fresh: boolean; totals: Record<string, RunningTotal> }>;
  release(reservation: TotalsReservation): Promise<void>;
}

/**
 * What the service needs. `thresholds`: APPROVAL_RULES policy id → threshold (for the preview); `engine`:
 * how decisions get the Cedar engine (default: shared/cedar/wasm.ts `cedar`, loaded once per container).
 */
export interface PolicyDecisionDeps {
  sets: PolicySets;
  totals: PolicyTotals;
  recordShadow: (tenantId: string, record: ShadowDecisionRecord) => Promise<void>;
  logger: {
    error(message: string, extra: Record<string, unknown>): void;
    warn(message: string, extra: Record<string, unknown>): void;
  };
  thresholds?: ReadonlyMap<string, string>;
  now?: () => number;
  engine?: () => Promise<CedarWasm>;
}

/**
 * How many partial evaluations (set, tool, caller) a container keeps, for the tools offered and the
 * decisions known without the engine; the cache is emptied when full.
 */
export const OFFERED_CACHE_SIZE = 10_000;

/** The decision service; see the module's doc. */
export class PolicyDecisions implements ToolCallDecider {
  private readonly now: () => number;
  private readonly contextTypes = new WeakMap<ToolDefinition, CedarType>();
  private readonly partials = new Map<string, PartialAnswer>();
  private readonly engine: () => Promise<CedarWasm>;

  constructor(private readonly deps: PolicyDecisionDeps) {
    this.now = deps.now ?? Date.now;
    this.engine = deps.engine ?? cedar;
  }

  /** See {@link ToolCallDecider.offered}: a tool is hidden only when no context could make a policy permit it. */
  async offered(
    tools: ToolDefinition[],
    security: SecurityContext,
    options: { wait: boolean },
  ): Promise<ToolDefinition[]> {
    try {
      let sets: TenantSets;
      let engine: CedarWasm | undefined;
      if (options.wait) {
        sets = await this.deps.sets.forTenant(security.tenantId);
        engine = sets.enforced || sets.shadow ? await this.engine() : undefined;
      } else {
        const ready = this.deps.sets.readyFor(security.tenantId);
        if (!ready) return tools;
        ({ sets, engine } = ready);
      }
      const { enforced, shadow } = sets;
      if (!engine) return tools;
      const ready = engine;
      // The shadow set's partial evaluations are kept for its decisions (see decide), never for offering.
      if (shadow) for (const tool of tools) this.partial(ready, shadow, tool, security);
      if (!enforced) return tools;
      return tools.filter((tool) => this.partial(ready, enforced, tool, security).mayPermit);
    } catch {
      // Offering is not authorizing: when the sets cannot be read, every tool is offered and each call is
      // decided (and refused, fail closed) by decide().
      return tools;
    }
  }

  /**
   * Partial evaluation of `active` for calls of `tool` by the caller, the context unknown (shaped as a
   * call's: input, facts and, for a metered tool, totals): whether some context could make the set permit
   * it (an engine failure offers the tool) and, when no context matters, the answer of every call. It
   * depends only on the set, the tool and the caller's identity, so it is kept per container (up to
   * {@link OFFERED_CACHE_SIZE} answers).
   */
  private partial(
    engine: CedarWasm,
    active: ActiveSet,
    tool: ToolDefinition,
    security: SecurityContext,
  ): PartialAnswer {
    const key = partialKey(active, tool, security);
    const known = this.partials.get(key);
    if (known !== undefined) return known;
    let answer: PartialAnswer;
    try {
      const request = this.request(tool, security, {
        input: unknownValue("input"),
        facts: unknownValue("facts"),
        ...(tool.facts?.metered ? { totals: unknownValue("totals") } : {}),
      });
      answer = partiallyAuthorize(engine, active.set, request);
    } catch {
      return { mayPermit: true, known: null };
    }
    if (this.partials.size >= OFFERED_CACHE_SIZE) this.partials.clear();
    this.partials.set(key, answer);
    return answer;
  }

  /**
   * The verdicts of the enforced set (none: permit) and the shadow set on a call with `context`: each
   * set's answer is the one its partial evaluation found independent of the context (kept by
   * {@link partial} when the tools were offered), else the engine's on the call's request (built once,
   * only when a set needs it).
   * @throws Error when the engine cannot evaluate the call, or a policy of the enforced set errors
   */
  private verdictsOf(
    engine: CedarWasm,
    sets: TenantSets,
    prepared: PreparedToolCall,
    security: SecurityContext,
    context: Record<string, unknown>,
  ): { enforced: Verdict; shadow?: Verdict } {
    const { enforced, shadow } = sets;
    const knownEnforced = enforced && this.partials.get(partialKey(enforced, prepared.tool, security))?.known;
    const knownShadow = shadow && this.partials.get(partialKey(shadow, prepared.tool, security))?.known;
    const request =
      (enforced && !knownEnforced) || (shadow && !knownShadow)
        ? this.request(prepared.tool, security, context)
        : undefined;
    return {
      enforced: enforced
        ? verdictOf(
            enforced,
            knownEnforced ?? authorize(engine, enforced.set, request as CedarRequest),
            false,
          )
        : { decision: "permit", policyIds: [] },
      ...(shadow
        ? {
            shadow: verdictOf(
              shadow,
              knownShadow ?? authorize(engine, shadow.set, request as CedarRequest),
              true,
            ),
          }
        : {}),
    };
  }

  /** See {@link ToolCallDecider.decide}. Never throws. */
  async decide(request: DecisionRequest): Promise<CallDecision> {
    const { prepared, security } = request;
    let sets: TenantSets;
    try {
      sets = await this.deps.sets.forTenant(security.tenantId, request.signal);
    } catch (error) {
      return this.failClosed(prepared, "policy sets", error);
    }
    if (!sets.enforced && !sets.shadow) return { kind: "run" };
    let vouched: VouchedFacts | null;
    try {
      vouched = prepared.tool.facts
        ? await prepared.tool.facts.read(prepared.args as never, security, { signal: request.signal })
        : { facts: {}, preview: {} };
    } catch (error) {
      return this.failClosed(prepared, "facts", error);
    }
    // No facts: the call cannot have an effect (see ToolFacts.read); the tool itself refuses it.
    if (vouched === null) return { kind: "run" };
    return this.decideWith(request, sets, vouched);
  }

  /** The decision once the sets and facts are known: reserve, evaluate, answer. */
  private async decideWith(
    request: DecisionRequest,
    sets: TenantSets,
    vouched: VouchedFacts,
  ): Promise<CallDecision> {
    const { prepared, security } = request;
    const reservation = this.reservationOf(request, vouched);
    let reserved: { fresh: boolean; totals: Record<string, RunningTotal> } | undefined;
    let verdicts: { enforced: Verdict; shadow?: Verdict };
    try {
      if (reservation) reserved = await this.deps.totals.reserve(reservation);
      const engine = await this.engine();
      verdicts = this.verdictsOf(engine, sets, prepared, security, {
        input: prepared.args,
        facts: vouched.facts,
        ...(reserved ? { totals: reserved.totals } : {}),
      });
    } catch (error) {
      if (reservation && reserved?.fresh) await this.release(reservation);
      return this.failClosed(prepared, "evaluation", error);
    }
    const audit = this.auditOf(request, sets, verdicts, reserved?.totals);
    if (verdicts.shadow && sets.shadow) await this.keepShadow(request, sets, verdicts, vouched);
    const release = reservation && reserved?.fresh ? reservation : undefined;
    return this.answer(request, audit, vouched, release);
  }

  /** Run, approval or refused, from the audit; a refusal or approval releases a fresh reservation. */
  private async answer(
    request: DecisionRequest,
    audit: PolicyAudit,
    vouched: VouchedFacts,
    release: TotalsReservation | undefined,
  ): Promise<CallDecision> {
    const { prepared } = request;
    if (audit.decision === "permit") {
      // Without a fresh reservation there is nothing to settle.
      if (!release) return { kind: "run", audit };
      const facts = prepared.tool.facts;
      return { kind: "run", audit, settle: async (result) => this.settle(result, release, facts) };
    }
    if (release) await this.release(release);
    if (audit.decision === "approval") {
      // Nobody is asked to approve a call that cannot have an effect (ToolFacts.settled).
      if (await this.settled(request)) return { kind: "run" };
      return { kind: "approval", audit, preview: this.previewOf(vouched, audit) };
    }
    return { kind: "refused", result: withPolicy(denied(prepared, audit), audit) };
  }

  /** Whether the call's tool says it is certain to have no effect (false when it cannot say). */
  private async settled(request: DecisionRequest): Promise<boolean> {
    const { prepared, security } = request;
    const settled = prepared.tool.facts?.settled;
    if (!settled) return false;
    const context = { signal: request.signal, operationKey: request.operationKey };
    return settled(prepared.args as never, security, context).catch(() => false);
  }

  /**
   * After a permitted call: an effect keeps its reservation (no write); a failure without one releases it,
   * and so does an effect an earlier call already had ({@link ToolFacts.replayed}): it was counted then,
   * in its own UTC day, so a fresh reservation here was made in another day's item.
   */
  private async settle(
    result: ToolResult,
    release: TotalsReservation,
    facts: ToolFacts | undefined,
  ): Promise<void> {
    if (result.status === "success") {
      if (facts?.replayed?.(result.data)) await this.release(release);
      return;
    }
    if (result.error?.details.mayHaveCommitted === true) return;
    await this.release(release);
  }

  /** Releases a reservation; a failure is logged (the reservation then counts until its window ends). */
  private async release(reservation: TotalsReservation): Promise<void> {
    try {
      await this.deps.totals.release(reservation);
    } catch (error) {
      this.deps.logger.warn("policy totals reservation not released", {
        toolName: reservation.toolName,
        error: describeThrown(error),
      });
    }
  }

  /** The reservation of a metered call (its currency and gross from the facts), else undefined. */
  private reservationOf(request: DecisionRequest, vouched: VouchedFacts): TotalsReservation | undefined {
    const { tool, args } = request.prepared;
    if (!tool.facts?.metered) return undefined;
    const businessKey = tool.businessKey ? (args as Record<string, unknown>)[tool.businessKey] : undefined;
    return {
      tenantId: request.security.tenantId,
      userId: request.security.userId,
      toolName: tool.name,
      currency: String(vouched.facts.currency),
      grossMinor: Number(vouched.facts.grossMinor),
      key: typeof businessKey === "string" ? `${tool.name}:${businessKey}` : request.operationKey(),
      atMs: this.now(),
    };
  }

  /** The Cedar request of a call of `tool` by the caller, with `context` shaped by the tool's schema. */
  private request(
    tool: ToolDefinition,
    security: SecurityContext,
    context: Record<string, unknown>,
  ): CedarRequest {
    let type = this.contextTypes.get(tool);
    if (!type) {
      type = contextTypeOf(tool);
      this.contextTypes.set(tool, type);
    }
    const attributes = type.type === "Record" ? type.attributes : {};
    const shaped = Object.fromEntries(
      Object.entries(context).map(([name, value]) => {
        const child = attributes[name];
        const unknown = typeof value === "object" && value !== null && "__extn" in value;
        return [name, child && !unknown ? contextValue(value, child) : value];
      }),
    );
    const principal = { type: "User", id: security.userId };
    return {
      principal,
      action: { type: "Action", id: tool.name },
      resource: { type: "Tenant", id: security.tenantId },
      context: shaped,
      entities: [
        {
          uid: principal,
          attrs: { tenant: security.tenantId, permissions: [...security.permissions] },
          parents: [],
        },
      ],
    };
  }

  /** The explanation recorded with the call. */
  private auditOf(
    request: DecisionRequest,
    sets: TenantSets,
    verdicts: { enforced: Verdict; shadow?: Verdict },
    totals: Record<string, RunningTotal> | undefined,
  ): PolicyAudit {
    const { enforced, shadow } = verdicts;
    const approved = request.approved && enforced.decision === "approval";
    return {
      decision: approved ? "permit" : enforced.decision,
      policyIds: enforced.policyIds,
      source: sets.enforced?.source ?? "default",
      version: sets.enforced?.version ?? null,
      ...(totals ? { totals } : {}),
      ...(shadow && sets.shadow ? { shadow: { ...shadow, version: sets.shadow.version } } : {}),
      ...(approved ? { approved: true } : {}),
    };
  }

  /** The approval's preview: the facts' numbers, the policies asking, and an APPROVAL_RULES threshold. */
  private previewOf(vouched: VouchedFacts, audit: PolicyAudit): ApprovalPreview {
    const threshold = audit.policyIds.map((id) => this.deps.thresholds?.get(id)).find((t) => t !== undefined);
    return { ...vouched.preview, ...(threshold ? { threshold } : {}), policyIds: audit.policyIds };
  }

  /** Keeps a shadow decision that differs from the enforced one (a failure is logged, never refuses). */
  private async keepShadow(
    request: DecisionRequest,
    sets: TenantSets,
    verdicts: { enforced: Verdict; shadow?: Verdict },
    vouched: VouchedFacts,
  ): Promise<void> {
    const { enforced, shadow } = verdicts;
    if (!shadow || !sets.shadow || shadow.decision === enforced.decision) return;
    const { prepared, security } = request;
    try {
      await this.deps.recordShadow(security.tenantId, {
        decidedAt: new Date(this.now()).toISOString(),
        runId: request.runId,
        toolCallId: prepared.call.id,
        toolName: prepared.tool.name,
        userId: security.userId,
        facts: vouched.facts,
        enforced: { ...enforced, version: sets.enforced?.version ?? null },
        shadow: { ...shadow, version: sets.shadow.version },
      });
    } catch (error) {
      this.deps.logger.warn("shadow decision not recorded", {
        toolName: prepared.tool.name,
        error: describeThrown(error),
      });
    }
  }

  /** The fail-closed refusal; the detail goes to the logs only. */
  private failClosed(prepared: PreparedToolCall, stage: string, error: unknown): CallDecision {
    this.deps.logger.error("policy decision failed", {
      code: "POLICY_CHECK_FAILED",
      toolName: prepared.tool.name,
      stage,
      error: describeThrown(error),
    });
    return { kind: "refused", result: policyCheckFailed(prepared) };
  }
}

/** The key of a partial evaluation: the set, the tool and the caller's identity. */
function partialKey(active: ActiveSet, tool: ToolDefinition, security: SecurityContext): string {
  return [active.set.key, tool.name, security.tenantId, security.userId, ...security.permissions].join("\n");
}
