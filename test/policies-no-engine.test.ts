/**
 * A container whose tenants have no policy set (and no POLICIES default) never loads the Cedar engine:
 * runs with tool calls over REST and MCP's tools/list and tools/call decide every call without it
 * (shared/cedar/wasm.ts). The first tenant that stores a set loads it.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RunRecordSchema } from "../functions/api/contract.js";
import { cedarLoadStarted } from "../shared/cedar/wasm.js";
import { type McpStack, startMcpStack } from "./support/mcp.js";

let stack: McpStack;
beforeAll(async () => {
  stack = await startMcpStack();
}, 120_000);
afterAll(async () => stack?.stop());

const tenant = "tenant_no_policies";
const writer = { sub: "usr_writer", tenant_id: tenant, scope: "billing:read billing:write" };

describe("a tenant without a policy set", () => {
  it("runs tool calls over REST and MCP without loading the Cedar module; a stored set loads it", async () => {
    // Two runs: the second finds the tenant's (empty) sets cached when its tools are offered.
    for (const amount of ["100", "200"]) {
      const started = await stack.api("/v1/runs", writer, {
        method: "POST",
        body: JSON.stringify({
          prompt: `Calculate tax on ${amount} GBP for a client in the UK and record it`,
        }),
      });
      expect(started.status).toBe(200);
      const { runId } = (await started.json()) as { runId: string };
      const record = RunRecordSchema.parse(await (await stack.api(`/v1/runs/${runId}`, writer)).json());
      expect(record.status).toBe("completed");
      const results = record.steps.flatMap((step) => step.toolCalls.map((call) => call.result));
      expect(results.map((result) => [result.status, result.metadata.policy])).toEqual([
        ["success", undefined],
        ["success", undefined],
      ]);
    }

    const client = await stack.connect(await stack.token(writer));
    const listed = await client.listTools();
    expect(listed.tools.map((tool) => tool.name)).toContain("calculateTax");
    const called = await client.callTool({
      name: "calculateTax",
      arguments: { amount: "100.00", currency: "GBP", jurisdiction: "GB" },
    });
    expect(called.isError).toBeFalsy();
    expect(cedarLoadStarted()).toBe(false);

    const stored = await stack.api(
      "/v1/policies",
      { ...writer, scope: "policy:admin" },
      {
        method: "PUT",
        headers: { "if-none-match": "*" },
        body: JSON.stringify({ policies: "permit (principal, action, resource);", mode: "enforce" }),
      },
    );
    expect(stored.status).toBe(200);
    expect(cedarLoadStarted()).toBe(true);
  });
});
