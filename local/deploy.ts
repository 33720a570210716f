/**
 * `npm run deploy [-- cdk deploy options]`: first the checks of local/deploy-preflight.ts (Region,
 * credentials, one call to the account; a few seconds, each failure one line with the fix, exit 1),
 * then `cdk deploy --strict` with the stack's outputs written to `.boundloop/cdk-outputs.json`, then the
 * API URL and the commands to run next (local/next-steps.ts), so a first deploy ends with what to type.
 * Exits with cdk's status.
 */
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { bedrockModelOf, deployPreflight, readCdkArgs } from "./deploy-preflight.js";
import { formatNextSteps, type StackOutputs } from "./next-steps.js";

async function main(argv: string[]): Promise<number> {
  const { context, profile } = readCdkArgs(argv);
  if (profile) process.env.AWS_PROFILE = profile;
  const checked = await deployPreflight({ bedrockModelId: bedrockModelOf(context) });
  if (!checked.ok) {
    process.stderr.write(`deploy: ${checked.problem}\n`);
    return 1;
  }
  for (const line of checked.lines) process.stderr.write(`${line}\n`);
  const outputsFile = fileURLToPath(new URL("../.boundloop/cdk-outputs.json", import.meta.url));
  const deploy = spawnSync("npx", ["cdk", "deploy", "--strict", "--outputs-file", outputsFile, ...argv], {
    stdio: "inherit",
  });
  if (deploy.status !== 0) return deploy.status ?? 1;
  const stacks = JSON.parse(readFileSync(outputsFile, "utf8")) as Record<string, StackOutputs>;
  for (const outputs of Object.values(stacks)) {
    if (outputs.ApiUrl) process.stdout.write(formatNextSteps(outputs));
  }
  return 0;
}

// Node 20 is supported here (docs/local-workflow.md); the AWS SDK's notice about its 2027 releases would
// bury the one-line answers of the checks, as the other local scripts know.
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= "true";
process.exitCode = await main(process.argv.slice(2));
