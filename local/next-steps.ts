/**
 * What `npm run deploy` prints last (local/deploy.ts): the API URL and the commands to run next, from
 * the stack's outputs (infra/stack.ts: ApiUrl, and with the built-in pool NextUserCommand and
 * SmokeCommand).
 */

/** The stack outputs `cdk deploy --outputs-file` wrote for one stack (output key → value). */
export type StackOutputs = Record<string, string | undefined>;

/**
 * The closing lines of a deploy: the API URL; with the built-in pool, the user command and the smoke
 * command; with your own issuer, the smoke command with a token from that issuer.
 * @throws Error when the outputs have no ApiUrl (not a boundloop stack)
 */
export function formatNextSteps(outputs: StackOutputs): string {
  const url = outputs.ApiUrl;
  if (!url) throw new Error("The stack outputs have no ApiUrl.");
  const lines = ["", `API URL: ${url}`, "", "Next:"];
  if (outputs.NextUserCommand && outputs.SmokeCommand) {
    lines.push(
      `  1. ${outputs.NextUserCommand}`,
      `  2. ${outputs.SmokeCommand}`,
      "     (the token command asks for the temporary password that step 1 printed, then for a new one)",
    );
  } else {
    lines.push(
      `  BOUNDLOOP_TOKEN="<an access token from ${outputs.JwtIssuer ?? "your issuer"}>" npm run smoke -- --url ${url}`,
    );
  }
  return `${lines.join("\n")}\n`;
}
