import { randomUUID } from "node:crypto";
import { describe, expect, inject, it } from "vitest";
import { runScript } from "./support/scripts.js";
import { SEED_RUN_EVENT_TYPES } from "./support/streaming.js";

/** The events `--watch` printed (`  [seq] type …` lines), as [seq, type]. */
const printedEvents = (stdout: string) =>
  stdout
    .split("\n")
    .map((line) => /^ {2}\[(\d+)\] (\S+)/.exec(line))
    .filter((match) => match !== null)
    .map((match) => [Number(match[1]), match[2]]);

// `npm start -- --watch` as a process (tsx local/start.ts --watch) on the suite's DynamoDB (fresh table)
// with the model server the script starts itself: the run goes through the streaming entry.
describe("npm start -- --watch", () => {
  it("prints the seed run's events in order, then the same outcome and ledger as without --watch", {
    timeout: 90_000,
  }, async () => {
    const { code, stdout } = await runScript("tsx", ["local/start.ts", "--watch"], {
      DYNAMODB_ENDPOINT: inject("dynamoEndpoint"),
      TABLE_NAME: `test-watch-${randomUUID()}`,
    });
    expect(code).toBe(0);
    expect(printedEvents(stdout)).toEqual(SEED_RUN_EVENT_TYPES.map((type, i) => [i + 1, type]));
    expect(stdout).toMatch(
      /\[6\] tool\.call\.finished +cycle 1 calculateTax business_error UNSUPPORTED_JURISDICTION/,
    );
    expect(stdout).toMatch(
      /\[9\] tool\.call\.finished +cycle 2 recordInvoice success, \d+ ms, key tk_[0-9a-f]{64}/,
    );
    // The events come first, then the report as without --watch.
    expect(stdout.indexOf("[11] run.finished")).toBeLessThan(stdout.indexOf("after 3 cycle(s)"));
    expect(stdout).toMatch(/Run run_[0-9a-f-]{36}: completed after 3 cycle\(s\)/);
    expect(stdout).toMatch(/calculateTax +success .*tax amount 300\.00, gross total 1800\.00, currency GBP/);
    expect(stdout).toContain("Ledger for tenant_uk_01 (1 invoice):");
  });

  it("--approval --watch streams the run live up to its pause, then follows it (GET …/events) past the approval", {
    timeout: 90_000,
  }, async () => {
    const { code, stdout } = await runScript("tsx", ["local/start.ts", "--approval", "--watch"], {
      DYNAMODB_ENDPOINT: inject("dynamoEndpoint"),
      TABLE_NAME: `test-watch-${randomUUID()}`,
    });
    expect(code, stdout).toBe(0);
    // The request itself is streamed: the pause is printed as it happens, before anyone approves it.
    const order = [
      "Watching the run (POST /v1/runs, Accept: text/event-stream):",
      "[9] approval.requested",
      "is awaiting_approval; Location: /v1/runs/run_",
      "Pending approval apr_",
      "Approval by usr_approver_01: HTTP 200",
      "/events, Last-Event-ID 9):",
      "[10] approval.decided",
      "[13] run.finished",
    ].map((text) => stdout.indexOf(text));
    expect(order, stdout).not.toContain(-1);
    expect(order).toEqual([...order].sort((a, b) => a - b));
    expect(stdout).toMatch(
      /Watching the run \(GET \/v1\/runs\/run_[0-9a-f-]{36}\/events, Last-Event-ID 9\):/,
    );
    expect(printedEvents(stdout)).toEqual([
      [1, "run.started"],
      [2, "model.call.finished"],
      [3, "tool.call.started"],
      [4, "tool.call.started"],
      [5, "tool.call.finished"],
      [6, "tool.call.finished"],
      [7, "model.call.finished"],
      [8, "tool.call.started"],
      [9, "approval.requested"],
      [10, "approval.decided"],
      [11, "tool.call.finished"],
      [12, "model.call.finished"],
      [13, "run.finished"],
    ]);
    expect(stdout).toMatch(/\[10\] approval\.decided +apr_[0-9a-f]+ approved by usr_approver_01/);
    // The events, then one poll reads the outcome the run ended with.
    expect(stdout.indexOf("[13] run.finished")).toBeLessThan(stdout.indexOf("poll 1"));
    expect(stdout).toMatch(/poll 1 \([\d.]+ s\): HTTP 200, status completed, cycles 3/);
    expect(stdout).toMatch(/Run run_[0-9a-f-]{36}: completed after 3 cycle\(s\)/);
    expect(stdout).toContain("Ledger for tenant_uk_01 (1 invoice):");
  });
});
