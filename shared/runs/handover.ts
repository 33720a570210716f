import type { Deadline } from "../agent/deadline.js";
import type { ApiDeps } from "../deps.js";
import { DomainError } from "../domain-errors.js";
import {
  type CarriedStep,
  type DurableExecutions,
  executionNameFor,
  MAX_EXECUTION_INPUT_BYTES,
} from "../durable/executions.js";
import type { SecurityContext } from "../identity.js";
import { agentTraceOf } from "../run-trace.js";
import { syncDeadlineOf } from "./abandoned.js";
import { pendingApprovalsOf } from "./approval-service.js";
import type { ConversationHistory } from "./conversation.js";
import { durableRunPayload } from "./durable-start.js";
import { durableEndOf, durableRunLimits, type RequestedLimits } from "./run-bounds.js";
import type { RunStart } from "./run-request.js";

/**
 * How long (ms) the 202 of a handed-over run waits, at most, for the runner to reach the approval (it
 * replays the carried steps without calling the model or tools, so this takes well under a second), so
 * the body is the `awaiting_approval` run with its pending approvals. The wait also ends at the
 * request's deadline. Past it, the body is the run as stored (`running`) and the client polls `Location`.
 */
export const HANDOFF_SETTLE_MS = 5_000;

/** What a hand-over uses. */
export type HandOverDeps = Pick<ApiDeps, "config" | "runs" | "approvals" | "logger" | "clock"> & {
  executions: DurableExecutions;
};

/** The paused synchronous run to hand over: who, which run, its request, and the steps it completed. */
export interface HandOverInput {
  security: SecurityContext;
  runId: string;
  runScope: string;
  body: RequestedLimits & { prompt: string };
  carried: CarriedStep[];
  conversation?: ConversationHistory | undefined;
  deadline: Deadline;
}

/**
 * Hands a synchronous run that paused for approval over to a durable execution (name = run id): the run
 * record takes the limits of a durable run (the ones in force from now on), and the execution gets the
 * run's prompt, scope and caller, those limits, an absolute deadline from the run's start, and the steps
 * completed so far (`carried`; a continuation also carries its history as the `history:load` result, so
 * the durable run goes on from exactly the same transcript). It reaches the same approval, stores it and
 * waits. The answer waits for that up to {@link HANDOFF_SETTLE_MS}, and never past the request's
 * deadline. The execution's input is measured first: over {@link MAX_EXECUTION_INPUT_BYTES} (UTF-8 JSON)
 * nothing is started and the run record ends `failed` with the reason.
 * @returns `handed_over` with the run as stored and its pending approvals
 * @throws DomainError HANDOVER_TOO_LARGE (`runId`, `runStatus` failed, `inputBytes`, `limitBytes`);
 *   the executions port's or the store's errors
 */
export async function handOver(deps: HandOverDeps, input: HandOverInput): Promise<RunStart> {
  const { security, runId, conversation } = input;
  const limits = durableRunLimits(deps.config, input.body);
  // From now on its execution writes it: it is judged by that execution's latest end.
  const endsAt = durableEndOf(deps.config, deps.clock.now(), limits.runTimeoutMs);
  await deps.runs.setLimits(
    security.tenantId,
    runId,
    { maxCycles: limits.maxCycles, timeoutMs: limits.runTimeoutMs },
    syncDeadlineOf(endsAt),
  );
  const stored = await deps.runs.get(security.tenantId, runId);
  if (!stored) throw new Error(`The run ${runId} has no record to hand over.`);
  const payload = durableRunPayload({
    runId,
    runScope: input.runScope,
    security,
    prompt: input.body.prompt,
    limits,
    startedAt: Date.parse(stored.run.startedAt),
    previousRunId: conversation?.previousRunId,
    historyMaxTokens: deps.config.history.maxTokens,
    carried: conversation
      ? [{ name: "history:load", result: conversation }, ...input.carried]
      : input.carried,
    // The synchronous part's agent span, left open at the pause: the execution ends it (same ids).
    trace: agentTraceOf(runId),
  });
  const inputBytes = Buffer.byteLength(JSON.stringify(payload), "utf8");
  if (inputBytes > MAX_EXECUTION_INPUT_BYTES) return refuseTooLarge(deps, security, runId, inputBytes);
  await deps.executions.start(executionNameFor(runId), payload);
  deps.logger.info("run handed over for approval", { runId, carriedSteps: input.carried.length });
  const found = await settled(deps, security.tenantId, runId, input.deadline);
  const pendingApprovals =
    found.run.status === "awaiting_approval"
      ? await pendingApprovalsOf(deps.approvals, security.tenantId, runId)
      : [];
  return { kind: "handed_over", run: found.run, steps: found.steps, pendingApprovals };
}

/**
 * The run as stored once the runner moved it past `running`, polled every 50 ms for at most
 * {@link HANDOFF_SETTLE_MS} and never past `deadline`.
 */
async function settled(
  deps: Pick<HandOverDeps, "runs">,
  tenantId: string,
  runId: string,
  deadline: Deadline,
) {
  const until = Date.now() + Math.min(HANDOFF_SETTLE_MS, deadline.remainingMs());
  let found = await deps.runs.get(tenantId, runId);
  while (found?.run.status === "running" && Date.now() < until) {
    await new Promise((resolve) => setTimeout(resolve, Math.min(50, Math.max(0, until - Date.now()))));
    found = (await deps.runs.get(tenantId, runId)) ?? found;
  }
  if (!found) throw new Error(`The run ${runId} has no record to hand over.`);
  return found;
}

/** Ends the run `failed` (its state is over a durable execution's input limit) and refuses: HANDOVER_TOO_LARGE. */
async function refuseTooLarge(
  deps: HandOverDeps,
  security: SecurityContext,
  runId: string,
  inputBytes: number,
): Promise<never> {
  const reason = `The run reached a call that needs approval, but its state (${inputBytes} bytes with the steps it carries) is over the ${MAX_EXECUTION_INPUT_BYTES}-byte input limit of a durable execution, so it could not wait for the decision.`;
  await deps.runs.fail(security.tenantId, runId, reason);
  deps.logger.warn("run not handed over: input too large", { runId, inputBytes });
  throw new DomainError(
    "HANDOVER_TOO_LARGE",
    `${reason} Nothing was recorded after the pause; start a smaller run.`,
    {
      facts: { runId, runStatus: "failed", inputBytes, limitBytes: MAX_EXECUTION_INPUT_BYTES },
    },
  );
}
