import { randomUUID } from "node:crypto";
import { describe, expect, inject, it } from "vitest";
import { runScript } from "./support/scripts.js";

// `npm start -- --async` as a process (tsx local/start.ts --async) on the suite's DynamoDB (fresh table)
// with the model server the script starts itself.
describe("npm start -- --async", () => {
  it("prints the 202, the polls and the seed scenario's outcome, with one invoice", {
    timeout: 90_000,
  }, async () => {
    const { code, stdout } = await runScript("tsx", ["local/start.ts", "--async"], {
      DYNAMODB_ENDPOINT: inject("dynamoEndpoint"),
      TABLE_NAME: `test-start-${randomUUID()}`,
    });
    expect(code).toBe(0);
    expect(stdout).toMatch(/HTTP 202 Accepted: run run_[0-9a-f-]{36} is running; Location: \/v1\/runs\/run_/);
    expect(stdout).toMatch(/poll 1 \(0\.0 s\): HTTP 200, status running, cycles \d/);
    expect(stdout).toMatch(/poll \d+ \([\d.]+ s\): HTTP 200, status completed, cycles 3/);
    // One line per change of status or cycles, never the same line twice in a row.
    const polls = stdout
      .split("\n")
      .filter((line) => line.startsWith("poll "))
      .map((line) => line.replace(/^poll \d+ \([\d.]+ s\): /, ""));
    expect(polls.filter((line, i) => line === polls[i - 1])).toEqual([]);
    expect(stdout).toMatch(/calculateTax +success .*tax amount 300\.00, gross total 1800\.00, currency GBP/);
    expect(stdout).toMatch(/calculateTax +business_error +UNSUPPORTED_JURISDICTION/);
    expect(stdout).toMatch(/recordInvoice +success/);
    expect(stdout).toContain("Ledger for tenant_uk_01 (1 invoice):");
  });
});
