/**
 * Policies in durable runs (the local durable runner, DynamoDB Local, the real engine): approval by
 * policy through the existing durable pause (four eyes, exactly once, the policy's id in the preview),
 * forbid beating approval, a retried durable step that never counts twice in the running totals, and
 * failures of the policy store or of the default set refusing the call (fail closed).
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { ApprovalSchema, RunRecordSchema, RunResponseSchema } from "../functions/api/contract.js";
import type { PreparedToolCall } from "../shared/agent/dispatcher.js";
import { prepareToolCall } from "../shared/agent/dispatcher.js";
import { PolicyDecisions } from "../shared/policies/decisions.js";
import { PolicySets } from "../shared/policies/sets.js";
import { counterTotals } from "../shared/policies/totals.js";
import { CounterStore, counterWindow, totalName } from "../shared/store/counters.js";
import { PolicySetStore } from "../shared/store/policy-sets.js";
import { decide, json, pollUntil, SEED_PROMPT, userEvent } from "./support/approvals.js";
import { type DurableStack, startDurableStack } from "./support/durable.js";
import { runEvent } from "./support/idempotency.js";
import { tenantKeys } from "./support/reliability.js";

const POLICIES = `@id("base")
permit (principal, action, resource);

@id("gb-approval")
@approval("required")
permit (principal, action == Action::"recordInvoice", resource)
when { context.facts.jurisdiction == "GB" && context.facts.grossMinor >= 100000 };

@id("hard-cap")
forbid (principal, action == Action::"recordInvoice", resource)
when { context.facts.grossMinor > 1000000 };
`;

let stack: DurableStack;
beforeAll(async () => {
  stack = await startDurableStack({ MAX_CYCLES: "5", POLICIES });
});
afterAll(async () => stack?.stop());
beforeEach(() => {
  stack.model.usePlanner();
  stack.faults.afterStep = undefined;
});

const invoices = (tenantId: string) =>
  tenantKeys(stack.deps.ddb, stack.config.table.name, tenantId, ["INVOICE#"]);
type Result = ReturnType<typeof RunRecordSchema.parse>["steps"][number]["toolCalls"][number]["result"];
const resultsOf = (run: ReturnType<typeof RunRecordSchema.parse>): Result[] =>
  run.steps.flatMap((step) => step.toolCalls.map((call) => call.result));

/** A durable run of `prompt` for `tenantId`, polled until it leaves `running`. */
async function durableRun(tenantId: string, prompt: string) {
  const event = runEvent({ tenantId, prompt });
  event.headers = { ...event.headers, prefer: "respond-async" };
  const started = RunRecordSchema.parse(json(await stack.invoke(event)));
  return pollUntil(stack, started.runId, tenantId, ["running"]);
}

describe("approval by policy", () => {
  it("pauses the call a @approval policy matches, with the backend's preview and the policy id; four eyes; the approved call runs once", async () => {
    const tenantId = "tenant_polapr_ok";
    const run = await durableRun(tenantId, SEED_PROMPT);
    expect(run.status).toBe("awaiting_approval");
    const approval = run.pendingApprovals?.[0];
    expect(approval?.preview).toEqual({
      quoteId: expect.stringMatching(/^qt_/),
      jurisdiction: "GB",
      rateVersion: expect.any(String),
      subtotal: "1500.00",
      taxAmount: "300.00",
      grossTotal: "1800.00",
      currency: "GBP",
      policyIds: ["gb-approval"],
    });
    const target = { runId: run.runId, approvalId: approval?.approvalId as string, tenantId };
    const self = await decide(stack, target, "approve", { sub: "usr_idem", scope: "billing:approve" });
    expect(self.statusCode).toBe(403);
    expect(await invoices(tenantId)).toHaveLength(0);

    const approved = await decide(stack, target, "approve", { reason: "PO checked" });
    expect(ApprovalSchema.parse(json(approved))).toMatchObject({ status: "approved" });
    const done = await pollUntil(stack, run.runId, tenantId);
    expect(done.status).toBe("completed");
    const recorded = resultsOf(done).find(
      (r) => r.metadata.toolName === "recordInvoice" && r.status === "success",
    );
    expect(recorded?.metadata.policy).toMatchObject({
      decision: "permit",
      approved: true,
      policyIds: ["gb-approval"],
      source: "default",
    });
    expect(recorded?.metadata.approval).toMatchObject({ decision: "approved", decidedBy: "usr_approver" });
    // The same decision again: the stored one, and still one invoice.
    expect((await decide(stack, target, "approve")).statusCode).toBe(200);
    expect(await invoices(tenantId)).toHaveLength(1);
  }, 90_000); // a durable pause, a decision and the resumed run: ~20 s on a loaded machine

  it("hands a synchronous run over at the policy's approval, as APPROVAL_RULES would: 202, the same pause, no model call repeated", async () => {
    const tenantId = "tenant_polapr_sync";
    const requestsBefore = stack.model.requests.length;
    const response = await stack.invoke(runEvent({ tenantId, prompt: SEED_PROMPT }));
    expect(response.statusCode, response.body).toBe(202);
    const run = RunRecordSchema.parse(json(response));
    expect(run.status).toBe("awaiting_approval");
    expect(run.pendingApprovals?.[0]?.preview).toMatchObject({
      grossTotal: "1800.00",
      currency: "GBP",
      policyIds: ["gb-approval"],
    });
    expect(stack.model.requests.length - requestsBefore).toBe(2);
    const target = {
      runId: run.runId,
      approvalId: run.pendingApprovals?.[0]?.approvalId as string,
      tenantId,
    };
    expect((await decide(stack, target, "approve")).statusCode).toBe(200);
    const done = await pollUntil(stack, run.runId, tenantId);
    expect(done).toMatchObject({ status: "completed", cycles: 3 });
    expect(await invoices(tenantId)).toHaveLength(1);
    expect(stack.model.requests.length - requestsBefore).toBe(3);
  }, 90_000); // a hand-over, a decision and the resumed run

  it("a continuation recording the already-recorded quote again asks nobody: QUOTE_ALREADY_RECORDED, still one invoice", async () => {
    const tenantId = "tenant_polapr_dup";
    const run = await durableRun(tenantId, SEED_PROMPT);
    expect(run.status).toBe("awaiting_approval");
    const approvalId = run.pendingApprovals?.[0]?.approvalId as string;
    expect((await decide(stack, { runId: run.runId, approvalId, tenantId }, "approve")).statusCode).toBe(200);
    const done = await pollUntil(stack, run.runId, tenantId);
    expect(done.status).toBe("completed");
    const [invoice] = await stack.deps.ledger.list(tenantId);

    const body = JSON.stringify({ prompt: "Record it again.", previousRunId: done.runId });
    const response = await stack.invoke(runEvent({ tenantId, body }));
    expect(response.statusCode, response.body).toBe(200);
    const again = RunResponseSchema.parse(json(response));
    expect(again.status).toBe("completed");
    expect(again.toolResults.map((r) => [r.metadata.toolName, r.error?.code])).toEqual([
      ["recordInvoice", "QUOTE_ALREADY_RECORDED"],
    ]);
    expect(again.toolResults[0]?.error?.details).toMatchObject({ invoiceId: invoice?.invoiceId });
    expect(await invoices(tenantId)).toHaveLength(1);
  }, 90_000); // a durable pause, a decision and the resumed run, then a synchronous run

  it("a rejected call carries the decision that asked for the approval, in the audit step and the run's events", async () => {
    const tenantId = "tenant_polapr_no";
    const run = await durableRun(tenantId, SEED_PROMPT);
    expect(run.status).toBe("awaiting_approval");
    const target = {
      runId: run.runId,
      approvalId: run.pendingApprovals?.[0]?.approvalId as string,
      tenantId,
    };
    expect((await decide(stack, target, "reject", { reason: "no PO" })).statusCode).toBe(200);
    const done = await pollUntil(stack, run.runId, tenantId);
    const asked = { decision: "approval", policyIds: ["gb-approval"], source: "default", version: null };
    const rejected = resultsOf(done).find((r) => r.error?.code === "APPROVAL_REJECTED");
    expect(rejected?.metadata).toMatchObject({ policy: asked, approval: { decision: "rejected" } });
    const events = await stack.deps.runEvents.store.read(tenantId, run.runId, 0);
    const finished = [...events.events].find(
      (e) => e.type === "tool.call.finished" && e.errorCode === "APPROVAL_REJECTED",
    );
    expect(finished).toMatchObject({ policy: asked });
    expect(await invoices(tenantId)).toHaveLength(0);
  }, 90_000);

  it("forbid beats approval: a call both match is refused, never paused", async () => {
    const tenantId = "tenant_polapr_cap";
    const run = await durableRun(tenantId, "Calculate tax on 10000 GBP for a client in the UK and record it");
    expect(run.status).toBe("completed");
    expect(run.pendingApprovals ?? []).toEqual([]);
    const refused = resultsOf(run).find((r) => r.metadata.toolName === "recordInvoice");
    expect(refused).toMatchObject({ error: { code: "POLICY_DENIED", details: { policyIds: ["hard-cap"] } } });
    expect(await invoices(tenantId)).toHaveLength(0);
  });
});

describe("running totals in a durable run", () => {
  it("a tools step retried after the invoice was written counts it once", async () => {
    const tenantId = "tenant_poltot_retry";
    let cut = false;
    stack.faults.afterStep = (name) => {
      if (name === "cycle-2:tools" && !cut) {
        cut = true;
        throw new Error("cut off after the ledger write, before the checkpoint");
      }
    };
    const at = Date.now();
    const run = await durableRun(tenantId, "Calculate tax on 100 GBP for a client in the UK and record it");
    expect(cut).toBe(true);
    expect(run.status).toBe("completed");
    expect(await invoices(tenantId)).toHaveLength(1);
    const recorded = resultsOf(run).find((r) => r.metadata.toolName === "recordInvoice");
    expect(recorded?.metadata.policy?.totals?.tenantDay).toEqual({ count: 1, grossMinor: 12000 });
    const counters = new CounterStore(stack.deps.ddb, stack.config.table.name);
    const state = await counters.read({
      tenantId,
      name: "policy.recordInvoice.GBP",
      window: counterWindow("day", at),
    });
    expect(state.totals[totalName({ kind: "tenant" }, "dayCount")]).toBe(1);
    expect(state.totals[totalName({ kind: "tenant" }, "dayGross")]).toBe(12000);
  });
});

describe("fail closed", () => {
  const logs: Array<{ message: string; extra: Record<string, unknown> }> = [];
  const logger = {
    error: (message: string, extra: Record<string, unknown>) => logs.push({ message, extra }),
    warn: () => {},
  };
  const security = { tenantId: "tenant_pol_fail", userId: "usr_1", permissions: ["billing:write"] };
  const prepared = (): PreparedToolCall => {
    const ready = prepareToolCall(
      { id: "c1", name: "calculateTax", arguments: '{"amount":"100","currency":"GBP","jurisdiction":"GB"}' },
      stack.deps.tools,
      security,
    );
    if (ready.kind !== "ready") throw new Error("not ready");
    return ready;
  };
  const request = () => ({
    prepared: prepared(),
    security,
    runId: "run_fail",
    operationKey: () => "op",
    approved: false,
    signal: new AbortController().signal,
  });

  it("a policy store that cannot be read refuses the call with a stable code and a fixed sentence; the detail goes to the log", async () => {
    const decisions = new PolicyDecisions({
      sets: new PolicySets({
        store: new PolicySetStore(stack.deps.ddb, "no-such-table", 60),
        tools: stack.deps.tools,
        defaultText: null,
      }),
      totals: counterTotals(new CounterStore(stack.deps.ddb, stack.config.table.name)),
      recordShadow: async () => {},
      logger,
    });
    const decision = await decisions.decide(request());
    expect(decision).toMatchObject({
      kind: "refused",
      result: {
        status: "fatal_error",
        error: {
          code: "POLICY_CHECK_FAILED",
          message:
            "calculateTax did not run: the tenant's policies could not be evaluated. The same call can be made again.",
          retryable: true,
          details: { started: false, mayHaveCommitted: false },
        },
      },
    });
    expect(JSON.stringify(decision)).not.toContain("no-such-table");
    expect(logs.at(-1)).toMatchObject({
      message: "policy decision failed",
      extra: { code: "POLICY_CHECK_FAILED", stage: "policy sets" },
    });
    expect(String(logs.at(-1)?.extra.error)).toMatch(/ResourceNotFound|non-existent table|no-such-table/i);
  });

  it("a default set that does not parse refuses every call of every tenant without a set of its own", async () => {
    const decisions = new PolicyDecisions({
      sets: new PolicySets({
        store: new PolicySetStore(stack.deps.ddb, stack.config.table.name, 60),
        tools: stack.deps.tools,
        defaultText: "permit (principal, action, resource) when { 1 + };",
      }),
      totals: counterTotals(new CounterStore(stack.deps.ddb, stack.config.table.name)),
      recordShadow: async () => {},
      logger,
    });
    const decision = await decisions.decide(request());
    expect(decision).toMatchObject({ kind: "refused", result: { error: { code: "POLICY_CHECK_FAILED" } } });
    expect(String(logs.at(-1)?.extra.error)).toContain("line 1");
  });

  it("a stored set whose @approval is mistyped (written past PUT's check) refuses every call instead of running it unasked", async () => {
    const store = new PolicySetStore(stack.deps.ddb, stack.config.table.name, 60);
    const version = {
      policies: '@id("needs-a-person")\n@approval("require")\npermit (principal, action, resource);',
      mode: "enforce" as const,
      version: 1,
      updatedBy: "usr_admin",
      updatedAt: "2026-12-01T00:00:00.000Z",
    };
    expect((await store.putVersion("tenant_pol_typo", version, version, null)).kind).toBe("stored");
    const decisions = new PolicyDecisions({
      sets: new PolicySets({ store, tools: stack.deps.tools, defaultText: null }),
      totals: counterTotals(new CounterStore(stack.deps.ddb, stack.config.table.name)),
      recordShadow: async () => {},
      logger,
    });
    const decision = await decisions.decide({
      ...request(),
      security: { ...security, tenantId: "tenant_pol_typo" },
    });
    expect(decision).toMatchObject({ kind: "refused", result: { error: { code: "POLICY_CHECK_FAILED" } } });
    expect(String(logs.at(-1)?.extra.error)).toContain(
      'needs-a-person at line 2: @approval("require") asks nobody',
    );
  });

  it("a caller without policy:admin cannot read or change the tenant's policies", async () => {
    const response = await stack.invoke(
      userEvent({ sub: "usr_w", tenantId: "tenant_pol_fail", scope: "billing:write" }, "GET", "/v1/policies"),
    );
    expect(response.statusCode).toBe(403);
  });
});
