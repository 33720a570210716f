/**
 * The Cedar side of the policies with the real engine (@cedar-policy/cedar-wasm): the schema generated
 * from the tool registry, policy ids (`@id`, else positional), strict validation naming the policy and
 * line, decisions (forbid beats approval beats permit), partial evaluation for the tools offered, and the
 * APPROVAL_RULES shorthand's Cedar.
 */
import { describe, expect, it } from "vitest";
import {
  authorize,
  parsePolicySet,
  partiallyAuthorize,
  preparse,
  unknownValue,
  validatePolicySet,
} from "../shared/cedar/policy-set.js";
import { cedar } from "../shared/cedar/wasm.js";
import { accountingToolDeclarations, policyIssuesSync, policySchemaText } from "../shared/policies/check.js";
import { approvalRulesCedar, defaultPolicyText, thresholdMinor } from "../shared/policies/defaults.js";
import { contextTypeOf, policySchemaOf } from "../shared/policies/schema.js";

const tools = accountingToolDeclarations();
const schema = policySchemaOf(tools);

const user = { type: "User", id: "usr_1" };
const request = (action: string, context: Record<string, unknown>, permissions = ["billing:write"]) => ({
  principal: user,
  action: { type: "Action", id: action },
  resource: { type: "Tenant", id: "t1" },
  context,
  entities: [{ uid: user, attrs: { tenant: "t1", permissions }, parents: [] }],
});
const invoiceContext = (grossMinor: number, currency = "GBP", tenantDayGross = 0) => ({
  input: { clientName: "Acme", quoteId: `qt_${"a".repeat(32)}` },
  facts: { subtotalMinor: grossMinor - 100, taxMinor: 100, grossMinor, currency, jurisdiction: "GB" },
  totals: {
    userDay: { count: 1, grossMinor: tenantDayGross },
    tenantDay: { count: 1, grossMinor: tenantDayGross },
    userHour: { count: 1, grossMinor: tenantDayGross },
    tenantHour: { count: 1, grossMinor: tenantDayGross },
  },
});

describe("the schema generated from the registry", () => {
  it("has one action per tool, User and Tenant, and each context from the tool's declarations", () => {
    const namespace = (schema as Record<string, { actions: Record<string, unknown>; entityTypes: object }>)[
      ""
    ];
    expect(Object.keys(namespace?.actions ?? {})).toEqual([...tools.keys()]);
    expect(Object.keys(namespace?.entityTypes ?? {})).toEqual(["User", "Tenant"]);
    const recordInvoice = contextTypeOf(tools.get("recordInvoice") as never);
    expect(recordInvoice).toMatchObject({
      type: "Record",
      attributes: {
        input: {
          attributes: {
            clientName: { type: "String" },
            quoteId: { type: "String" },
            clientReference: { type: "String", required: false },
            description: { type: "String", required: false },
          },
        },
        facts: {
          attributes: {
            subtotalMinor: { type: "Long" },
            taxMinor: { type: "Long" },
            grossMinor: { type: "Long" },
            currency: { type: "String" },
            jurisdiction: { type: "String" },
          },
        },
        totals: {
          attributes: {
            tenantDay: { attributes: { count: { type: "Long" }, grossMinor: { type: "Long" } } },
          },
        },
      },
    });
    // calculateTax's amount (a number or a decimal string) stays a decimal string; it is not metered.
    const calculateTax = contextTypeOf(tools.get("calculateTax") as never) as {
      attributes: Record<string, { attributes: Record<string, unknown> }>;
    };
    expect(calculateTax.attributes.input?.attributes.amount).toEqual({ type: "String" });
    expect(calculateTax.attributes.totals).toBeUndefined();
    expect(policySchemaText()).toContain('action "recordInvoice" appliesTo');
  });
});

describe("policy sets", () => {
  it("name each policy by @id, else by its position, in text order", async () => {
    const engine = await cedar();
    const text = [
      "permit (principal, action, resource);",
      '@id("cap")\nforbid (principal, action == Action::"recordInvoice", resource) when { context.facts.grossMinor > 500000 };',
      ...Array.from({ length: 10 }, () => "permit (principal, action, resource);"),
    ].join("\n");
    const parsed = parsePolicySet(engine, text);
    expect(parsed.ok).toBe(true);
    if (!parsed.ok) return;
    expect(parsed.set.policies.map((p) => p.id)).toEqual([
      "policy0",
      "cap",
      ...Array.from({ length: 10 }, (_, i) => `policy${i + 2}`),
    ]);
    expect(parsed.set.policies[1]).toMatchObject({ effect: "forbid", line: 2, annotations: { id: "cap" } });
    // A policy whose text is also inside an earlier one (after its @id), or in a comment before it, is
    // still the one where it stands: its position and line are its own.
    const inside = parsePolicySet(
      engine,
      '@id("a")\npermit (principal, action, resource);\n// forbid (principal, action == Action::"listInvoices", resource);\nforbid (principal, action == Action::"listInvoices", resource);\npermit (principal, action, resource);\n',
    );
    if (!inside.ok) throw new Error(JSON.stringify(inside.issues));
    expect(inside.set.policies.map((p) => [p.id, p.effect, p.line])).toEqual([
      ["a", "permit", 1],
      ["policy1", "forbid", 4],
      ["policy2", "permit", 5],
    ]);
  });

  it("refuse a set that does not validate, naming the policy, the line and the engine's error", () => {
    const issues = policyIssuesSync(
      'permit (principal, action, resource);\n\n@id("typo")\nforbid (principal, action == Action::"recordInvoice", resource)\n  when { context.facts.grosMinor > 1 };\n',
    );
    expect(issues).toHaveLength(1);
    expect(issues[0]).toMatchObject({ policyId: "typo", line: 5 });
    expect(issues[0]?.message).toMatch(/grosMinor/);
    const unparsable = policyIssuesSync(
      'permit (principal, action, resource);\n@id("broken")\nforbid (principal, action, resource) when { 1 + };',
    );
    expect(unparsable[0]).toMatchObject({ policyId: "broken", line: 3 });
    // A parse error in a policy without @id is that policy's (by position), not the named one before it;
    // a `;` or an `@id(…)` inside a string or a comment neither ends a policy nor names one.
    const afterNamed = policyIssuesSync(
      '@id("a")\npermit (principal, action, resource);\nforbid (principal, action, resource) when { 1 + };',
    );
    expect(afterNamed[0]).toMatchObject({ policyId: "policy1", line: 3 });
    const tricky = policyIssuesSync(
      '@id("a")\npermit (principal, action, resource) when { context.input has clientName && context.input.clientName == "x;y" };\n// a comment; with @id("c")\n@id("b")\nforbid (principal, action, resource) when { 1 + };\npermit (principal, action, resource) when { };',
    );
    expect(tricky[0]).toMatchObject({ policyId: "b", line: 5 });
    expect(policyIssuesSync("permit (principal, action, resource) when { 1 + };")[0]).toMatchObject({
      policyId: "policy0",
      line: 1,
    });
    expect(
      policyIssuesSync(
        '@id("a") permit (principal, action, resource);\n@id("a") permit (principal, action, resource);',
      )[0],
    ).toMatchObject({
      policyId: "a",
      line: 2,
      message: 'another policy already has the id "a"',
    });
    // boundloop's @approval asks for a person only as @approval("required") on a permit: anything else is
    // refused rather than read as a plain permit (a typo would otherwise record without approval).
    expect(policyIssuesSync('@id("x")\n@approval("require")\npermit (principal, action, resource);')).toEqual(
      [
        {
          policyId: "x",
          line: 2,
          column: 1,
          message:
            '@approval("require") asks nobody: write @approval("required"), on a permit (a forbid refuses the call whatever anyone decides)',
        },
      ],
    );
    expect(policyIssuesSync('@approval("required")\nforbid (principal, action, resource);')).toMatchObject([
      { policyId: "policy0", line: 1, column: 1 },
    ]);
    expect(policyIssuesSync('@Approval("required")\npermit (principal, action, resource);')).toHaveLength(1);
    expect(policyIssuesSync('@approval("required")\npermit (principal, action, resource);')).toEqual([]);
    // Two equal texts without @id: each one's issue is on its own line, not the first copy's.
    const twice =
      'forbid (principal, action == Action::"recordInvoice", resource)\n  when { context.facts.grosMinor > 1 };';
    expect(policyIssuesSync(`${twice}\n${twice}`).map((issue) => [issue.policyId, issue.line])).toEqual([
      ["policy0", 2],
      ["policy1", 4],
    ]);
    // An optional argument used without `has` does not validate (strict mode).
    expect(
      policyIssuesSync(
        '@id("ref") forbid (principal, action == Action::"recordInvoice", resource) when { context.input.clientReference == "x" };',
      )[0]?.policyId,
    ).toBe("ref");
    expect(
      policyIssuesSync(
        '@id("ok") forbid (principal, action == Action::"recordInvoice", resource) when { context.input has clientReference && context.input.clientReference == "x" };',
      ),
    ).toEqual([]);
  });

  it("decide on arguments, facts and totals: forbid beats approval, approval beats a plain permit", async () => {
    const engine = await cedar();
    const text = `@id("base") permit (principal, action, resource);
@id("big") @approval("required") permit (principal, action == Action::"recordInvoice", resource) when { context.facts.grossMinor >= 100000 };
@id("cap") forbid (principal, action == Action::"recordInvoice", resource) when { context.facts.grossMinor > 500000 };
@id("daily") forbid (principal, action == Action::"recordInvoice", resource) when { context.totals.tenantDay.grossMinor > 200000 };
@id("no-bd") forbid (principal, action == Action::"calculateTax", resource) when { context.input.jurisdiction == "BD" };`;
    const checked = validatePolicySet(engine, text, schema);
    expect(checked.ok).toBe(true);
    if (!checked.ok) return;
    preparse(engine, checked.set);
    expect(authorize(engine, checked.set, request("recordInvoice", invoiceContext(50_000)))).toEqual({
      decision: "allow",
      reasons: ["base"],
      errors: [],
    });
    expect(
      authorize(engine, checked.set, request("recordInvoice", invoiceContext(150_000))).reasons.sort(),
    ).toEqual(["base", "big"]);
    expect(authorize(engine, checked.set, request("recordInvoice", invoiceContext(600_000)))).toMatchObject({
      decision: "deny",
      reasons: ["cap"],
    });
    expect(
      authorize(engine, checked.set, request("recordInvoice", invoiceContext(50_000, "GBP", 240_000))),
    ).toMatchObject({ decision: "deny", reasons: ["daily"] });
    const tax = (jurisdiction: string) => ({
      input: { amount: "100.00", currency: "BDT", jurisdiction },
      facts: { subtotalMinor: 1, taxMinor: 1, grossMinor: 2, currency: "BDT", jurisdiction },
    });
    expect(authorize(engine, checked.set, request("calculateTax", tax("BD")))).toMatchObject({
      decision: "deny",
      reasons: ["no-bd"],
    });
    expect(authorize(engine, checked.set, request("calculateTax", tax("GB"))).decision).toBe("allow");
  });

  it("partial evaluation hides only a tool no context could permit", async () => {
    const engine = await cedar();
    const text = `@id("base") permit (principal, action, resource);
@id("admins-only") forbid (principal, action == Action::"listInvoices", resource) unless { principal.permissions.contains("billing:admin") };
@id("cap") forbid (principal, action == Action::"recordInvoice", resource) when { context.facts.grossMinor > 500000 };`;
    const parsed = validatePolicySet(engine, text, schema);
    if (!parsed.ok) throw new Error(JSON.stringify(parsed.issues));
    const unknown = {
      input: unknownValue("input"),
      facts: unknownValue("facts"),
      totals: unknownValue("totals"),
    };
    const mayPermit = (set: typeof parsed.set, action: string, permissions?: string[]) =>
      partiallyAuthorize(engine, set, request(action, unknown, permissions)).mayPermit;
    expect(mayPermit(parsed.set, "listInvoices")).toBe(false);
    expect(mayPermit(parsed.set, "listInvoices", ["billing:admin"])).toBe(true);
    expect(mayPermit(parsed.set, "recordInvoice")).toBe(true);
    expect(mayPermit(parsed.set, "getInvoice")).toBe(true);
    const none = parsePolicySet(
      engine,
      '@id("only-tax") permit (principal, action == Action::"calculateTax", resource);',
    );
    if (!none.ok) throw new Error("parse");
    expect(mayPermit(none.set, "getInvoice")).toBe(false);
  });
});

describe("what a set reads", () => {
  it("is the context paths and principal its conditions read; decisions are those of the whole request", async () => {
    const engine = await cedar();
    const text = `@id("base")
permit (principal, action, resource);
@id("cap")
forbid (principal, action == Action::"recordInvoice", resource)
when { context.facts.currency == "GBP" && context.totals.tenantDay.grossMinor > 1000 };
@id("bd")
forbid (principal, action, resource) when { context.facts has jurisdiction && context.facts.jurisdiction == "BD" };`;
    const parsed = parsePolicySet(engine, text);
    if (!parsed.ok) throw new Error(JSON.stringify(parsed.issues));
    expect(parsed.set.references).toEqual({
      context: { facts: { currency: true, jurisdiction: true }, totals: { tenantDay: { grossMinor: true } } },
      principal: false,
    });
    preparse(engine, parsed.set);
    expect(authorize(engine, parsed.set, request("recordInvoice", invoiceContext(500, "GBP", 999)))).toEqual({
      decision: "allow",
      reasons: ["base"],
      errors: [],
    });
    expect(authorize(engine, parsed.set, request("recordInvoice", invoiceContext(500, "GBP", 1001)))).toEqual(
      {
        decision: "deny",
        reasons: ["cap"],
        errors: [],
      },
    );
    const bd = invoiceContext(500, "EUR");
    const inBd = { ...bd, facts: { ...bd.facts, jurisdiction: "BD" } };
    expect(authorize(engine, parsed.set, request("recordInvoice", inBd)).reasons).toEqual(["bd"]);

    const whole = parsePolicySet(
      engine,
      `forbid (principal, action, resource) when { principal.permissions.contains("x") || context == {} };`,
    );
    if (!whole.ok) throw new Error(JSON.stringify(whole.issues));
    expect(whole.set.references).toEqual({ context: "all", principal: true });
    preparse(engine, whole.set);
    // The principal's entity still reaches the engine: without it, principal.permissions would error.
    expect(authorize(engine, whole.set, request("getInvoice", {}, ["x"]))).toEqual({
      decision: "deny",
      reasons: ["policy0"],
      errors: [],
    });
  });
});

describe("APPROVAL_RULES as Cedar", () => {
  it("is a base permit and one approval policy per tool and currency, on the backend's gross total", () => {
    expect(
      approvalRulesCedar({ recordInvoice: { GBP: "1000.00", BDT: "50000" } }),
    ).toBe(`@id("boundloop.base")
permit (principal, action, resource);

@id("approval-rules.recordInvoice.GBP")
@approval("required")
permit (principal, action == Action::"recordInvoice", resource)
when { context.facts.currency == "GBP" && context.facts.grossMinor >= 100000 };

@id("approval-rules.recordInvoice.BDT")
@approval("required")
permit (principal, action == Action::"recordInvoice", resource)
when { context.facts.currency == "BDT" && context.facts.grossMinor >= 5000000 };
`);
    expect(policyIssuesSync(approvalRulesCedar({ recordInvoice: { GBP: "1000.00" } }))).toEqual([]);
    expect(thresholdMinor("1000.005", "GBP")).toBe(100_001);
    expect(thresholdMinor("5000", "JPY")).toBe(5000);
    expect(defaultPolicyText(undefined, {})).toBeNull();
    expect(defaultPolicyText("permit (principal, action, resource);", {})).toBe(
      "permit (principal, action, resource);",
    );
  });
});
