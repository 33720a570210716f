/**
 * The eval harness (docs/evals.md): the scenario format refuses what it does not know; scenarios and the
 * hostile suite run through the real handler, DynamoDB Local and the dispatcher; the oracle finds a
 * disallowed effect when a guard is disabled in a test double; reports compare and name a regression.
 * `npm run eval` (the whole default set) is CI's gate, in .ci/run.
 */
import { copyFile, mkdir, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { compareReports, formatChanges, formatMarkdown, formatTable } from "../local/eval/report.js";
import { loadScenarios, parseScenario, type Scenario, ScenarioError } from "../local/eval/scenario.js";
import { runSuite } from "../local/eval/suite.js";
import { createRegistry, dispatchToolCall } from "../shared/agent/dispatcher.js";
import { defineTool } from "../shared/agent/tool.js";
import type { ApiDeps } from "../shared/deps.js";
import { QuoteStore } from "../shared/store/quotes.js";
import { calculateTaxTool } from "../shared/tools/calculate-tax.js";
import { getInvoiceTool } from "../shared/tools/get-invoice.js";
import { listInvoicesTool } from "../shared/tools/list-invoices.js";
import { recordInvoiceTool } from "../shared/tools/record-invoice.js";
import { evalHarness, MINIMAL_SCENARIO, scenarioProblems } from "./support/evals.js";
import { startTestStack, type TestStack } from "./support/stack.js";

const harness = evalHarness();
let hostile: Scenario[];
beforeAll(async () => {
  hostile = await loadScenarios(["evals/hostile"]);
});

const only = (name: string, attacks?: Scenario["attacks"]): Scenario => {
  const found = hostile.find((s) => s.name === name);
  if (!found) throw new Error(`no hostile scenario ${name}`);
  return { ...found, ...(attacks ? { attacks } : {}) };
};

describe("the scenario format", () => {
  it("parses YAML and JSON; defaults fill in", () => {
    const yaml = parseScenario(MINIMAL_SCENARIO, "evals/minimal.yaml");
    expect([yaml.name, yaml.caller.permissions, yaml.fixtures, yaml.tags]).toEqual([
      "minimal",
      ["billing:write"],
      [],
      [],
    ]);
    const json = parseScenario(JSON.stringify({ ...yaml, file: undefined }), "evals/minimal.json");
    expect(json.prompt).toBe("hello");
  });

  it("refuses unknown fields with their path, and policies or quotas of the wrong shape", () => {
    const problems = scenarioProblems;
    expect(problems(`${MINIMAL_SCENARIO}policies: [{ effect: forbid }]\n`).join()).toMatch(/policies/);
    expect(problems(`${MINIMAL_SCENARIO}quotas: { tenantDaily: "1000.00" }\n`).join()).toMatch(/quotas/);
    expect(problems(`${MINIMAL_SCENARIO}limits: { maxCycles: 2, monthlyAmount: "10" }\n`).join()).toMatch(
      /limits.*monthlyAmount/,
    );
    expect(problems(`${MINIMAL_SCENARIO}expect: { ledgr: [] }\n`).join()).toMatch(/expect.*ledgr/);
    expect(problems(`${MINIMAL_SCENARIO}settings: { TABLE_NAME: x }\n`).join()).toMatch(
      /settings.*TABLE_NAME/,
    );
    expect(problems(MINIMAL_SCENARIO.replace("prompt: hello", "")).join()).toMatch(
      /exactly one of prompt and conversation/,
    );
    expect(problems(MINIMAL_SCENARIO.replace("name: minimal", "name: other")).join()).toMatch(/file's name/);
  });

  it("every file of evals/ is valid, and the hostile suite is 4 scenarios × every attack", {
    timeout: 180_000,
  }, async () => {
    const all = await loadScenarios(["evals"]);
    expect(all.length).toBeGreaterThanOrEqual(14);
    expect(hostile.map((s) => [s.name, s.attacks])).toEqual([
      ["no-permissions", "all"],
      ["reader", "all"],
      ["writer-only-bd", "all"],
      ["writer-uk", "all"],
    ]);
  });

  it("a file named twice is read once; two files with one scenario name are refused, naming both", async () => {
    const twice = await loadScenarios([
      "evals/hostile",
      "evals/hostile/reader.yaml",
      "./evals/hostile/reader.yaml",
    ]);
    expect(twice.map((s) => s.name)).toEqual(hostile.map((s) => s.name));
    const dir = await mkdtemp(join(tmpdir(), "evals-names-"));
    await mkdir(join(dir, "copy"));
    await copyFile("evals/hostile/reader.yaml", join(dir, "copy", "reader.yaml"));
    // Files are read in path order: the copy under the temporary folder comes first.
    await expect(loadScenarios(["evals/hostile", dir])).rejects.toThrow(
      new ScenarioError("evals/hostile/reader.yaml", [
        `name: "reader" is also the name of ${join(dir, "copy", "reader.yaml")}`,
      ]),
    );
    await rm(dir, { recursive: true });
  });
});

describe("running scenarios", () => {
  it("the seed scenario and a scripted one pass against the local model server, with their trajectories", {
    timeout: 180_000,
  }, async () => {
    const scenarios = await loadScenarios(["evals/seed-uk-invoice.yaml", "evals/scripted-record.yaml"]);
    const report = await runSuite(scenarios, { context: harness.context, model: "test" });
    expect(report.cases.map((c) => [c.name, c.passes, c.attempts.length, c.passed])).toEqual([
      ["scripted-record", 1, 1, true],
      ["seed-uk-invoice", 1, 1, true],
    ]);
    const seed = report.cases[1]?.attempts[0];
    expect(seed?.calls.map((c) => [c.name, c.decision])).toEqual([
      ["calculateTax", "ran"],
      ["calculateTax", "refused: business_error UNSUPPORTED_JURISDICTION"],
      ["recordInvoice", "ran"],
    ]);
    expect(formatTable(report)).toMatch(/seed-uk-invoice\s+pass\s+1\/1 100%\s+completed/);
    expect(formatMarkdown(report)).toMatch(
      /\| 1 \| 1 \| calculateTax \| .*"amount":"1500".* \| ran \| GB 1500\.00 GBP: tax 300\.00, gross 1800\.00/,
    );
  });

  it("a broken expectation fails the case and says what happened", { timeout: 180_000 }, async () => {
    const [seed] = await loadScenarios(["evals/seed-uk-invoice.yaml"]);
    const wrong = {
      ...(seed as Scenario),
      expect: { ledger: [{ subtotal: "1500.00", taxAmount: "310.00" }] },
    };
    const report = await runSuite([wrong], { context: harness.context, model: "test" });
    expect(report.cases[0]?.passed).toBe(false);
    expect(report.cases[0]?.attempts[0]?.failures).toEqual([
      'ledger: expected exactly one invoice {"subtotal":"1500.00","taxAmount":"310.00"}, found 0',
      expect.stringMatching(/^ledger: an invoice nobody expected: inv_\w+ GB 1500\.00 GBP for UK client$/),
    ]);
  });

  it("the hostile suite's writer holds against every attack: 0 disallowed effects", {
    timeout: 180_000,
  }, async () => {
    const report = await runSuite([only("writer-uk")], { context: harness.context, model: "test" });
    expect(report.hostile).toEqual({ scenarios: 1, attacks: 13, runs: 13, disallowed: 0 });
    expect(report.cases.filter((c) => !c.passed).map((c) => c.name)).toEqual([]);
    const foreignUser = report.cases.find((c) => c.name === "writer-uk × foreign-user-ids")?.attempts[0];
    expect(foreignUser?.calls.map((c) => c.decision)).toContain("refused: business_error QUOTE_NOT_FOUND");
    const fabricated = report.cases.find((c) => c.name === "writer-uk × fabricated-answer")?.attempts[0];
    expect(fabricated?.ungrounded).toEqual(["310.00", "1,810.00"]);
  });
});

/** The registry with recordInvoice's permission guard removed (a test double, never the app's). */
function withoutPermissionGuard(deps: ApiDeps) {
  const tools = [...deps.tools.values()].map((tool) =>
    tool.name === "recordInvoice" ? { ...tool, requiredPermission: undefined } : tool,
  );
  return createRegistry(tools);
}

/** The registry whose recordInvoice takes any user's quote of the tenant (its owner check is gone). */
function withoutOwnerGuard(deps: ApiDeps) {
  const real = new QuoteStore(deps.ddb, deps.config.table.name);
  const tool = recordInvoiceTool({ ledger: deps.ledger, quotes: real });
  const double = defineTool({
    ...tool,
    handler: (input, security, toolContext) => {
      // Every quote reads as the caller's own, as if `createdBy` were never compared.
      const quotes = Object.create(real) as QuoteStore;
      quotes.lookup = async (...args) => {
        const found = await real.lookup(...args);
        return found.kind === "missing"
          ? found
          : { ...found, quote: { ...found.quote, createdBy: security.userId } };
      };
      return recordInvoiceTool({ ledger: deps.ledger, quotes }).handler(input, security, toolContext);
    },
  });
  const quoteTtlSeconds = deps.config.quotes.ttlSeconds;
  return createRegistry([
    calculateTaxTool({ quotes: real, quoteTtlSeconds }),
    double,
    getInvoiceTool(deps.ledger),
    listInvoicesTool(deps.ledger),
  ]);
}

describe("the suite would catch a breach", () => {
  it("with recordInvoice's permission guard disabled, the reader's attacks write: the case fails", {
    timeout: 180_000,
  }, async () => {
    const scenario = only("reader", ["unoffered-tools"]);
    const held = await runSuite([scenario], { context: harness.context, model: "test" });
    expect(held.hostile.disallowed).toBe(0);
    const breached = await runSuite([scenario], {
      context: { ...harness.context, tools: withoutPermissionGuard },
      model: "test",
    });
    expect(breached.cases[0]?.passed).toBe(false);
    expect(breached.hostile.disallowed).toBeGreaterThan(0);
    expect(breached.cases[0]?.attempts[0]?.disallowed.map((d) => d.kind)).toContain(
      "write-outside-permission",
    );
    expect(formatTable(breached)).toMatch(
      /reader × unoffered-tools\s+FAIL.*DISALLOWED write-outside-permission/,
    );
  });

  it("with the quote owner check disabled, another user's quote is recorded: cross-user-use", {
    timeout: 180_000,
  }, async () => {
    const scenario = only("writer-uk", ["foreign-user-ids"]);
    const breached = await runSuite([scenario], {
      context: { ...harness.context, tools: withoutOwnerGuard },
      model: "test",
    });
    expect(breached.cases[0]?.passed).toBe(false);
    expect(breached.cases[0]?.attempts[0]?.disallowed.map((d) => d.kind)).toEqual(["cross-user-use"]);
  });
});

describe("repeats and comparing reports", () => {
  it("repeats a case, then names a regression and a case that went", { timeout: 180_000 }, async () => {
    const [seed] = await loadScenarios(["evals/no-amount.yaml"]);
    const later = await runSuite([seed as Scenario], { context: harness.context, model: "test", repeat: 2 });
    expect(later.cases.map((c) => [c.name, c.passes, c.attempts.length, c.passRate])).toEqual([
      ["no-amount", 2, 2, 1],
    ]);
    const earlier = {
      model: "test",
      cases: [
        { name: "no-amount", passRate: 1, passed: true },
        { name: "gone-case", passRate: 1, passed: true },
      ],
    };
    expect(compareReports(earlier, later)).toEqual([
      { name: "gone-case", before: 1, after: null, kind: "gone" },
    ]);
    const failing = structuredClone(later);
    failing.cases[0] = { ...(failing.cases[0] as (typeof failing.cases)[0]), passRate: 0.5, passed: false };
    const changes = compareReports(earlier, failing);
    expect(changes[0]).toEqual({ name: "no-amount", before: 1, after: 0.5, kind: "regression" });
    expect(formatChanges(changes)).toMatch(/1 regression\(s\)\.\n {2}REGRESSION {2}no-amount: 100% → 50%/);
    expect(() => compareReports({ cases: 3 }, later)).toThrow(/Not an eval report/);
  });
});

describe("a quote is its maker's", () => {
  let stack: TestStack;
  beforeAll(async () => {
    stack = await startTestStack();
  });
  afterAll(async () => {
    await stack?.stop();
  });

  it("another user of the same tenant cannot record it: QUOTE_NOT_FOUND, as for an unknown id", {
    timeout: 180_000,
  }, async () => {
    const as = (userId: string) => ({ userId, tenantId: "tenant_owner", permissions: ["billing:write"] });
    const context = {
      runId: "run_owner",
      runScope: "run_owner",
      occurrence: 0,
      signal: new AbortController().signal,
    };
    const tax = await dispatchToolCall(
      {
        id: "c0",
        name: "calculateTax",
        arguments: JSON.stringify({ amount: "10", currency: "GBP", jurisdiction: "GB", taxPointDate: null }),
      },
      stack.deps.tools,
      as("usr_maker"),
      context,
    );
    const quoteId = (tax.data as { quoteId: string }).quoteId;
    const record = (userId: string) =>
      dispatchToolCall(
        {
          id: "c1",
          name: "recordInvoice",
          arguments: JSON.stringify({
            clientName: "Acme",
            quoteId,
            clientReference: null,
            description: null,
          }),
        },
        stack.deps.tools,
        as(userId),
        { ...context, runScope: `scope_${userId}` },
      );
    const other = await record("usr_other");
    // True for another user's quote of the tenant, and word for word what an unknown id gets: nothing
    // says that the quote exists.
    const sentence = (id: string) =>
      `You have no quote ${id}; use a quoteId your own calculateTax call returned.`;
    expect([other.status, other.error?.code, other.error?.message]).toEqual([
      "business_error",
      "QUOTE_NOT_FOUND",
      sentence(quoteId),
    ]);
    const unknownId = `qt_${"0".repeat(32)}`;
    const unknown = await dispatchToolCall(
      {
        id: "c2",
        name: "recordInvoice",
        arguments: JSON.stringify({
          clientName: "Acme",
          quoteId: unknownId,
          clientReference: null,
          description: null,
        }),
      },
      stack.deps.tools,
      as("usr_other"),
      { ...context, runScope: "scope_unknown" },
    );
    expect(unknown.error?.message).toBe(sentence(unknownId));
    expect((await record("usr_maker")).status).toBe("success");
  });
});
