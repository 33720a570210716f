/**
 * The points of a run's lifecycle its observers hook into (run events, trace spans, and whatever comes
 * next: a policy audit, a quota's settlement log), called by the one lifecycle (shared/runs/lifecycle.ts)
 * for every surface: the synchronous path, the durable runner, MCP's one-cycle runs. Observers are
 * injected (`SharedDeps.runObservers`, wired in shared/deps.ts); none is a module singleton.
 */
import type { ApprovalDecision, ApprovalRequest } from "../agent/approval-gate.js";
import type { ModelTelemetry } from "../agent/model.js";
import type { StepDescriptor } from "../agent/step.js";
import type { CycleRecord, RunOutcome, RunUsage } from "../agent/types.js";
import type { CarriedTrace } from "../tracing.js";
import type { AgentRunRecord } from "./run-shapes.js";

/** The run a lifecycle belongs to: its id and who started it (from the verified security context). */
export interface RunSubject {
  runId: string;
  tenantId: string;
  userId: string;
}

/** What a durable execution knows of the run it resumes: its limits (ms) and the run it continues. */
export interface ResumedRun {
  /** When the run started (epoch ms, the record's `startedAt`). */
  startedAt: number;
  limits: { maxCycles: number; timeoutMs: number };
  previousRunId: string | null;
}

/**
 * Where a run's work happens, for {@link RunObserver.within}: in this process from its start (a
 * synchronous run, an MCP call), or as one invocation of a durable execution, whose trace ids travel in
 * its input (`carried`) and which started at `startedAt` (epoch ms). `conversationId`: the first run of
 * its `previousRunId` chain (the run's own id for a new conversation); `model`: what the run talks to.
 */
export type RunScope =
  | { durable: false; conversationId: string; model?: ModelTelemetry | undefined }
  | {
      durable: true;
      conversationId: string;
      model?: ModelTelemetry | undefined;
      carried: CarriedTrace | undefined;
      startedAt: number;
    };

/**
 * Observers of a run's lifecycle points: each is called once per point, after the point's own write, by
 * every path (a durable replay that skips a point skips its observers too). Every method is optional; a
 * throwing observer is logged at WARN and never changes the run.
 * - `within`: wraps the run's whole work in this process (a tracer runs it inside the run's span)
 * - `started`: the run record was written (`running`)
 * - `cycle`: one cycle's audit step was written; `usageSoFar` sums this and earlier cycles
 * - `paused`: a synchronous run stopped at approvals it cannot wait for (it is handed over)
 * - `finished`: the outcome was written; `durationMs` as stored
 * - `failed`: the server failed during the run (recorded `failed`)
 * - `approvalWaitEnded`: a durable run's wait for a decision ended, once per wait (inside a step)
 * Points of the run's execution rather than its record, called on every durable replay too (a step's
 * result comes from its checkpoint then), so an observer sees the same sequence each time:
 * - `cycleReplayed`: a cycle whose audit step was already written (a durable replay, or the steps a
 *   handed-over run carries), in place of `cycle`
 * - `resumed`: a durable execution (re)starts the run (the record was written by whoever started it)
 * - `conversationLoaded`: a durable run loaded the conversation it continues
 * - `stepStarting` / `stepFinished`: before and after each step of the loop (shared/agent/step.ts), with
 *   its result
 * - `approvalRequested` / `approvalDecided`: a call waits for a person / got its decision (a pausing
 *   gate's pause is not a decision: `paused` follows)
 */
export interface RunObserver {
  within?<T>(run: RunSubject, scope: RunScope, work: () => Promise<T>): Promise<T>;
  started?(run: RunSubject, record: AgentRunRecord): void | Promise<void>;
  resumed?(run: RunSubject, start: ResumedRun): void | Promise<void>;
  conversationLoaded?(run: RunSubject, conversationId: string): void | Promise<void>;
  cycleReplayed?(run: RunSubject, record: CycleRecord): void | Promise<void>;
  stepStarting?(run: RunSubject, step: StepDescriptor): void | Promise<void>;
  stepFinished?(run: RunSubject, step: StepDescriptor, result: unknown): void | Promise<void>;
  approvalRequested?(run: RunSubject, request: ApprovalRequest): void | Promise<void>;
  approvalDecided?(
    run: RunSubject,
    request: ApprovalRequest,
    decision: ApprovalDecision,
  ): void | Promise<void>;
  approvalWaitEnded?(run: RunSubject, request: ApprovalRequest, decision: ApprovalDecision): void;
  cycle?(run: RunSubject, record: CycleRecord, usageSoFar: RunUsage): void | Promise<void>;
  paused?(run: RunSubject, approvals: ApprovalRequest[]): void | Promise<void>;
  finished?(run: RunSubject, outcome: RunOutcome, durationMs: number): void | Promise<void>;
  failed?(run: RunSubject, reason: string): void | Promise<void>;
}
