/**
 * `npm run deploy [-- cdk deploy options]`: `cdk deploy --strict` with the stack's outputs written to
 * `.boundloop/cdk-outputs.json`, then the API URL and the commands to run next (local/next-steps.ts),
 * so a first deploy ends with what to type. Exits with cdk's status.
 */
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { formatNextSteps, type StackOutputs } from "./next-steps.js";

const outputsFile = fileURLToPath(new URL("../.boundloop/cdk-outputs.json", import.meta.url));
const deploy = spawnSync(
  "npx",
  ["cdk", "deploy", "--strict", "--outputs-file", outputsFile, ...process.argv.slice(2)],
  { stdio: "inherit" },
);
if (deploy.status !== 0) process.exit(deploy.status ?? 1);
const stacks = JSON.parse(readFileSync(outputsFile, "utf8")) as Record<string, StackOutputs>;
for (const outputs of Object.values(stacks)) {
  if (outputs.ApiUrl) process.stdout.write(formatNextSteps(outputs));
}
