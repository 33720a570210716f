import { randomUUID } from "node:crypto";
import { describe, expect, inject, it } from "vitest";
import { runScript } from "./support/scripts.js";

// `npm start -- --bedrock` as a process (tsx local/start.ts --bedrock): the model is called as a Bedrock
// deploy calls it, through the Bedrock stand-in the script starts, which verifies every key it is sent.
describe("npm start -- --bedrock", () => {
  it("runs the seed scenario through the Bedrock stand-in with keys made from the environment's credentials", {
    timeout: 90_000,
  }, async () => {
    const { code, stdout, stderr } = await runScript("tsx", ["local/start.ts", "--bedrock"], {
      DYNAMODB_ENDPOINT: inject("dynamoEndpoint"),
      TABLE_NAME: `test-start-${randomUUID()}`,
      AWS_REGION: "eu-west-2",
      BEDROCK_MODEL_ID: "qwen.qwen3-32b-v1:0",
    });
    expect(code, stderr).toBe(0);
    expect(stderr).toMatch(
      /model: started the Bedrock stand-in for qwen\.qwen3-32b-v1:0 in eu-west-2 on port \d+ at http:\/\/127\.0\.0\.1:\d+\/openai\/v1/,
    );
    expect(stdout).toMatch(/Run run_[0-9a-f-]{36}: completed after 3 cycle\(s\)/);
    expect(stdout).toMatch(/recordInvoice +success/);
    expect(stdout).toContain("Ledger for tenant_uk_01 (1 invoice):");
    expect(`${stdout}${stderr}`).not.toContain("bedrock-api-key-");
  });
});
