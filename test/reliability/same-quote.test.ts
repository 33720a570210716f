/**
 * The fix the storm found: a retried request (same Idempotency-Key, so the same run scope) asking
 * calculateTax for the same thing gets the same quoteId, so its recordInvoice call has the same tool
 * idempotency key and replays the first invoice. Before, each retry minted a new random quote and the
 * retry after a crash (or after a 502 released the key) wrote a second invoice.
 */
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { dispatchToolCall } from "../../shared/agent/dispatcher.js";
import type { ToolResult } from "../../shared/agent/result.js";
import { QUOTE_ID_PATTERN } from "../../shared/store/quotes.js";
import { accountingTools } from "../../shared/tools/registry.js";
import { tenantKeys } from "../support/reliability.js";
import { startTestStack, type TestStack } from "../support/stack.js";

let stack: TestStack;
beforeAll(async () => {
  stack = await startTestStack();
});
afterAll(async () => {
  await stack?.stop();
});

const args = JSON.stringify({ amount: "250.00", currency: "GBP", jurisdiction: "GB", taxPointDate: null });

async function quote(tenantId: string, runScope: string, tools = stack.deps.tools): Promise<ToolResult> {
  return dispatchToolCall(
    { id: `call_${randomUUID()}`, name: "calculateTax", arguments: args },
    tools,
    { userId: "usr_q", tenantId, permissions: [] },
    { runId: `run_${randomUUID()}`, runScope, occurrence: 0, signal: new AbortController().signal },
  );
}
const quoteIdOf = (result: ToolResult) => (result.data as { quoteId: string }).quoteId;

describe("calculateTax under a retried run scope", () => {
  it("gives the same quoteId to the same operation, and a new one to another scope", async () => {
    const tenantId = `tenant_q_${randomUUID().slice(0, 8)}`;
    const first = await quote(tenantId, "key-1");
    const again = await quote(tenantId, "key-1");
    const other = await quote(tenantId, "key-2");
    expect([first.status, again.status, other.status]).toEqual(["success", "success", "success"]);
    expect(quoteIdOf(first)).toMatch(QUOTE_ID_PATTERN);
    expect(quoteIdOf(again)).toBe(quoteIdOf(first));
    expect(again.data).toEqual(first.data);
    expect(quoteIdOf(other)).not.toBe(quoteIdOf(first));
    expect(await tenantKeys(stack.deps.ddb, stack.config.table.name, tenantId, ["QUOTE#"])).toHaveLength(2);
    // Another tenant with the same scope gets its own quote.
    const elsewhere = await quote(`${tenantId}_b`, "key-1");
    expect(quoteIdOf(elsewhere)).not.toBe(quoteIdOf(first));
  });

  it("replaces an expired quote under the same id with a live one", async () => {
    const tenantId = `tenant_q_${randomUUID().slice(0, 8)}`;
    const past = accountingTools({
      ledger: stack.deps.ledger,
      quotes: stack.deps.quotes,
      quoteTtlSeconds: 60,
      clock: () => new Date(Date.now() - 3_600_000),
    });
    const stale = await quote(tenantId, "key-1", past);
    const fresh = await quote(tenantId, "key-1");
    expect(quoteIdOf(fresh)).toBe(quoteIdOf(stale));
    const expiresAt = (result: ToolResult) => Date.parse((result.data as { expiresAt: string }).expiresAt);
    expect(expiresAt(stale)).toBeLessThan(Date.now());
    expect(expiresAt(fresh)).toBeGreaterThan(Date.now());
  });
});
