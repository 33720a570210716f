/**
 * Decisions known without the engine (docs/policies.md): when partial evaluation of a set for a tool and
 * a caller, the context unknown, leaves no condition on the context, its answer is the answer of every
 * call, and the decision service uses it instead of calling Cedar. On the real engine: that answer equals
 * the engine's own for concrete calls (decision and determining policies, in the set's text order) for
 * the worked examples of docs/policies.md, examples/policies.cedar, the bench's five-policy set and sets
 * made to probe the edges; and, on DynamoDB Local, the decision service gives the same enforced and
 * shadow verdicts with and without it, calling the engine only for calls whose answer depends on them.
 */
import { randomUUID } from "node:crypto";
import { readFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { FIVE_POLICIES } from "../bench/governance.js";
import { quotedRecordInvoiceArgs } from "../local/fixtures.js";
import type { DecisionRequest } from "../shared/agent/decision.js";
import { prepareToolCall } from "../shared/agent/dispatcher.js";
import type { ToolDefinition } from "../shared/agent/tool.js";
import {
  authorize,
  type CedarAnswer,
  type ParsedPolicySet,
  parsePolicySet,
  partiallyAuthorize,
  preparse,
  unknownValue,
} from "../shared/cedar/policy-set.js";
import { type CedarWasm, cedar } from "../shared/cedar/wasm.js";
import { loadConfig } from "../shared/config.js";
import { type ApiDeps, createApiDeps } from "../shared/deps.js";
import type { SecurityContext } from "../shared/identity.js";
import { accountingToolDeclarations } from "../shared/policies/check.js";
import { PolicyDecisions } from "../shared/policies/decisions.js";
import { POLICY_CACHE_MS, PolicySets } from "../shared/policies/sets.js";
import { ensureTable } from "../shared/store/table.js";

const doc = readFileSync(new URL("../docs/policies.md", import.meta.url), "utf8");
/** The Cedar blocks of the worked examples (the first block is the generated schema). */
const workedExamples = [...doc.matchAll(/```cedar\n([\s\S]*?)\n```/g)].map((m) => m[1] as string).slice(1);

/** Sets made to probe the edges: principal conditions, several determining policies, `has`, errors. */
const PROBES = {
  principal: `@id("writers") permit (principal, action, resource) when { principal.permissions.contains("billing:write") };
@id("admins-list") forbid (principal, action == Action::"listInvoices", resource) unless { principal.permissions.contains("billing:admin") };`,
  several: `@id("z-first") permit (principal, action, resource);
@id("tax") permit (principal, action == Action::"calculateTax", resource);
@id("tenant") permit (principal, action, resource) when { resource == Tenant::"t1" && principal.tenant == "t1" };
@id("no-list") forbid (principal, action == Action::"listInvoices", resource);
@id("no-list-t1") forbid (principal, action == Action::"listInvoices", resource) when { resource == Tenant::"t1" };`,
  has: `@id("metered-only") permit (principal, action, resource) when { context has totals };`,
  errors: `@id("base") permit (principal, action, resource);
@id("odd") forbid (principal, action == Action::"getInvoice", resource) when { principal.tenant.nope == 1 };`,
};

const tools = accountingToolDeclarations();
const callers = [["billing:read", "billing:write"], ["billing:admin"], []];
const totals = (grossMinor: number) => ({
  userDay: { count: 2, grossMinor },
  tenantDay: { count: 3, grossMinor },
  userHour: { count: 1, grossMinor },
  tenantHour: { count: 1, grossMinor },
});
/** Concrete contexts with real values, for every tool (totals only for a metered one, as calls have them). */
const contextsFor = (tool: ToolDefinition) => {
  const facts = (grossMinor: number, currency: string, jurisdiction: string) => ({
    subtotalMinor: grossMinor - 100,
    taxMinor: 100,
    grossMinor,
    currency,
    jurisdiction,
  });
  const inputs = [
    { clientName: "Acme", quoteId: `qt_${"a".repeat(32)}` },
    { clientName: "Acme", quoteId: `qt_${"b".repeat(32)}`, clientReference: "X-1" },
    { amount: "100.00", currency: "BDT", jurisdiction: "BD" },
    {},
  ];
  const all = inputs.flatMap((input) =>
    [facts(12_000, "GBP", "GB"), facts(600_000, "GBP", "GB"), facts(150_000, "BDT", "BD"), {}].map((f) => ({
      input,
      facts: f,
    })),
  );
  return tool.facts?.metered
    ? all.flatMap((context) => [1_000, 3_000_000].map((g) => ({ ...context, totals: totals(g) })))
    : all;
};
const request = (tool: ToolDefinition, permissions: string[], context: Record<string, unknown>) => {
  const principal = { type: "User", id: "usr_1" };
  return {
    principal,
    action: { type: "Action", id: tool.name },
    resource: { type: "Tenant", id: "t1" },
    context,
    entities: [{ uid: principal, attrs: { tenant: "t1", permissions }, parents: [] }],
  };
};
/** The partial evaluation the decision service keeps: the context unknown, shaped as a call's. */
const partialOf = (engine: CedarWasm, set: ParsedPolicySet, tool: ToolDefinition, permissions: string[]) =>
  partiallyAuthorize(
    engine,
    set,
    request(tool, permissions, {
      input: unknownValue("input"),
      facts: unknownValue("facts"),
      ...(tool.facts?.metered ? { totals: unknownValue("totals") } : {}),
    }),
  );

/** Every (tool, caller) answer known without the engine, after checking it against the engine's. */
async function checkedKnown(text: string): Promise<Record<string, CedarAnswer | null>> {
  const engine = await cedar();
  const parsed = parsePolicySet(engine, text);
  if (!parsed.ok) throw new Error(JSON.stringify(parsed.issues));
  preparse(engine, parsed.set);
  const known: Record<string, CedarAnswer | null> = {};
  for (const tool of tools.values()) {
    for (const permissions of callers) {
      const partial = partialOf(engine, parsed.set, tool, permissions);
      known[`${tool.name} ${permissions.join(",")}`] = partial.known;
      if (!partial.known) continue;
      expect(partial.mayPermit).toBe(partial.known.decision === "allow");
      for (const context of contextsFor(tool)) {
        const answer = authorize(engine, parsed.set, request(tool, permissions, context));
        expect(answer, `${tool.name} ${JSON.stringify(context)}`).toEqual(partial.known);
      }
    }
  }
  return known;
}

const allow = (...reasons: string[]) => ({ decision: "allow", reasons, errors: [] });
const deny = (...reasons: string[]) => ({ decision: "deny", reasons, errors: [] });

describe("an answer known from partial evaluation", () => {
  it("is the engine's for every call of the tool, for the worked examples and the bench's set", async () => {
    expect(workedExamples).toHaveLength(5);
    const examples = [
      ...workedExamples,
      readFileSync(new URL("../examples/policies.cedar", import.meta.url), "utf8"),
      FIVE_POLICIES,
    ];
    const known = await Promise.all(examples.map(checkedKnown));
    const writer = (set: number, tool: string) => known[set]?.[`${tool} billing:read,billing:write`];
    // 1. the amount cap: every tool but recordInvoice is permitted by "base" whatever the context.
    expect(writer(0, "calculateTax")).toEqual(allow("base"));
    expect(writer(0, "listInvoices")).toEqual(allow("base"));
    expect(writer(0, "recordInvoice")).toBeNull();
    // 2. a daily total alone permits nothing: denied by no policy, but for recordInvoice whether the
    // forbid is among the determining policies depends on the call.
    expect(writer(1, "calculateTax")).toEqual(deny());
    expect(writer(1, "recordInvoice")).toBeNull();
    // 3. approval: only recordInvoice can be permitted, on a condition.
    expect(writer(2, "getInvoice")).toEqual(deny());
    expect(writer(2, "recordInvoice")).toBeNull();
    // The APPROVAL_RULES equivalent, examples/policies.cedar and the bench's set.
    expect(writer(3, "calculateTax")).toEqual(allow("boundloop.base"));
    expect(writer(3, "recordInvoice")).toBeNull();
    // 4. per jurisdiction: a conditional permit for recordInvoice only.
    expect(writer(4, "recordInvoice")).toBeNull();
    expect(writer(4, "calculateTax")).toEqual(deny());
    for (const set of [5, 6]) {
      expect(writer(set, "calculateTax")).toEqual(allow("base"));
      expect(writer(set, "getInvoice")).toEqual(allow("base"));
      expect(writer(set, "recordInvoice")).toBeNull();
    }
  });

  it("follows the principal, names every determining policy in text order, reads `has` as calls do, and is never an answer with errors", async () => {
    const principal = await checkedKnown(PROBES.principal);
    expect(principal["listInvoices billing:read,billing:write"]).toEqual(deny("admins-list"));
    expect(principal["listInvoices billing:admin"]).toEqual(deny());
    expect(principal["getInvoice billing:read,billing:write"]).toEqual(allow("writers"));
    expect(principal["getInvoice "]).toEqual(deny());
    const several = await checkedKnown(PROBES.several);
    expect(several["calculateTax "]).toEqual(allow("z-first", "tax", "tenant"));
    expect(several["listInvoices "]).toEqual(deny("no-list", "no-list-t1"));
    // Only a metered tool's calls have totals in their context.
    const has = await checkedKnown(PROBES.has);
    expect(has["recordInvoice "]).toEqual(allow("metered-only"));
    expect(has["calculateTax "]).toEqual(deny());
    // A policy that errors leaves the call to the engine (which reports the error: fail closed).
    const errors = await checkedKnown(PROBES.errors);
    expect(errors["getInvoice "]).toBeNull();
    expect(errors["calculateTax "]).toEqual(allow("base"));
  });
});

describe("the decision service", () => {
  let deps: ApiDeps;
  beforeAll(async () => {
    const config = loadConfig({
      DYNAMODB_ENDPOINT: inject("dynamoEndpoint"),
      TABLE_NAME: `test-known-${randomUUID()}`,
      POLICIES: FIVE_POLICIES,
    });
    deps = createApiDeps(config);
    await ensureTable(deps.ddb, config.table.name);
  });
  afterAll(() => deps?.ddb.destroy());

  it("decides as the engine would, enforced and in shadow, and calls it only for answers that depend on the call", async () => {
    const tenantId = `tenant_known_${randomUUID()}`;
    const admin = { ifNoneMatch: "*" };
    const strict = `${FIVE_POLICIES}\n@id("no-lists") forbid (principal, action == Action::"listInvoices", resource);`;
    expect(
      await deps.policies.sets.put(
        tenantId,
        "usr_admin",
        { policies: FIVE_POLICIES, mode: "enforce" },
        admin,
      ),
    ).toMatchObject({ kind: "stored" });
    expect(
      await deps.policies.sets.put(
        tenantId,
        "usr_admin",
        { policies: strict, mode: "shadow" },
        { ifMatch: '"v1"' },
      ),
    ).toMatchObject({ kind: "stored" });
    const security: SecurityContext = {
      tenantId,
      userId: "usr_w",
      permissions: ["billing:read", "billing:write"],
    };
    const engine = await cedar();
    let evaluations = 0;
    const counting = new Proxy(engine, {
      get: (target, name) =>
        name === "statefulIsAuthorized"
          ? (call: never) => {
              evaluations += 1;
              return target.statefulIsAuthorized(call);
            }
          : Reflect.get(target, name),
    });
    const service = () =>
      new PolicyDecisions({
        sets: deps.policies.sets,
        totals: { reserve: async () => ({ fresh: false, totals: totals(12_000) }), release: async () => {} },
        recordShadow: async () => {},
        logger: { error: () => {}, warn: () => {} },
        engine: async () => counting,
      });
    const invoiceArgs = await quotedRecordInvoiceArgs(deps, { tenantId, userId: "usr_w" });
    const calls = [
      { name: "calculateTax", arguments: '{"amount":"100.00","currency":"GBP","jurisdiction":"GB"}' },
      { name: "listInvoices", arguments: "{}" },
      { name: "recordInvoice", arguments: invoiceArgs },
    ];
    const decideAll = async (decisions: PolicyDecisions) => {
      const decided = [];
      for (const [n, call] of calls.entries()) {
        const prepared = prepareToolCall({ id: `call_${n}`, ...call }, deps.tools, security);
        if (prepared.kind !== "ready") throw new Error(JSON.stringify(prepared));
        const request: DecisionRequest = {
          prepared,
          security,
          runId: "run_known",
          operationKey: () => `op_${n}`,
          approved: false,
          signal: new AbortController().signal,
        };
        const decision = await decisions.decide(request);
        decided.push(decision.kind === "refused" ? decision.result.metadata.policy : decision.audit);
      }
      return decided;
    };
    const byEngine = await decideAll(service());
    expect(evaluations).toBe(6); // three calls, each against the enforced and the shadow set
    expect(byEngine.map((audit) => [audit?.decision, audit?.policyIds, audit?.shadow])).toEqual([
      ["permit", ["base"], { decision: "permit", policyIds: ["base"], version: 2 }],
      ["permit", ["base"], { decision: "forbid", policyIds: ["no-lists"], version: 2 }],
      ["permit", ["base"], { decision: "permit", policyIds: ["base"], version: 2 }],
    ]);

    const decisions = service();
    const offered = await decisions.offered([...deps.tools.values()], security, { wait: true });
    expect(offered.map((tool) => tool.name)).toContain("listInvoices");
    evaluations = 0;
    expect(await decideAll(decisions)).toEqual(byEngine);
    // Only recordInvoice's answer depends on the call (its facts and totals), for both sets.
    expect(evaluations).toBe(2);
  });
  it("keep offering what the tenant's set allows while a warm container re-reads it", async () => {
    const tenantId = `tenant_reread_${randomUUID()}`;
    let now = Date.parse("2026-12-05T12:00:00Z");
    const sets = new PolicySets({
      store: deps.policies.store,
      tools: deps.tools,
      defaultText: null,
      now: () => now,
    });
    const decisions = new PolicyDecisions({
      sets,
      totals: { reserve: async () => ({ fresh: false, totals: totals(0) }), release: async () => {} },
      recordShadow: async () => {},
      logger: { error: () => {}, warn: () => {} },
    });
    const security: SecurityContext = {
      tenantId,
      userId: "usr_w",
      permissions: ["billing:read", "billing:write"],
    };
    const noLists = `@id("base") permit (principal, action, resource);\n@id("no-lists") forbid (principal, action == Action::"listInvoices", resource);`;
    expect(
      await sets.put(tenantId, "usr_admin", { policies: noLists, mode: "enforce" }, { ifNoneMatch: "*" }),
    ).toMatchObject({ kind: "stored" });
    const names = async (wait: boolean) =>
      (await decisions.offered([...deps.tools.values()], security, { wait })).map((tool) => tool.name);
    const withoutLists = ["calculateTax", "recordInvoice", "getInvoice"];
    expect(await names(true)).toEqual(withoutLists);
    expect(await names(false)).toEqual(withoutLists);
    // Past the 30 s the container trusts its read: the set is read again, and what it read last is
    // still what a run starting meanwhile is offered.
    now += POLICY_CACHE_MS + 1;
    expect(await names(false)).toEqual(withoutLists);
    expect(await names(true)).toEqual(withoutLists);
  });
});
