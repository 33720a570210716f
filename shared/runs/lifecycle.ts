import type { Logger } from "@aws-lambda-powertools/logger";
import type { Metrics } from "@aws-lambda-powertools/metrics";
import type { ApprovalDecision, ApprovalPause, ApprovalRequest } from "../agent/approval-gate.js";
import { type CallCost, costView, sumCosts } from "../agent/budget.js";
import type { RunLimits } from "../agent/run-limits.js";
import type { StepRunner } from "../agent/step.js";
import { transcriptOf } from "../agent/transcript.js";
import type { CycleRecord, RunOutcome, RunUsage } from "../agent/types.js";
import { observeToolResults, recordRunMetrics, type ToolResultLabels } from "../observability.js";
import type { HistorySummary, RunSoFar, RunStore } from "../store/runs.js";
import { addUsage, zeroUsage } from "../token-usage.js";
import { syncDeadlineOf } from "./abandoned.js";
import type { ResumedRun, RunObserver, RunScope, RunSubject } from "./observer.js";
import type { AgentRunRecord, AgentRunShapes } from "./run-shapes.js";

export type { ResumedRun, RunObserver, RunScope, RunSubject } from "./observer.js";

/** What a run's lifecycle writes to and reports through: the run store, logs, metrics, observers. */
export interface LifecycleDeps {
  runs: RunStore<AgentRunShapes>;
  logger: Logger;
  metrics: Metrics;
  runObservers?: readonly RunObserver[] | undefined;
}

/** The reason a run record gets when the server failed during the run (never the error's own text). */
export const RUN_FAILED_REASON = "The server failed during the run.";

/**
 * What the run record stores of a run's start: its prompt (hashed), limits in force and conversation;
 * `conversationId` names the conversation a run that continues none starts (an A2A context, an AG-UI
 * thread; default the run's own id); a continuation takes its previous run's. `startedAt` (epoch ms,
 * default now on the store's clock): the run's start, read from the clock its deadline goes by.
 * `syncDeadlineAt` (epoch ms): the instant its writer must have ended by, a synchronous run's deadline (its
 * `Deadline.at`) or a durable run's execution's latest end (shared/runs/run-bounds.ts `durableEndOf`):
 * past it by STALE_RUN_GRACE_MS and still unfinished, it reads `abandoned` (shared/runs/abandoned.ts).
 */
export interface RunStartInput {
  prompt: string;
  limits: Pick<RunLimits, "maxCycles" | "runTimeoutMs">;
  conversation?: { previousRunId: string; conversationId?: string; summary: HistorySummary } | undefined;
  conversationId?: string | undefined;
  startedAt?: number;
  syncDeadlineAt?: number | undefined;
}

/**
 * The one lifecycle of a run, used unchanged by the synchronous path (shared/runs/sync.ts), the
 * asynchronous start (shared/runs/async-start.ts) and the durable runner (shared/durable/runner.ts):
 * {@link start} writes the record, {@link cycle} audits each cycle, {@link finish} or {@link fail} ends it;
 * each point logs, counts its metrics and tells the {@link RunObserver}s. Prompts and answers are never
 * logged. The logger gets the run's `runId` and `tenantId` keys for the rest of the invocation.
 */
export class RunLifecycle {
  private readonly usageSoFar: RunUsage = zeroUsage();
  /** The costs of the calls of the recorded cycles, in order (none without a budget). */
  private readonly costsSoFar: CallCost[] = [];
  /** The last model call a step made (a replayed one too), until its cycle is recorded. */
  private lastCall: { cycle: number; usage: RunUsage; cost?: CallCost | undefined } | undefined;

  constructor(
    private readonly deps: LifecycleDeps,
    readonly subject: RunSubject,
  ) {
    deps.logger.appendKeys({ runId: subject.runId, tenantId: subject.tenantId });
  }

  /**
   * Writes the run record (`running`) and logs "run started". When the run id was already started by the
   * same user (a retried asynchronous start, or the SDK's retry of a write that landed), the stored
   * record is returned as it is.
   * @throws the store's error; Error when another user's run has this id
   */
  async start(input: RunStartInput): Promise<AgentRunRecord> {
    const { runs, logger } = this.deps;
    const { tenantId, runId, userId } = this.subject;
    const started = await runs.start(
      {
        tenantId,
        runId,
        userId,
        prompt: input.prompt,
        limits: { maxCycles: input.limits.maxCycles, timeoutMs: input.limits.runTimeoutMs },
        previousRunId: input.conversation?.previousRunId,
        history: input.conversation?.summary,
        conversationId: input.conversation?.conversationId ?? input.conversationId,
        ...(input.syncDeadlineAt === undefined
          ? {}
          : { syncDeadlineAt: syncDeadlineOf(input.syncDeadlineAt) }),
      },
      input.startedAt === undefined ? undefined : new Date(input.startedAt),
    );
    if (started.kind === "exists") {
      if (started.existing?.userId !== userId) throw new Error(`The run id ${runId} is another run's.`);
      return started.existing;
    }
    const { record } = started;
    logger.info("run started", {
      userId,
      maxCycles: record.limits.maxCycles,
      timeoutMs: record.limits.timeoutMs,
      promptChars: input.prompt.length,
    });
    await this.tell("started", (observer) => observer.started?.(this.subject, record));
    return record;
  }

  /**
   * Runs `work` (the run's work in this process: its loop and lifecycle points) inside every observer's
   * `within` (a tracer's run span), the first observer outermost.
   */
  within<T>(scope: RunScope, work: () => Promise<T>): Promise<T> {
    const wrapped = this.observers().reduceRight<() => Promise<T>>((inner, observer) => {
      const within = observer.within?.bind(observer);
      return within ? () => within(this.subject, scope, inner) : inner;
    }, work);
    return wrapped();
  }

  /** A durable run loaded the conversation it continues; see {@link RunObserver.conversationLoaded}. */
  async conversationLoaded(conversationId: string): Promise<void> {
    await this.tell("conversationLoaded", (observer) =>
      observer.conversationLoaded?.(this.subject, conversationId),
    );
  }

  /**
   * A durable run's wait for a decision ended; called once per wait, from inside a checkpointed step (see
   * {@link RunObserver.approvalWaitEnded}).
   */
  async approvalWaitEnded(request: ApprovalRequest, decision: ApprovalDecision): Promise<void> {
    await this.tell("approvalWaitEnded", (observer) =>
      observer.approvalWaitEnded?.(this.subject, request, decision),
    );
  }

  /** A durable execution (re)starts the run; see {@link RunObserver.resumed}. */
  async resumed(start: ResumedRun): Promise<void> {
    await this.tell("resumed", (observer) => observer.resumed?.(this.subject, start));
  }

  /**
   * The step runner `inner` with the step points ({@link RunObserver.stepStarting}, `stepFinished`).
   * After a step's observers it yields to the event loop once (a macrotask, well under a millisecond):
   * what they handed on, such as a `model.call.finished` event a stream is waiting to write, goes out
   * before the next step's synchronous start (building the tool calls' requests takes milliseconds of
   * CPU), so a reader sees the event when the step ends, not one step later (bench P7).
   */
  steps(inner: StepRunner): StepRunner {
    return async (step, fn) => {
      await this.tell("stepStarting", (observer) => observer.stepStarting?.(this.subject, step));
      const result = await inner(step, fn);
      const made = result as { kind?: unknown; usage?: RunUsage; cost?: CallCost } | undefined;
      if (step.kind === "model" && (made?.kind === "reply" || made?.kind === "failure") && made.usage) {
        this.lastCall = { cycle: step.cycle, usage: made.usage, cost: made.cost };
      }
      await this.tell("stepFinished", (observer) => observer.stepFinished?.(this.subject, step, result));
      await new Promise((resolve) => setImmediate(resolve));
      return result;
    };
  }

  /** The approval gate `gate` with the approval points; a pause is passed on as it is. */
  approvals<D extends ApprovalDecision | ApprovalPause>(
    gate: (request: ApprovalRequest) => Promise<D>,
  ): (request: ApprovalRequest) => Promise<D> {
    return async (request) => {
      const told = this.tell("approvalRequested", (observer) =>
        observer.approvalRequested?.(this.subject, request),
      );
      // The gate starts at once, as the loop asked: a durable run's operations must be created in the
      // same order, in the same turn, on every replay, whatever the observers' writes take.
      const decided = gate(request);
      // Its failure is thrown below, after the observers; until then it is not unhandled.
      decided.catch(() => undefined);
      await told;
      const decision = await decided;
      if (decision.decision !== "paused") {
        const decided = decision as ApprovalDecision;
        await this.tell("approvalDecided", (observer) =>
          observer.approvalDecided?.(this.subject, request, decided),
        );
      }
      return decision;
    };
  }

  /**
   * The loop's `onCycle` hook: sums usage, writes the cycle's audit step (a conditional put, so a cycle a
   * durable replay already wrote is skipped with its logs, metrics and observers), then logs each tool
   * result (INFO: toolName, status, error code, latencyMs) and emits its metrics. A failed write is logged
   * at WARN and never changes the run. `skip`: true once the run was stopped (nothing is written);
   * `labels`: what the tool result lines and metrics add (a call that came over MCP, a replayed one).
   */
  readonly cycle = async (
    record: CycleRecord,
    skip?: () => boolean,
    labels?: ToolResultLabels,
  ): Promise<void> => {
    const { runs, logger } = this.deps;
    addUsage(this.usageSoFar, record.usage);
    if (record.cost) this.costsSoFar.push(record.cost);
    if (this.lastCall && this.lastCall.cycle <= record.cycle) this.lastCall = undefined;
    if (skip?.()) return;
    const usageSoFar = { ...this.usageSoFar };
    let appended: Awaited<ReturnType<typeof runs.appendStep>>;
    try {
      const stepCost = record.cost ? { stepCost: costView(record.cost) } : {};
      appended = await runs.appendStep(
        this.subject.tenantId,
        this.subject.runId,
        { ...record, ...stepCost },
        { usage: usageSoFar, ...sumCosts(this.costsSoFar) },
      );
    } catch (error) {
      logger.warn("audit step not written", { cycle: record.cycle, error: error as Error });
      return;
    }
    if (appended.kind === "exists") {
      await this.tell("cycleReplayed", (observer) => observer.cycleReplayed?.(this.subject, record));
      return;
    }
    observeToolResults(this.deps, record, labels);
    await this.tell("cycle", (observer) => observer.cycle?.(this.subject, record, usageSoFar));
  };

  /**
   * What the record of a run that starts to wait for a decision in `cycle` shows: the recorded cycles and
   * the model call of `cycle` (its step is written once the turn is decided), so the record counts every
   * call made while the run waits. Only the waiting write uses it, once per wait: a replay that passes
   * the wait again writes nothing, so a record further on is never moved back.
   */
  waitingAt(cycle: number): RunSoFar {
    const call = this.lastCall?.cycle === cycle ? this.lastCall : undefined;
    const usage = { ...this.usageSoFar };
    if (call) addUsage(usage, call.usage);
    const costs = call?.cost ? [...this.costsSoFar, call.cost] : this.costsSoFar;
    return { cyclesRecorded: call ? cycle : cycle - 1, usage, ...sumCosts(costs) };
  }

  /** The run stopped at approvals it cannot wait for; its record stays `running` for the hand-over. */
  async paused(approvals: ApprovalRequest[]): Promise<void> {
    this.deps.logger.info("run paused for approval", { approvals: approvals.length });
    await this.tell("paused", (observer) => observer.paused?.(this.subject, approvals));
  }

  /**
   * Writes the outcome with the run's transcript (for runs that continue it; none when it is empty),
   * only while the record is `running` (a cancelled run keeps `cancelled`); when written, stores the run
   * metrics and logs "run finished".
   * @param durationMs the run's wall time as stored (ms)
   * @returns false when the record was no longer `running`
   * @throws the store's error (the caller decides: the durable step retries it, the synchronous path logs it)
   */
  async finish(outcome: RunOutcome, durationMs: number): Promise<boolean> {
    const { runs, logger, metrics } = this.deps;
    const transcript = transcriptOf(outcome.messages, outcome.answer);
    const written = await runs.finish(this.subject.tenantId, this.subject.runId, {
      status: outcome.status,
      cycles: outcome.cycles,
      answer: outcome.answer,
      reason: outcome.reason,
      usage: outcome.usage,
      durationMs,
      grounding: outcome.grounding,
      // A run without messages (an MCP call's one-cycle run) holds no conversation: without a stored
      // transcript, continuing it is PREVIOUS_RUN_NOT_CONTINUABLE instead of a run with an empty history.
      ...(transcript.length > 0 ? { transcript } : {}),
      ...(outcome.cost === undefined ? {} : { cost: outcome.cost, costNote: outcome.costNote ?? null }),
    });
    if (!written) return false;
    recordRunMetrics(metrics, { ...outcome, durationMs });
    logger.info("run finished", {
      status: outcome.status,
      cycles: outcome.cycles,
      toolResults: outcome.toolResults.length,
      totalTokens: outcome.usage.totalTokens,
      latencyMs: durationMs,
    });
    await this.tell("finished", (observer) => observer.finished?.(this.subject, outcome, durationMs));
    return true;
  }

  /**
   * Records the run `failed` with {@link RUN_FAILED_REASON} (best effort: a failed write is logged) and
   * logs the error at ERROR. The observers are told unless the record had already ended (its outcome
   * written, or cancelled): whoever ended it told them, so a run has one `run.finished`. Never throws.
   */
  async fail(error: unknown): Promise<void> {
    const { runs, logger } = this.deps;
    const written = await runs
      .fail(this.subject.tenantId, this.subject.runId, RUN_FAILED_REASON)
      .catch((writeError: unknown) => {
        logger.warn("run failure not recorded", { error: writeError as Error });
        return undefined;
      });
    logger.error("run failed", { error: error as Error });
    if (written === false) return;
    await this.tell("failed", (observer) => observer.failed?.(this.subject, RUN_FAILED_REASON));
  }

  /** The run's observers, in the order they were wired (shared/deps.ts: the tracer first). */
  private observers(): readonly RunObserver[] {
    return this.deps.runObservers ?? [];
  }

  /** Calls every observer at one point; a throwing observer is logged and ignored. */
  private async tell(point: string, call: (observer: RunObserver) => unknown): Promise<void> {
    for (const observer of this.observers()) {
      try {
        await call(observer);
      } catch (error) {
        this.deps.logger.warn("run observer failed", { point, error: error as Error });
      }
    }
  }
}
