import type { PausingApprovalGate } from "../agent/approval.js";
import type { StepRunner } from "../agent/step.js";
import type { CarriedStep } from "../durable/executions.js";

/**
 * The parts of a synchronous run that let it pause for approval (docs/approvals.md, "A pause inside a
 * synchronous request"): a {@link StepRunner} that runs each step inline and records its result, and a
 * gate that answers `paused` (a request cannot wait for a person). The recorded steps become the durable
 * execution's `carried` steps (shared/runs/handover.ts): the runner returns them instead of calling the
 * model or the tools again. Whatever asks for the approval (APPROVAL_RULES, or a policy of the default
 * or the tenant's set annotated `@approval("required")`), the pause is the same.
 */
export function pausingParts(): { step: StepRunner; approve: PausingApprovalGate; carried: CarriedStep[] } {
  const carried: CarriedStep[] = [];
  return {
    carried,
    step: async (step, fn) => {
      const result = await fn();
      carried.push({ name: step.name, result });
      return result;
    },
    approve: async () => ({ decision: "paused" }),
  };
}
