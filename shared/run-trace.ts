import { type Context, context, type Span, trace } from "@opentelemetry/api";
import type { ModelTelemetry } from "./agent/model.js";
import { sha256Hex } from "./hash.js";
import type { RunObserver, RunSubject } from "./runs/observer.js";
import {
  ATTR,
  type CarriedTrace,
  contextOf,
  emitSpan,
  failSpan,
  Kind,
  parentContextOf,
  startSpanWithIds,
  tracingOptions,
  withContext,
} from "./tracing.js";

/**
 * The `invoke_agent` span of a run (GenAI conventions, INTERNAL), started and ended at the run
 * lifecycle's points: start, finish (the typed stop status), fail. The model's `chat`, the tools'
 * `execute_tool` and the store's DynamoDB spans are its children. A durable run's span outlives an
 * invocation: its ids are carried in the execution's input ({@link CarriedTrace}), every invocation's
 * spans name it as their parent, and the invocation that finishes the run emits it whole
 * ({@link finishCarriedRunSpan}).
 */

/** The agent's name on spans (`gen_ai.agent.name`). */
export const AGENT_NAME = "boundloop";

/**
 * What the agent span says about a run: tenant, run id, conversation (the first run of its
 * `previousRunId` chain), whether it is durable, and the model it talks to.
 */
export interface RunTraceInfo {
  tenantId: string;
  runId: string;
  conversationId: string;
  durable: boolean;
  model?: ModelTelemetry | undefined;
}

/**
 * The outcome facts the agent span ends with; `grounding`, the answer's check (docs/evals.md), gives the
 * span `boundloop.answer.ungrounded_count` and `boundloop.answer.grounding_action` when it found any, and
 * with content capture on (TRACE_CONTENT) `boundloop.answer.ungrounded` (the numbers as written).
 */
export interface RunTraceOutcome {
  status: string;
  cycles: number;
  usage: { promptTokens: number; completionTokens: number };
  cost?: { amount: string; currency: string } | null | undefined;
  grounding?: { ungrounded: ReadonlyArray<{ text: string }>; action: string } | null;
}

/** Statuses a run ends in without an error: the loop's answer. Any other typed stop is an error. */
const OK_STATUSES = new Set(["completed"]);

function startAttributes(info: RunTraceInfo) {
  return {
    [ATTR.operationName]: "invoke_agent",
    [ATTR.providerName]: info.model?.providerName ?? "unknown",
    [ATTR.agentName]: AGENT_NAME,
    [ATTR.conversationId]: info.conversationId,
    ...(info.model ? { [ATTR.requestModel]: info.model.requestModel } : {}),
    [ATTR.tenant]: info.tenantId,
    [ATTR.runId]: info.runId,
    [ATTR.runDurable]: info.durable,
  };
}

function endWith(span: Span, outcome: RunTraceOutcome): void {
  span.setAttributes({
    [ATTR.runStatus]: outcome.status,
    [ATTR.runCycles]: outcome.cycles,
    [ATTR.inputTokens]: outcome.usage.promptTokens,
    [ATTR.outputTokens]: outcome.usage.completionTokens,
    ...(outcome.cost
      ? { [ATTR.costAmount]: outcome.cost.amount, [ATTR.costCurrency]: outcome.cost.currency }
      : {}),
  });
  const ungrounded = outcome.grounding?.ungrounded ?? [];
  if (outcome.grounding && (ungrounded.length > 0 || outcome.grounding.action !== "none")) {
    span.setAttributes({
      [ATTR.answerUngroundedCount]: ungrounded.length,
      [ATTR.answerGroundingAction]: outcome.grounding.action,
      // The numbers are the answer's own text: content, on a span only when content capture is on.
      ...(tracingOptions().captureContent
        ? { [ATTR.answerUngrounded]: ungrounded.map((number) => number.text) }
        : {}),
    });
  }
  // The run's typed stop status is its error type: stable, upper case like the problem codes.
  if (!OK_STATUSES.has(outcome.status)) failSpan(span, outcome.status.toUpperCase());
}

/**
 * A run's agent span in this process (the synchronous path). `context` is the context the run's work
 * runs in (its children's parent); undefined with tracing off.
 */
export interface RunSpan {
  context: Context | undefined;
  /** Ends the span with the run's outcome. */
  finish(outcome: RunTraceOutcome): void;
  /** Ends the span as a run that failed on the server (error.type = the stable code, e.g. INTERNAL). */
  fail(code: string): void;
}

const NO_SPAN: RunSpan = { context: undefined, finish() {}, fail() {} };

/**
 * The ids of a run's agent span, derived from its run id (SHA-256), so every process that has a part
 * of the run (the API, each invocation of its durable execution) names the same span without asking a
 * store, and a retried start sends the same execution input: the span id always, and the trace id
 * unless `parent` (the active span when the run started, e.g. an ADOT layer's invocation span) gives
 * it. Undefined with tracing off.
 * @param withParent false for a run started as a durable execution: its own trace, whoever retries the
 *   start
 */
export function agentTraceOf(runId: string, withParent = true): CarriedTrace | undefined {
  if (!tracingOptions().enabled) return undefined;
  const hash = (what: string) => sha256Hex(`${what}:${runId}`);
  const spanId = hash("span").slice(0, 16);
  const parent = withParent ? trace.getSpan(context.active())?.spanContext() : undefined;
  if (parent && trace.isSpanContextValid(parent)) {
    return { traceId: parent.traceId, spanId, traceFlags: parent.traceFlags, parentSpanId: parent.spanId };
  }
  return { traceId: hash("trace").slice(0, 32), spanId, traceFlags: 1 };
}

/**
 * Starts the agent span of a run that runs in this process (ids from {@link agentTraceOf}), a child of
 * the active span (if any). A run handed over to a durable execution leaves it unended (an unended span
 * is never exported): the execution emits it under the same ids.
 */
export function startRunSpan(info: RunTraceInfo): RunSpan {
  const ids = agentTraceOf(info.runId);
  if (!ids) return NO_SPAN;
  const span = startSpanWithIds(
    `invoke_agent ${AGENT_NAME}`,
    { kind: Kind.INTERNAL, attributes: startAttributes(info) },
    context.active(),
    ids,
  );
  let ended = false;
  const end = (fn: () => void) => {
    if (ended) return;
    ended = true;
    fn();
    span.end();
  };
  return {
    context: trace.setSpan(context.active(), span),
    finish: (outcome) => end(() => endWith(span, outcome)),
    fail: (code) => end(() => failSpan(span, code)),
  };
}

/**
 * Emits a durable run's agent span whole, with the carried ids, from `startedAt` (epoch ms, the run's
 * start) to `endedAt` (epoch ms, now on the run's clock, the one its start was read from): called once,
 * by the step that records the run's outcome (so a replay does not emit it again).
 */
export function finishCarriedRunSpan(
  carried: CarriedTrace | undefined,
  info: RunTraceInfo,
  startedAt: number,
  outcome: RunTraceOutcome | { failed: string },
  endedAt: number,
): void {
  if (!carried) return;
  emitSpan(
    `invoke_agent ${AGENT_NAME}`,
    { kind: Kind.INTERNAL, startTime: startedAt, attributes: startAttributes(info) },
    endedAt,
    (span) => ("failed" in outcome ? failSpan(span, outcome.failed) : endWith(span, outcome)),
    parentContextOf(carried),
    { traceId: carried.traceId, spanId: carried.spanId },
  );
}

/**
 * Emits the approval wait of a durable run as its own span (`boundloop.approval.wait`, INTERNAL) from
 * the request to the decision (epoch ms), a child of the run's agent span: called once, from the step
 * after the decision, so a replay emits no second one. When policies sent the call to approval
 * (`policyIds`, the request's preview), the span names them with decision `approval`: a call that waits
 * has no `execute_tool` span until it runs, and one a person refuses never has one, so the wait is where
 * a trace explains why the call was held.
 */
export function emitApprovalWait(
  carried: CarriedTrace | undefined,
  wait: {
    approvalId: string;
    toolName: string;
    toolCallId: string;
    decision: string;
    policyIds?: readonly string[] | undefined;
  },
  requestedAt: number,
  decidedAt: number,
): void {
  if (!carried) return;
  emitSpan(
    "boundloop.approval.wait",
    {
      kind: Kind.INTERNAL,
      startTime: requestedAt,
      attributes: {
        [ATTR.approvalId]: wait.approvalId,
        [ATTR.approvalDecision]: wait.decision,
        [ATTR.toolName]: wait.toolName,
        [ATTR.toolCallId]: wait.toolCallId,
        ...(wait.policyIds
          ? { [ATTR.policyDecision]: "approval", [ATTR.policyIds]: [...wait.policyIds] }
          : {}),
      },
    },
    Math.max(requestedAt, decidedAt),
    () => undefined,
    contextOf(carried),
  );
}

/** What the tracer keeps of a durable run while one of its invocations runs in this process. */
interface DurableTrace {
  carried: CarriedTrace;
  startedAt: number;
  info: RunTraceInfo;
}

/**
 * The run tracer, a {@link RunObserver} of the one lifecycle (wired first in shared/deps.ts, so the agent
 * span ends where the run does): `within` runs a run's work inside its agent span — in this process
 * (started by {@link startRunSpan}) or, for an invocation of a durable execution, in the carried trace,
 * every span of it a child of the run's agent span (ids from the execution's input, derived from the run
 * id when absent). `finished` and `failed` end the span (in process) or emit it whole (durable, from the
 * step that records the outcome: once); `paused` leaves it open for the durable execution that takes the
 * run over; `conversationLoaded` names a durable run's conversation once its history is loaded;
 * `approvalWaitEnded` emits the wait's span ({@link emitApprovalWait}). Its state is per run, in this
 * observer: nothing is kept in the module. `now` (epoch ms): the runs' clock a durable run's span ends on.
 */
export function createRunTracer(now: () => number): RunObserver {
  const inProcess = new WeakMap<RunSubject, RunSpan>();
  const durable = new WeakMap<RunSubject, DurableTrace>();
  const end = (run: RunSubject, outcome: RunTraceOutcome | { failed: string }) => {
    const span = inProcess.get(run);
    if (span) {
      if ("failed" in outcome) span.fail(outcome.failed);
      else span.finish(outcome);
      return;
    }
    const entry = durable.get(run);
    if (entry) finishCarriedRunSpan(entry.carried, entry.info, entry.startedAt, outcome, now());
  };
  return {
    async within(run, scope, work) {
      const info = {
        ...run,
        conversationId: scope.conversationId,
        durable: scope.durable,
        model: scope.model,
      };
      if (scope.durable) {
        const ids = scope.carried ?? agentTraceOf(run.runId, false);
        if (!ids || !tracingOptions().enabled) return work();
        durable.set(run, { carried: ids, startedAt: scope.startedAt, info });
        try {
          return await withContext(contextOf(ids), work);
        } finally {
          durable.delete(run);
        }
      }
      const span = startRunSpan(info);
      if (!span.context) return work();
      inProcess.set(run, span);
      try {
        return await withContext(span.context, work);
      } finally {
        inProcess.delete(run);
      }
    },
    conversationLoaded(run, conversationId) {
      const entry = durable.get(run);
      if (entry) entry.info = { ...entry.info, conversationId };
    },
    approvalWaitEnded(run, request, decision) {
      const wait = { ...request, decision: decision.decision, policyIds: request.preview.policyIds };
      emitApprovalWait(
        durable.get(run)?.carried,
        wait,
        Date.parse(decision.requestedAt),
        Date.parse(decision.decidedAt),
      );
    },
    finished(run, outcome) {
      end(run, outcome);
    },
    failed(run) {
      end(run, { failed: "INTERNAL" });
    },
    paused(run) {
      inProcess.delete(run);
    },
  };
}
