import { randomUUID } from "node:crypto";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, inject, it } from "vitest";
import { runScript } from "./support/scripts.js";

/** A policy file `name` holding `text`, in a fresh temporary directory: its path. */
function policyFile(name: string, text: string): string {
  const file = join(mkdtempSync(join(tmpdir(), "boundloop-policies-")), name);
  writeFileSync(file, text);
  return file;
}

/** A policy file that does not validate: line 3 names a fact no tool vouches for (grosMinor). */
const TYPO_FILE = policyFile(
  "typo.cedar",
  'permit (principal, action, resource);\n@id("typo")\nforbid (principal, action, resource) when { context.facts.grosMinor > 1 };\n',
);
let typoStart: ReturnType<typeof runScript> | undefined;
/**
 * `npm start -- --policies <TYPO_FILE>`, run once for the two tests that read it (npm start's refusal,
 * and npm run dev's, compared with it).
 */
const startWithTypo = () => {
  typoStart ??= runScript("tsx", ["local/start.ts", "--policies", TYPO_FILE], {});
  return typoStart;
};

// `npm start -- --policies <file>` as a process on the suite's DynamoDB (fresh table).
describe("npm start -- --policies <file>", () => {
  it("runs the seed scenario under the file's policies: the invoice the cap forbids is refused, named", {
    timeout: 90_000,
  }, async () => {
    const file = policyFile(
      "cap.cedar",
      '@id("base")\npermit (principal, action, resource);\n@id("cap-1000-gbp")\nforbid (principal, action == Action::"recordInvoice", resource)\nwhen { context.facts.currency == "GBP" && context.facts.grossMinor > 100000 };\n',
    );
    const { code, stdout } = await runScript("tsx", ["local/start.ts", "--policies", file], {
      DYNAMODB_ENDPOINT: inject("dynamoEndpoint"),
      TABLE_NAME: `test-start-${randomUUID()}`,
    });
    expect(code).toBe(0);
    expect(stdout).toMatch(/calculateTax +success/);
    expect(stdout).toMatch(/recordInvoice +permission_denied +POLICY_DENIED/);
    expect(stdout).toContain("Ledger for tenant_uk_01 (0 invoices)");
  });

  it("--approval with a policy file runs the file's approval path: the seed invoice reaches gbp-approval, a second user approves it", {
    timeout: 90_000,
  }, async () => {
    const { code, stdout, stderr } = await runScript(
      "tsx",
      ["local/start.ts", "--policies", "examples/policies.cedar", "--approval"],
      { DYNAMODB_ENDPOINT: inject("dynamoEndpoint"), TABLE_NAME: `test-start-${randomUUID()}` },
    );
    expect(code, stdout + stderr).toBe(0);
    expect(stdout).toMatch(/is awaiting_approval; Location: \/v1\/runs\/run_/);
    expect(stdout).toMatch(
      /Pending approval apr_[0-9a-f]+: recordInvoice requested by usr_9918, preview subtotal 1500\.00, tax 300\.00, gross 1800\.00 GBP \(policies gbp-approval\)/,
    );
    expect(stdout).toContain("Approval by usr_approver_01: HTTP 200");
    expect(stdout).toMatch(/recordInvoice +success/);
    expect(stdout).toContain("Ledger for tenant_uk_01 (1 invoice):");
  });

  it("--approval with a policy file that asks no approval says so and starts nothing", {
    timeout: 60_000,
  }, async () => {
    const file = policyFile("plain.cedar", '@id("base")\npermit (principal, action, resource);\n');
    const { code, stdout, stderr } = await runScript(
      "tsx",
      ["local/start.ts", "--policies", file, "--approval"],
      {},
    );
    expect(code).toBe(2);
    expect(stderr).toContain(
      `--approval: ${file} has no approval policy (a permit annotated @approval("required")), so no run would pause;`,
    );
    expect(stdout).not.toContain("Run run_");
  });

  it("--async stops at a pause nobody here approves: one hint how to approve it, exit 1, no polling for hours", {
    timeout: 90_000,
  }, async () => {
    const { code, stdout } = await runScript(
      "tsx",
      ["local/start.ts", "--policies", "examples/policies.cedar", "--async"],
      { DYNAMODB_ENDPOINT: inject("dynamoEndpoint"), TABLE_NAME: `test-start-${randomUUID()}` },
    );
    expect(code, stdout).toBe(1);
    expect(stdout).toMatch(/poll \d+ \([\d.]+ s\): HTTP 200, status awaiting_approval/);
    const hint = stdout.match(
      /Run run_[0-9a-f-]{36} awaits approval apr_[0-9a-f]+ \(recordInvoice, policies gbp-approval\)/g,
    );
    expect(hint, stdout).toHaveLength(1);
    expect(stdout).toContain("npm start --async does not approve it");
    expect(stdout).toContain("--approval");
    expect(stdout).not.toContain("Ledger for tenant_uk_01");
  });

  it("refuses a file that does not validate before starting anything, naming the policy and line", {
    timeout: 60_000,
  }, async () => {
    const { code, stdout, stderr } = await startWithTypo();
    expect(code).toBe(2);
    expect(stderr).toMatch(
      /--policies .*typo\.cedar: not a valid policy set: line 3, column \d+, policy "typo": .*grosMinor/,
    );
    expect(stdout).not.toContain("Run run_");
  });
});

// The same bad file given to `npm run dev` is the same bad command line: exit 2, the same sentence.
describe("npm run dev -- --policies <file>", () => {
  it("refuses a file that does not validate as npm start does: exit 2, the same message, nothing started", {
    timeout: 60_000,
  }, async () => {
    // The file npm start refused above, and that refusal (one process of npm start for both tests).
    const [start, dev] = await Promise.all([
      startWithTypo(),
      runScript("tsx", ["local/dev.ts", "--port", "0", "--policies", TYPO_FILE], {}),
    ]);
    expect([start.code, dev.code]).toEqual([2, 2]);
    const startLine = start.stderr.split("\n")[0] ?? "";
    expect(startLine).toMatch(/^start: --policies .*typo\.cedar: not a valid policy set: line 3, /);
    expect(dev.stderr.split("\n")[0]).toBe(startLine.replace(/^start: /, "dev: "));
    expect(dev.stderr).not.toMatch(/dynamodb: started|model: started|listening/);
    expect(dev.stdout).toBe("");
  });
});
