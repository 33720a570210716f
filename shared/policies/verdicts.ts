/**
 * A set's verdict on one call, read from the engine's answer (forbid, approval or permit, with the
 * determining policies), and the refusal a forbid becomes: the decision service's pure parts
 * (shared/policies/decisions.ts).
 */
import type { PreparedToolCall } from "../agent/dispatcher.js";
import { notStartedResult } from "../agent/dispatcher.js";
import type { PolicyAudit, ToolResult } from "../agent/result.js";
import type { CedarAnswer } from "../cedar/policy-set.js";
import type { ActiveSet } from "./sets.js";

/** One set's verdict on a call: the decision and its determining policies. */
export interface Verdict {
  decision: "permit" | "forbid" | "approval";
  policyIds: string[];
}

/**
 * One set's verdict from its answer: deny → forbid (the satisfied forbids; none: no permit matched);
 * allow → approval when a determining permit is annotated `@approval("required")` (those are the ids),
 * else permit.
 * @throws Error when a policy of the enforced set errored during evaluation (fail closed: an erroring
 *   forbid would otherwise be skipped); a shadow set's errors only count as not satisfied
 */
export function verdictOf(active: ActiveSet, answer: CedarAnswer, shadow: boolean): Verdict {
  if (answer.errors.length > 0 && !shadow) {
    throw new Error(`policies ${answer.errors.join(", ")} errored during evaluation`);
  }
  if (answer.decision === "deny") return { decision: "forbid", policyIds: answer.reasons };
  const { policies, positions } = active.set;
  const approvals = answer.reasons.filter(
    (id) => policies[positions.get(id) ?? -1]?.annotations.approval === "required",
  );
  return approvals.length > 0
    ? { decision: "approval", policyIds: approvals }
    : { decision: "permit", policyIds: answer.reasons };
}

/** permission_denied POLICY_DENIED: the determining policies, nothing ran. */
export function denied(prepared: PreparedToolCall, audit: PolicyAudit): ToolResult {
  const { policyIds } = audit;
  const why =
    policyIds.length > 0
      ? `the tenant's policies forbid it (${policyIds.join(", ")})`
      : "no policy of the tenant permits it";
  return notStartedResult(prepared.call, "permission_denied", {
    code: "POLICY_DENIED",
    message: `${prepared.tool.name} did not run: ${why}. Tell the user; calling it again with the same facts gets the same answer.`,
    details: { policyIds, decision: "forbid" },
    retryable: false,
  });
}
