import type { Logger } from "@aws-lambda-powertools/logger";
import type { Metrics } from "@aws-lambda-powertools/metrics";
import { ConditionalCheckFailedException } from "@aws-sdk/client-dynamodb";
import type { ApprovalDecision, ApprovalPause, ApprovalRequest } from "../agent/approval.js";
import { transcriptOf } from "../agent/history.js";
import type { RunLimits } from "../agent/limits.js";
import type { CycleRecord, RunOutcome, RunUsage, StepRunner } from "../agent/loop.js";
import type { AgentRunShapes } from "../deps.js";
import { observeToolResults, recordRunMetrics } from "../observability.js";
import { traceObserver } from "../run-trace.js";
import type { HistorySummary, RunRecord, RunStore } from "../store/runs.js";

/** The run a lifecycle belongs to: its id and who started it (from the verified security context). */
export interface RunSubject {
  runId: string;
  tenantId: string;
  userId: string;
}

/**
 * Observers of a run's lifecycle points, for run events (a live stream) and trace spans: each is called
 * once per point, after the point's own write, by the synchronous path and the durable runner alike
 * (a durable replay that skips a point skips its observers too). Every method is optional; a throwing
 * observer is logged at WARN and never changes the run.
 * - `started`: the run record was written (`running`)
 * - `cycle`: one cycle's audit step was written; `usageSoFar` sums this and earlier cycles
 * - `paused`: a synchronous run stopped at approvals it cannot wait for (it is handed over)
 * - `finished`: the outcome was written; `durationMs` as stored
 * - `failed`: the server failed during the run (recorded `failed`)
 * Points of the run's execution rather than its record, called on every durable replay too (a step's
 * result comes from its checkpoint then), so an observer sees the same sequence each time:
 * - `cycleReplayed`: a cycle whose audit step was already written (a durable replay, or the steps a
 *   handed-over run carries), in place of `cycle`
 * - `resumed`: a durable execution (re)starts the run (the record was written by whoever started it)
 * - `stepStarting` / `stepFinished`: before and after each named step of the loop (`cycle-<n>:model`,
 *   `cycle-<n>:tools`, `summary:model`, `history:load`), with its result
 * - `approvalRequested` / `approvalDecided`: a call waits for a person / got its decision (a pausing
 *   gate's pause is not a decision: `paused` follows)
 */
export interface RunObserver {
  started?(run: RunSubject, record: RunRecord<AgentRunShapes>): void | Promise<void>;
  resumed?(run: RunSubject, start: ResumedRun): void | Promise<void>;
  cycleReplayed?(run: RunSubject, record: CycleRecord): void | Promise<void>;
  stepStarting?(run: RunSubject, name: string): void | Promise<void>;
  stepFinished?(run: RunSubject, name: string, result: unknown): void | Promise<void>;
  approvalRequested?(run: RunSubject, request: ApprovalRequest): void | Promise<void>;
  approvalDecided?(
    run: RunSubject,
    request: ApprovalRequest,
    decision: ApprovalDecision,
  ): void | Promise<void>;
  cycle?(run: RunSubject, record: CycleRecord, usageSoFar: RunUsage): void | Promise<void>;
  paused?(run: RunSubject, approvals: ApprovalRequest[]): void | Promise<void>;
  finished?(run: RunSubject, outcome: RunOutcome, durationMs: number): void | Promise<void>;
  failed?(run: RunSubject, reason: string): void | Promise<void>;
}

/** What a durable execution knows of the run it resumes: its limits (ms) and the run it continues. */
export interface ResumedRun {
  /** When the run started (epoch ms, the record's `startedAt`). */
  startedAt: number;
  limits: { maxCycles: number; timeoutMs: number };
  previousRunId: string | null;
}

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
 * thread; default the run's own id); a continuation takes its previous run's.
 */
export interface RunStartInput {
  prompt: string;
  limits: Pick<RunLimits, "maxCycles" | "runTimeoutMs">;
  conversation?: { previousRunId: string; conversationId?: string; summary: HistorySummary } | undefined;
  conversationId?: string | undefined;
}

/**
 * The one lifecycle of a run, used unchanged by the synchronous path (shared/runs/sync.ts), the
 * asynchronous start (shared/runs/async-start.ts) and the durable runner (shared/durable/runner.ts):
 * {@link start} writes the record, {@link cycle} audits each cycle, {@link finish} or {@link fail} ends it;
 * each point logs, counts its metrics and tells the {@link RunObserver}s. Prompts and answers are never
 * logged. The logger gets the run's `runId` and `tenantId` keys for the rest of the invocation.
 */
export class RunLifecycle {
  private readonly usageSoFar: RunUsage = { promptTokens: 0, completionTokens: 0, totalTokens: 0 };

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
   * @throws the store's error (ConditionalCheckFailedException when another user's run has this id)
   */
  async start(input: RunStartInput): Promise<RunRecord<AgentRunShapes>> {
    const { runs, logger } = this.deps;
    const { tenantId, runId, userId } = this.subject;
    let record: RunRecord<AgentRunShapes>;
    try {
      record = await runs.start({
        tenantId,
        runId,
        userId,
        prompt: input.prompt,
        limits: { maxCycles: input.limits.maxCycles, timeoutMs: input.limits.runTimeoutMs },
        previousRunId: input.conversation?.previousRunId,
        history: input.conversation?.summary,
        conversationId: input.conversation?.conversationId ?? input.conversationId,
      });
    } catch (error) {
      if (!(error instanceof ConditionalCheckFailedException)) throw error;
      const found = await runs.get(tenantId, runId);
      if (found?.run.userId !== userId) throw error;
      return found.run;
    }
    logger.info("run started", {
      userId,
      maxCycles: record.limits.maxCycles,
      timeoutMs: record.limits.timeoutMs,
      promptChars: input.prompt.length,
    });
    await this.tell("started", (observer) => observer.started?.(this.subject, record));
    return record;
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
    return async (name, fn) => {
      await this.tell("stepStarting", (observer) => observer.stepStarting?.(this.subject, name));
      const result = await inner(name, fn);
      await this.tell("stepFinished", (observer) => observer.stepFinished?.(this.subject, name, result));
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
   * at WARN and never changes the run. `skip`: true once the run was stopped (nothing is written).
   */
  readonly cycle = async (record: CycleRecord, skip?: () => boolean): Promise<void> => {
    const { runs, logger } = this.deps;
    this.usageSoFar.promptTokens += record.usage.promptTokens;
    this.usageSoFar.completionTokens += record.usage.completionTokens;
    this.usageSoFar.totalTokens += record.usage.totalTokens;
    if (skip?.()) return;
    const usageSoFar = { ...this.usageSoFar };
    try {
      await runs.appendStep(this.subject.tenantId, this.subject.runId, record, usageSoFar);
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) {
        await this.tell("cycleReplayed", (observer) => observer.cycleReplayed?.(this.subject, record));
        return;
      }
      logger.warn("audit step not written", { cycle: record.cycle, error: error as Error });
      return;
    }
    observeToolResults(this.deps, record);
    await this.tell("cycle", (observer) => observer.cycle?.(this.subject, record, usageSoFar));
  };

  /** The run stopped at approvals it cannot wait for; its record stays `running` for the hand-over. */
  async paused(approvals: ApprovalRequest[]): Promise<void> {
    this.deps.logger.info("run paused for approval", { approvals: approvals.length });
    await this.tell("paused", (observer) => observer.paused?.(this.subject, approvals));
  }

  /**
   * Writes the outcome with the run's transcript (for runs that continue it), only while the record is
   * `running` (a cancelled run keeps `cancelled`); when written, stores the run metrics and logs "run
   * finished".
   * @param durationMs the run's wall time as stored (ms)
   * @returns false when the record was no longer `running`
   * @throws the store's error (the caller decides: the durable step retries it, the synchronous path logs it)
   */
  async finish(outcome: RunOutcome, durationMs: number): Promise<boolean> {
    const { runs, logger, metrics } = this.deps;
    const written = await runs.finish(this.subject.tenantId, this.subject.runId, {
      status: outcome.status,
      cycles: outcome.cycles,
      answer: outcome.answer,
      reason: outcome.reason,
      usage: outcome.usage,
      durationMs,
      grounding: outcome.grounding,
      transcript: transcriptOf(outcome.messages, outcome.answer),
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
   * logs the error at ERROR. Never throws.
   */
  async fail(error: unknown): Promise<void> {
    const { runs, logger } = this.deps;
    await runs
      .fail(this.subject.tenantId, this.subject.runId, RUN_FAILED_REASON)
      .catch((writeError: unknown) =>
        logger.warn("run failure not recorded", { error: writeError as Error }),
      );
    logger.error("run failed", { error: error as Error });
    await this.tell("failed", (observer) => observer.failed?.(this.subject, RUN_FAILED_REASON));
  }

  /** Calls every observer at one point; a throwing observer is logged and ignored. */
  private async tell(point: string, call: (observer: RunObserver) => unknown): Promise<void> {
    // The trace's points first (shared/run-trace.ts: the agent span ends where the run does).
    for (const observer of [traceObserver, ...(this.deps.runObservers ?? [])]) {
      try {
        await call(observer);
      } catch (error) {
        this.deps.logger.warn("run observer failed", { point, error: error as Error });
      }
    }
  }
}
