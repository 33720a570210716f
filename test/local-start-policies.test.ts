import { randomUUID } from "node:crypto";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, inject, it } from "vitest";
import { runScript } from "./support/scripts.js";

// `npm start -- --policies <file>` as a process on the suite's DynamoDB (fresh table).
describe("npm start -- --policies <file>", () => {
  it("runs the seed scenario under the file's policies: the invoice the cap forbids is refused, named", {
    timeout: 90_000,
  }, async () => {
    const dir = mkdtempSync(join(tmpdir(), "boundloop-policies-"));
    const file = join(dir, "cap.cedar");
    writeFileSync(
      file,
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

  it("refuses a file that does not validate before starting anything, naming the policy and line", {
    timeout: 60_000,
  }, async () => {
    const dir = mkdtempSync(join(tmpdir(), "boundloop-policies-"));
    const file = join(dir, "typo.cedar");
    writeFileSync(
      file,
      'permit (principal, action, resource);\n@id("typo")\nforbid (principal, action, resource) when { context.facts.grosMinor > 1 };\n',
    );
    const { code, stdout, stderr } = await runScript("tsx", ["local/start.ts", "--policies", file], {});
    expect(code).toBe(2);
    expect(stderr).toMatch(
      /--policies .*typo\.cedar: not a valid policy set: line 3, column \d+, policy "typo": .*grosMinor/,
    );
    expect(stdout).not.toContain("Run run_");
  });
});
