/**
 * `--policies <file>` of `npm start` and `npm run dev`: a Cedar policy file as the default policy set
 * (POLICIES, docs/policies.md), checked before anything starts against the schema generated from the tool
 * registry, so a set that does not validate stops the command with the policy and line.
 */
import { approvalPolicyIdsSync, describeIssues, policyIssuesSync } from "../shared/policies/check.js";
import { readUserFile } from "./user-path.js";

/** A policy file that cannot be used: the message names the file, and the policy and line when it is invalid. */
export class PolicyFileError extends Error {}

/**
 * Reads `path` (relative to the directory npm was run in: local/user-path.ts) and checks it as a default set.
 * @returns the file's text (to set as POLICIES)
 * @throws PolicyFileError when it cannot be read, is empty, or does not validate
 */
export async function readPolicyFile(path: string): Promise<string> {
  let text: string;
  try {
    text = await readUserFile(path, `--policies ${path}`);
  } catch (error) {
    throw new PolicyFileError((error as Error).message);
  }
  if (text.trim() === "") throw new PolicyFileError(`--policies ${path}: the file is empty.`);
  const issues = policyIssuesSync(text);
  if (issues.length > 0) {
    throw new PolicyFileError(
      `--policies ${path}: not a valid policy set: ${describeIssues(issues)} (docs/policies.md).`,
    );
  }
  return text;
}

/**
 * `npm start -- --policies <file> --approval`: the file's approval policies (permits annotated
 * `@approval("required")`), which the run's pause comes from instead of APPROVAL_RULES (the two are
 * not set together).
 * @throws PolicyFileError when the file has none: no run would pause, so `--approval` has nothing to show
 */
export function approvalPoliciesOf(path: string, text: string): string[] {
  const ids = approvalPolicyIdsSync(text);
  if (ids.length === 0) {
    throw new PolicyFileError(
      `--approval: ${path} has no approval policy (a permit annotated @approval("required")), so no run would pause; ` +
        "add one (examples/policies.cedar's gbp-approval catches the seed invoice) or drop --approval (docs/policies.md).",
    );
  }
  return ids;
}
