import { POLL_AFTER_SECONDS } from "../../functions/api/async-preference.js";
import type { ApprovalGate, ApprovalRequest } from "../agent/approval.js";
import type { StepRunner } from "../agent/step.js";
import type { AppDeps } from "../deps.js";
import {
  type CarriedStep,
  type DurableExecutions,
  type DurableRunPayload,
  executionNameFor,
  MAX_EXECUTION_INPUT_BYTES,
} from "../durable/executions.js";
import { ProblemError } from "../errors.js";
import type { SecurityContext } from "../identity.js";
import { agentTraceOf } from "../run-trace.js";
import { pendingApprovalsOf } from "./approvals.js";
import { asyncRunLimits, withTrace } from "./async-start.js";
import type { ConversationHistory } from "./conversation.js";

/**
 * Thrown by the synchronous path's approval gate: the run reached a call that needs a person's decision,
 * which a request cannot wait for, so the run is handed over to a durable execution.
 */
export class RunHandedOver extends Error {
  constructor(readonly request: ApprovalRequest) {
    super(`The run waits for approval ${request.approvalId} and continues as a durable run.`);
    this.name = new.target.name;
  }
}

/**
 * How long (ms) the 202 of a handed-over run waits, at most, for the runner to reach the approval (it
 * replays the carried steps without calling the model or tools, so this takes well under a second), so
 * the body is the `awaiting_approval` run with its pending approvals. Past it, the body is the run as
 * stored (`running`) and the client polls `Location`.
 */
export const HANDOFF_SETTLE_MS = 5_000;

/**
 * The parts of a synchronous run that let it pause for approval (docs/approvals.md, "A pause inside a
 * synchronous request"): a {@link StepRunner} that runs each step inline and records its result, and an
 * {@link ApprovalGate} that throws {@link RunHandedOver}. The recorded steps become the durable
 * execution's `carried` steps: the runner returns them instead of calling the model or the tools again.
 */
export function handoffParts(): { step: StepRunner; approve: ApprovalGate; carried: CarriedStep[] } {
  const carried: CarriedStep[] = [];
  return {
    carried,
    step: async (name, fn) => {
      const result = await fn();
      carried.push({ name, result });
      return result;
    },
    approve: async (request) => {
      throw new RunHandedOver(request);
    },
  };
}

/**
 * Hands a synchronous run that paused for approval over to a durable execution and answers **202**: the
 * execution (name = run id) gets the run's prompt, scope and caller, the limits of a durable run, an
 * absolute deadline from the run's start, and the steps completed so far (`carried`). It reaches the same
 * approval, stores it and waits. A run that continues a conversation also carries the history it was
 * sent, as the result of the runner's `history:load` step, so the durable run goes on from exactly the
 * same transcript without reading the previous run again. This answer waits up to {@link HANDOFF_SETTLE_MS} for that, then returns
 * the run record (`awaiting_approval`, `pendingApprovals`) with `Location: /v1/runs/{runId}` and
 * `Retry-After`. The execution's input is measured first: over {@link MAX_EXECUTION_INPUT_BYTES} (UTF-8
 * JSON) nothing is started, the run record ends `failed` with the reason, and the answer is 422.
 * @throws ProblemError HANDOVER_TOO_LARGE (422, `runId`, `runStatus` failed, `inputBytes`, `limitBytes`;
 *   stored under an Idempotency-Key like any 4xx); the executions port's or the store's errors (a 500:
 *   the Idempotency-Key record is released)
 */
export async function handOver(
  deps: AppDeps & { executions: DurableExecutions },
  input: {
    security: SecurityContext;
    runId: string;
    runScope: string;
    body: { prompt: string; maxCycles?: number | undefined; timeoutMs?: number | undefined };
    carried: CarriedStep[];
    conversation?: ConversationHistory | undefined;
  },
): Promise<Response> {
  const { security, runId, conversation } = input;
  const stored = await deps.runs.get(security.tenantId, runId);
  if (!stored) throw new Error(`The run ${runId} has no record to hand over.`);
  const limits = asyncRunLimits(deps.config, input.body);
  const startedAt = Date.parse(stored.run.startedAt);
  const payload: DurableRunPayload = {
    version: 1,
    runId,
    runScope: input.runScope,
    security: {
      userId: security.userId,
      tenantId: security.tenantId,
      permissions: [...security.permissions],
    },
    prompt: input.body.prompt,
    limits,
    startedAt,
    deadlineAt: startedAt + limits.runTimeoutMs,
    carried: conversation
      ? [{ name: "history:load", result: conversation }, ...input.carried]
      : input.carried,
    ...(conversation
      ? {
          conversation: {
            previousRunId: conversation.previousRunId,
            historyMaxTokens: deps.config.history.maxTokens,
          },
        }
      : {}),
    // The synchronous part's agent span, left open: the execution ends it (same ids, same trace).
    ...withTrace(agentTraceOf(runId)),
  };
  const inputBytes = Buffer.byteLength(JSON.stringify(payload), "utf8");
  if (inputBytes > MAX_EXECUTION_INPUT_BYTES) {
    const reason = `The run reached a call that needs approval, but its state (${inputBytes} bytes with the steps it carries) is over the ${MAX_EXECUTION_INPUT_BYTES}-byte input limit of a durable execution, so it could not wait for the decision.`;
    await deps.runs.fail(security.tenantId, runId, reason);
    deps.logger.warn("run not handed over: input too large", { runId, inputBytes });
    throw new ProblemError(
      "HANDOVER_TOO_LARGE",
      `${reason} Nothing was recorded after the pause; start a smaller run.`,
      {
        extensions: { runId, runStatus: "failed", inputBytes, limitBytes: MAX_EXECUTION_INPUT_BYTES },
      },
    );
  }
  await deps.executions.start(executionNameFor(runId), payload);
  deps.logger.info("run handed over for approval", { runId, carriedSteps: input.carried.length });
  let found = stored;
  for (const until = Date.now() + HANDOFF_SETTLE_MS; Date.now() < until; ) {
    found = (await deps.runs.get(security.tenantId, runId)) ?? found;
    if (found.run.status !== "running") break;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  const pendingApprovals =
    found.run.status === "awaiting_approval" ? await pendingApprovalsOf(deps, security.tenantId, runId) : [];
  return Response.json(
    { ...found.run, steps: found.steps, pendingApprovals },
    {
      status: 202,
      headers: { location: `/v1/runs/${runId}`, "retry-after": String(POLL_AFTER_SECONDS) },
    },
  );
}
