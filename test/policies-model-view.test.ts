/**
 * What a tenant's running totals may reach (docs/policies.md `context.totals`): the policy decision that
 * saw them is audit, kept in the stored tool result's `metadata.policy`; the model reads the tool
 * result's model view (`{ status, data, error }`, shared/agent/result.ts `toolMessage`), so a second
 * user's model never reads the tenant's totals, which count the first user's invoices, and an answer
 * quoting them is not grounded. DynamoDB Local, the real Cedar engine and handler, the local model server.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RunRecordSchema } from "../functions/api/contract.js";
import type { RecordedRequest, ScriptedReply } from "../local/model-server.js";
import { type McpStack, startMcpStack } from "./support/mcp.js";

let stack: McpStack;
beforeAll(async () => {
  stack = await startMcpStack();
}, 120_000);
afterAll(async () => stack?.stop());

const TENANT = "tenant_pol_view";
const user = (sub: string, scope = "billing:read billing:write") => ({ sub, tenant_id: TENANT, scope });
/** A cap no test reaches: it makes the decision read the running totals, so they are in its audit. */
const POLICIES =
  '@id("base")\npermit (principal, action, resource);\n' +
  '@id("daily-cap")\nforbid (principal, action == Action::"recordInvoice", resource) when { context.totals.tenantDay.grossMinor > 10000000 };';
const ANSWER = "Recorded 120.00 GBP. The tenant's invoices today come to 72000 minor units.";

/** User B's model: calculateTax of 100.00 GBP, recordInvoice of its quote, then {@link ANSWER}. */
function userB(request: RecordedRequest): ScriptedReply {
  const tool = request.messages.filter((message) => message.role === "tool");
  if (tool.length === 0) {
    const args = { amount: "100.00", currency: "GBP", jurisdiction: "GB" };
    return { toolCalls: [{ id: "b1", name: "calculateTax", arguments: JSON.stringify(args) }] };
  }
  if (tool.length === 1) {
    const quoteId = (JSON.parse(String(tool[0]?.content)) as { data: { quoteId: string } }).data.quoteId;
    const args = { clientName: "B's client", quoteId, clientReference: null, description: null };
    return { toolCalls: [{ id: "b2", name: "recordInvoice", arguments: JSON.stringify(args) }] };
  }
  return { content: ANSWER };
}

/** A synchronous run of `prompt` as `sub`; the run record afterwards. */
async function run(sub: string, prompt: string) {
  const started = await stack.api("/v1/runs", user(sub), {
    method: "POST",
    body: JSON.stringify({ prompt }),
  });
  expect(started.status, await started.clone().text()).toBe(200);
  const { runId } = (await started.json()) as { runId: string };
  return RunRecordSchema.parse(await (await stack.api(`/v1/runs/${runId}`, user(sub))).json());
}

describe("a tenant's running totals and the model", () => {
  it("user B's model reads no running totals and none of user A's figures; an answer quoting them is ungrounded", async () => {
    const put = await stack.api("/v1/policies", user("usr_admin", "policy:admin"), {
      method: "PUT",
      headers: { "if-none-match": "*" },
      body: JSON.stringify({ policies: POLICIES, mode: "enforce" }),
    });
    expect(put.status, await put.clone().text()).toBe(200);

    // User A records 500.00 GBP + 20 % VAT = 600.00 GBP (60000 minor units), through the planner.
    const a = await run("usr_view_a", "Calculate tax on 500 GBP for a client in the UK and record it");
    expect(a.status).toBe("completed");
    const aInvoice = a.steps.flatMap((step) => step.toolCalls).find((c) => c.name === "recordInvoice");
    expect(aInvoice?.result.status).toBe("success");

    stack.stack.model.respond(userB);
    const from = stack.stack.model.requests.length;
    const b = await run("usr_view_b", "Calculate tax on 100 GBP for a client in the UK and record it");
    stack.stack.model.usePlanner();
    expect(b.status).toBe("completed");
    expect(b.answer).toBe(ANSWER);

    // The audit keeps the decision and the totals it saw: A's 600.00 and B's 120.00 in the tenant's day.
    const bInvoice = b.steps.flatMap((step) => step.toolCalls).find((c) => c.name === "recordInvoice");
    expect(bInvoice?.result).toMatchObject({
      status: "success",
      metadata: {
        toolName: "recordInvoice",
        policy: {
          decision: "permit",
          policyIds: ["base"],
          totals: {
            tenantDay: { count: 2, grossMinor: 72000 },
            userDay: { count: 1, grossMinor: 12000 },
          },
        },
      },
    });

    // Every request of B's run: its answer's request saw both tool results, and none of the totals.
    const requests = stack.stack.model.requests.slice(from);
    expect(requests).toHaveLength(3);
    const sent = JSON.stringify(requests.map((request) => request.messages));
    expect(sent).toContain("B's client");
    // (The system prompt's own "totals" is a word of its instructions, so the key names are looked for.)
    for (const leaked of [
      "tenantDay",
      "userDay",
      "grossMinor",
      "policyIds",
      "72000",
      "60000",
      "600.00",
      "usr_view_a",
    ])
      expect(sent, leaked).not.toContain(leaked);
    expect(
      requests[2]?.messages
        .filter((message) => message.role === "tool")
        .map((message) => Object.keys(JSON.parse(String(message.content)))),
    ).toEqual([
      ["status", "data", "error"],
      ["status", "data", "error"],
    ]);

    // A total B's model could only have made up (or read from the audit) is not grounded.
    expect(b.grounding).toMatchObject({
      mode: "report",
      action: "reported",
      ungrounded: [{ text: "72000", value: "72000" }],
    });
  }, 60_000);
});
