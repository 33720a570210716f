/**
 * The policy decision of a tool call, as the engine sees it: a port (the application's policy service,
 * shared/policies/decisions.ts, implements it) and the few steps the loop and MCP share around it. The
 * dispatcher's chain is unknown tool → permission → parse → zod (prepareToolCall) → **decision** →
 * approval → execute (runPreparedCall); a refusal is a tool result, never an exception. Its explanation
 * is `PolicyAudit` (shared/agent/result.ts).
 */
import type { SecurityContext } from "../identity.js";
import {
  type DispatchContext,
  notStartedResult,
  type PreparedToolCall,
  runPreparedCall,
} from "./dispatcher.js";
import type { PolicyAudit, ToolResult } from "./result.js";
import type { ApprovalPreview, ToolDefinition } from "./tool.js";

/**
 * What the policy service decided for one call:
 * - `run`: the call runs; `settle` gets its result (keeps or releases its reservation; never throws)
 * - `approval`: a person must approve it first; `preview` holds the backend's numbers and policy ids
 * - `refused`: the call does not run; `result` is its tool result (POLICY_DENIED, or a fail-closed code)
 */
export type CallDecision =
  | { kind: "run"; audit?: PolicyAudit; settle?: (result: ToolResult) => Promise<void> }
  | { kind: "approval"; audit: PolicyAudit; preview: ApprovalPreview }
  | { kind: "refused"; result: ToolResult };

/**
 * One call to decide: the prepared (validated) call, the caller, the run and the call's operation key
 * (a reservation's key when the tool has no business key), `approved` when a person approved it (an
 * approval policy then permits), and the run's deadline signal.
 */
export interface DecisionRequest {
  prepared: PreparedToolCall;
  security: SecurityContext;
  runId: string;
  operationKey: () => string;
  approved: boolean;
  signal: AbortSignal;
}

/**
 * The port of the policy service (docs/policies.md).
 * - `offered`: of `tools` (already filtered by permission), those some request could be permitted for
 *   this caller; never hides a tool a policy could permit. With `wait` false it does not wait for the
 *   engine or the tenant's set to load (it starts loading them and offers every tool meanwhile).
 * - `decide`: one call's decision. Never throws: a failure of the engine or a store is a refusal.
 */
export interface ToolCallDecider {
  offered(
    tools: ToolDefinition[],
    security: SecurityContext,
    options: { wait: boolean },
  ): Promise<ToolDefinition[]>;
  decide(request: DecisionRequest): Promise<CallDecision>;
}

/** `result` with the decision's explanation in its metadata. */
export function withPolicy(result: ToolResult, audit: PolicyAudit | undefined): ToolResult {
  return audit ? { ...result, metadata: { ...result.metadata, policy: audit } } : result;
}

/**
 * Asks `decider` (none: the call runs as before policies) and never throws: a decider that throws
 * anyway refuses the call as the policy service's own failures do (fatal_error POLICY_CHECK_FAILED).
 */
export async function decideCall(
  decider: ToolCallDecider | undefined,
  request: DecisionRequest,
): Promise<CallDecision> {
  if (!decider) return { kind: "run" };
  try {
    return await decider.decide(request);
  } catch {
    return { kind: "refused", result: policyCheckFailed(request.prepared) };
  }
}

/**
 * The fail-closed result: the policy engine or a store failed during the decision, so the call did not
 * run (a fixed sentence; the detail goes to the logs). Retryable: the same call can be made again.
 */
export function policyCheckFailed(prepared: PreparedToolCall): ToolResult {
  return notStartedResult(prepared.call, "fatal_error", {
    code: "POLICY_CHECK_FAILED",
    message: `${prepared.tool.name} did not run: the tenant's policies could not be evaluated. The same call can be made again.`,
    retryable: true,
  });
}

/** Runs a call the decision let run, settles its reservation, and records the decision in its result. */
export async function runDecided(
  decision: Extract<CallDecision, { kind: "run" }>,
  prepared: PreparedToolCall,
  security: SecurityContext,
  context: DispatchContext,
): Promise<ToolResult> {
  const result = await runPreparedCall(prepared, security, context);
  if (decision.settle) await decision.settle(result);
  return withPolicy(result, decision.audit);
}
