import { endWithAnswer } from "./answer-check.js";
import { type ApprovalGate, settleApprovals } from "./approval.js";
import { cycleRecord, notify, requestSummary } from "./audit.js";
import { reportInternalFailure, toolsAllowedFor } from "./dispatcher.js";
import { LoopBreaker } from "./loop-breaker.js";
import { type ModelCallResult, type ModelStepResult, modelTools } from "./model-step.js";
import { modelTurn } from "./model-turn.js";
import { RunState } from "./run-state.js";
import { runInline, steps } from "./step.js";
import { type Stop, stops } from "./stops.js";
import { runToolTurn, type ToolTurnContext, type ToolTurnResult } from "./tool-turn.js";
import { type Resolution, resolveReply } from "./turn-resolution.js";
import type { RunInput, RunOutcome, RunPaused } from "./types.js";

export type {
  ApprovalDecision,
  ApprovalGate,
  ApprovalPause,
  ApprovalRequest,
  PausingApprovalGate,
} from "./approval.js";
export type { ChatMessage } from "./model.js";
export { DEFAULT_SYSTEM_PROMPT } from "./run-state.js";
export type { StepDescriptor, StepRunner } from "./step.js";
export type {
  CycleRecord,
  RunHooks,
  RunInput,
  RunOutcome,
  RunOutcomeDetails,
  RunPaused,
  RunStatus,
  RunUsage,
} from "./types.js";

/**
 * Runs the bounded agent loop: model call → tool calls (concurrent, capped) → tool messages → … until the
 * model answers without tool calls, or a bound stops it. Never throws for model, tool, budget or deadline
 * failures: every run ends as a {@link RunOutcome}. Each tool_call id gets exactly one tool message, in
 * call order. Every model call and every turn of tool calls goes through `input.step` (typed descriptors,
 * shared/agent/step.ts: model, tools, summary), and every branch below is decided from their results.
 * Checks, in this order:
 * - before each model call: cycle limit, token budget, then (inside the model step) the deadline
 * - after it: model failure (model_error / deadline_exceeded; a context-window refusal is
 *   context_length_exceeded), then the reply's resolution
 *   (shared/agent/turn-resolution.ts): refusal, cut-off output, tool calls, answer, or no usable output
 *   (one corrective retry per run, then model_error)
 * - after the turn's tool calls settle: permission_denied (a missing permission; a policy's POLICY_DENIED
 *   goes back to the model), deadline_exceeded, budget_exceeded (tokens or tool calls per run), loop_detected
 * With a pausing approval gate (shared/agent/approval.ts) a turn whose calls need a decision ends the
 * loop as {@link RunPaused} instead: a value, the run goes on elsewhere. An answer's numbers are checked
 * against the tool results and the prompt before the run ends (shared/agent/answer-check.ts: reported,
 * re-asked once, or refused as `answer_ungrounded`, by `input.grounding`).
 */
export function runAgent(input: RunInput & { approve?: ApprovalGate }): Promise<RunOutcome>;
export function runAgent(input: RunInput): Promise<RunOutcome | RunPaused>;
export async function runAgent(input: RunInput): Promise<RunOutcome | RunPaused> {
  const { limits, hooks } = input;
  const step = input.step ?? runInline;
  const run = new RunState(input);
  // Only the tools the caller may call, and some policy could permit, are offered; the dispatcher still
  // decides every call. The policy service does not wait for its engine here: while it loads (during the
  // first model call) every permitted tool is offered.
  const allowed = toolsAllowedFor(input.tools, input.security);
  const tools = modelTools(
    input.decide ? await input.decide.offered(allowed, input.security, { wait: false }) : allowed,
  );
  const breaker = new LoopBreaker(limits.loopBreakerThreshold);

  while (run.cycles < limits.maxCycles) {
    if (run.usage.totalTokens >= limits.maxTotalTokens) {
      return run.end(stops.tokenBudget(limits.maxTotalTokens, run.usage.totalTokens));
    }
    const cycle = run.cycles + 1;
    const messageCount = run.messages.length;
    const model = await modelTurn(input, run, {
      step: steps.model(cycle),
      cycle,
      tools,
      toolChoice: "auto",
    });
    if (!isCall(model)) return run.end(notCalledStop(model, input, run));
    run.cycles = cycle;
    run.addUsage(model.usage, model.cost);
    const resolution = resolutionOf(model, cycle, run, input);
    if (resolution.kind === "stop") {
      await notify(hooks, () =>
        cycleRecord({
          cycle,
          request: requestSummary(messageCount, tools),
          model,
          outcome: resolution.stop.status,
        }),
      );
      const { stop, answer } = resolution;
      return answer === null ? run.end(stop) : endWithAnswer(input, run, step, tools, { stop, answer });
    }
    if (resolution.kind === "retry") {
      run.retried = true;
      run.messages.push(resolution.message);
      await notify(hooks, () => cycleRecord({ cycle, request: requestSummary(messageCount, tools), model }));
      continue;
    }

    const { calls } = resolution;
    run.messages.push(resolution.message);
    const overTokenBudget = run.usage.totalTokens >= limits.maxTotalTokens;
    const startedBefore = run.toolCallsStarted;
    const asked = await step(steps.tools(cycle), () =>
      runToolTurn(calls, toolTurnContext(input, startedBefore, overTokenBudget)),
    );
    // Calls that wait for a person's decision (shared/agent/approval.ts); the others already ran.
    const turn = asked.pending ? await settleApprovals(asked, cycle, input) : asked;
    if ("paused" in turn) return run.pause(turn.paused);
    run.toolCallsStarted += turn.started;
    const checked = breaker.check(calls, turn.results);
    const results = run.addToolResults(checked.results);
    const stop = turnStop(input, run, turn, overTokenBudget, checked.loop);
    await notify(hooks, () =>
      cycleRecord({
        cycle,
        request: requestSummary(messageCount, tools),
        model,
        calls,
        results,
        outcome: stop?.status,
      }),
    );
    if (stop) return run.end(stop);
  }

  return endAtCycleLimit(input, run, tools);
}

/**
 * What a turn of tool calls needs of the run, named field by field: on Node 20 (V8 11) an object spread
 * followed by more properties costs about a microsecond, where this costs a few dozen nanoseconds.
 */
function toolTurnContext(input: RunInput, startedBefore: number, overTokenBudget: boolean): ToolTurnContext {
  const { tools, security, runId, runScope, limits, deadline, hooks, decide } = input;
  return {
    tools,
    security,
    runId,
    runScope,
    limits,
    deadline,
    hooks,
    decide,
    startedBefore,
    overTokenBudget,
  };
}

/** True when the model step made its call (a reply or a failure), false when it was not made. */
function isCall(model: ModelStepResult): model is ModelCallResult {
  return model.kind === "reply" || model.kind === "failure";
}

/**
 * Why a model call was not made (shared/agent/model-turn.ts): the deadline had passed, the run's token
 * budget leaves too few completion tokens after the prompt's estimate, or a quota refused it.
 */
function notCalledStop(
  model: Exclude<ModelStepResult, ModelCallResult>,
  input: RunInput,
  run: RunState,
): Stop {
  if (model.kind === "expired") return stops.deadlineBeforeModelCall(input.deadline.at);
  if (model.kind === "over_quota") return stops.quotaExceeded(model.budget.refusal);
  return stops.tokenBudgetBeforeCall(input.limits.maxTotalTokens, run.usage.totalTokens, model.promptTokens);
}

/**
 * What the loop does with a model step's result: a failure stops the run (model_error, deadline_exceeded
 * or context_length_exceeded; the failure's detail goes to `onInternalFailure`, except a deadline's), a
 * reply is resolved (shared/agent/turn-resolution.ts).
 */
function resolutionOf(model: ModelCallResult, cycle: number, run: RunState, input: RunInput): Resolution {
  if (model.kind !== "failure") {
    return resolveReply(model, { cycle, retried: run.retried, cycleLeft: cycle < input.limits.maxCycles });
  }
  if (model.cause !== "deadline") {
    reportInternalFailure(input.hooks?.onInternalFailure, {
      source: "model",
      name: "model",
      code: model.cause,
      detail: `${model.status === null ? "no HTTP response" : `HTTP ${model.status}`}: ${model.message}`,
    });
  }
  const context = { messages: run.messages, history: input.history ?? [] };
  return { kind: "stop", stop: stops.modelFailed(model, input.deadline.at, context), answer: null };
}

/**
 * The cycle limit: max_cycles_exceeded, with one last model call with tools off (`summary:model`) so
 * the model can summarize, when SUMMARIZE_ON_MAX_CYCLES is on and the token budget is not spent.
 */
async function endAtCycleLimit(
  input: RunInput,
  run: RunState,
  tools: ReturnType<typeof modelTools>,
): Promise<RunOutcome> {
  const { limits } = input;
  const step = input.step ?? runInline;
  const budgetLeft = run.usage.totalTokens < limits.maxTotalTokens;
  if (!limits.summarizeOnMaxCycles || !budgetLeft) return run.end(stops.maxCycles(limits.maxCycles, false));
  const request = requestSummary(run.messages.length, tools);
  const model = await modelTurn(input, run, {
    step: steps.summary(),
    cycle: run.cycles + 1,
    tools,
    toolChoice: "none",
  });
  if (!isCall(model)) return run.end(stops.maxCycles(limits.maxCycles, false));
  run.addUsage(model.usage, model.cost);
  const text = model.kind === "reply" && !model.refusal ? model.content : null;
  const answer = text?.trim() ? text : null;
  const status = "max_cycles_exceeded";
  const cycle = run.cycles + 1;
  await notify(input.hooks, () => cycleRecord({ cycle, request, model, outcome: status, summary: true }));
  const stop = stops.maxCycles(limits.maxCycles, answer !== null);
  return answer === null ? run.end(stop) : endWithAnswer(input, run, step, tools, { stop, answer });
}

/**
 * Whether the run stops once a turn's tool calls have settled (every call has its tool message), in this
 * order: a permission denial, the deadline (read inside the tools step), the token budget the model call
 * spent, the run's tool-call budget, the loop breaker.
 */
function turnStop(
  input: RunInput,
  run: RunState,
  turn: ToolTurnResult,
  overTokenBudget: boolean,
  loop: ReturnType<LoopBreaker["check"]>["loop"],
): Stop | undefined {
  const { limits, deadline } = input;
  // The coarse permission gate ends the run; a policy's refusal (POLICY_DENIED) does not: the model can
  // explain it to the user, and the loop breaker stops a model that repeats it (docs/policies.md).
  const denied = turn.results.find(
    (result) => result.status === "permission_denied" && result.error?.code !== "POLICY_DENIED",
  );
  if (denied) {
    return stops.permissionDenied(denied.metadata.toolName, String(denied.error?.details.requiredPermission));
  }
  if (turn.deadlinePassed) return stops.deadlineDuringTools(deadline.at);
  if (overTokenBudget) return stops.tokenBudget(limits.maxTotalTokens, run.usage.totalTokens);
  if (turn.refused) return stops.toolCallBudget(limits.maxToolCallsPerRun, run.toolCallsStarted);
  if (loop) return stops.loopDetected(loop);
  return undefined;
}
