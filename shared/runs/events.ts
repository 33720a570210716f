import type { ApprovalDecision, ApprovalRequest } from "../agent/approval-gate.js";
import { costView } from "../agent/budget.js";
import type { AnswerGrounding } from "../agent/grounding.js";
import type { ModelCallResult, ModelStepResult } from "../agent/model-step.js";
import type { PolicyAudit, ToolError, ToolStatus } from "../agent/result.js";
import type { StepDescriptor } from "../agent/step.js";
import type { ApprovalPreview } from "../agent/tool.js";
import { turnCallsOf } from "../agent/turn-resolution.js";
import type { CycleRecord, RunUsage } from "../agent/types.js";
import type { Cost } from "../money/cost.js";
import type { RunEventStore } from "../store/run-events.js";
import { zeroUsage } from "../token-usage.js";
import type { RunObserver, RunSubject } from "./observer.js";

/**
 * What happened in a run, one typed event each (the `type` names the kind; docs/run-events.md):
 * - `run.started`: the run's effective limits (ms for time) and the run it continues (null for none)
 * - `model.call.finished`: one model call of `cycle`: the provider's finish reason (null when the call
 *   failed), its tokens and wall time (ms), its `cost` (null without a price for its model; absent
 *   without quotas); `summary` for the tool-less summary call at the cycle limit
 * - `tool.call.started`: a call the model asked for, by the id the run uses for it (the audit step's),
 *   with its arguments as the model sent them (parsed JSON; the raw text when they were not JSON)
 * - `tool.call.finished`: its category, error code (null on success), wall time (ms), idempotency
 *   key (set for mutating tools only), and the backend's result as GET /v1/runs/{runId} shows it in the
 *   run's steps: `data` (the tool's output on success, else null) and `error` (the fixed category's
 *   code, message for the model, details and retryability; null on success). `dataOmitted` marks data
 *   left out to keep the cycle's batch within a table item ({@link RESULT_DATA_BYTES_PER_CYCLE})
 * - `approval.requested` / `approval.decided` / `approval.expired`: a call that waits for a person
 *   (docs/approvals.md), with the backend's preview; who decided and why
 * - `answer.ungrounded`: the answer held numbers no tool result or prompt gave (docs/evals.md,
 *   Grounding): each as written and read, how many it held, and what ANSWER_GROUNDING did (`reported`,
 *   `reasked`: then the second answer's, with the first's in `firstUngrounded`; `refused`); just before
 *   `run.finished`, only when there are some
 * - `run.finished`: the run's final status (a loop status, or `failed` / `cancelled` / `handed_over`),
 *   answer, reason, cycles, tokens and wall time (ms), and its `cost` (with `costNote` when null);
 *   always the last event of a run
 * Content follows GET /v1/runs/{runId}'s: the run's own prompt is never in it, nor any secret or internal
 * error text.
 */
export type RunEventBody =
  | {
      type: "run.started";
      limits: { maxCycles: number; timeoutMs: number };
      previousRunId: string | null;
    }
  | {
      type: "model.call.finished";
      cycle: number;
      finishReason: string | null;
      usage: RunUsage;
      latencyMs: number;
      summary?: true;
      cost?: Cost | null;
    }
  | { type: "tool.call.started"; cycle: number; toolCallId: string; name: string; arguments: unknown }
  | {
      type: "tool.call.finished";
      cycle: number;
      toolCallId: string;
      name: string;
      status: ToolStatus;
      errorCode: string | null;
      latencyMs: number;
      idempotencyKey: string | null;
      /** The policy decision's explanation (docs/policies.md), when the tenant's policies decided the call. */
      policy?: PolicyAudit;
      data: unknown;
      error: ToolError | null;
      dataOmitted?: true;
    }
  | {
      type: "approval.requested";
      cycle: number;
      approvalId: string;
      toolCallId: string;
      toolName: string;
      preview: ApprovalPreview;
    }
  | {
      type: "approval.decided";
      approvalId: string;
      decision: "approved" | "rejected";
      decidedBy: string | null;
      reason: string | null;
    }
  | { type: "approval.expired"; approvalId: string }
  | ({ type: "answer.ungrounded" } & Omit<AnswerGrounding, "mode">)
  | {
      type: "run.finished";
      status: string;
      answer: string | null;
      reason: string | null;
      cycles: number | null;
      usage: RunUsage;
      durationMs: number | null;
      cost?: Cost | null;
      costNote?: string | null;
    };

/** The names of the event types, in the order a run emits them. */
export type RunEventType = RunEventBody["type"];

/** One stored event: its body, the run, its sequence in the run (from 1, no gaps) and when (ISO 8601). */
export type RunEvent = RunEventBody & { runId: string; seq: number; at: string };

/**
 * UTF-8 bytes of tool result `data` the `tool.call.finished` events of one cycle carry at most: a
 * cycle's events are one table item (≤ 400 KB, with the calls' arguments beside them). Each result is
 * at most MAX_TOOL_RESULT_BYTES already (16 KB by default), so only a raised cap or many calls in one
 * turn reach this; a result past it goes without its data (`dataOmitted`), which the run's steps keep.
 */
export const RESULT_DATA_BYTES_PER_CYCLE = 200_000;

/** The event type that ends every run's log (the stream closes after it). */
export const FINAL_EVENT_TYPE = "run.finished" satisfies RunEventType;

/**
 * Tells readers in this process that a run's log moved on (after each write, and for every event
 * emitted, so a stream served by the process running the run needs no polling). Readers elsewhere
 * poll the table. One per container (shared/deps.ts); subscribers are removed by the function returned.
 */
export class RunEventHub {
  private readonly listeners = new Map<string, Set<(event: RunEvent | undefined) => void>>();

  /** Calls `listener` with each event of `runId` emitted in this process, and `undefined` after a write. */
  subscribe(runId: string, listener: (event: RunEvent | undefined) => void): () => void {
    const set = this.listeners.get(runId) ?? new Set();
    set.add(listener);
    this.listeners.set(runId, set);
    return () => {
      set.delete(listener);
      if (set.size === 0) this.listeners.delete(runId);
    };
  }

  /** Hands `event` (or a write notice) to the run's listeners; a listener that throws is ignored. */
  publish(runId: string, event: RunEvent | undefined): void {
    for (const listener of this.listeners.get(runId) ?? []) {
      try {
        listener(event);
      } catch {
        // A reader's failure never reaches the run.
      }
    }
  }
}

/** What a {@link RunEventLog} writes to and tells: the store, the process's hub, a clock (epoch ms). */
export interface RunEventPorts {
  store: RunEventStore<RunEvent>;
  hub: RunEventHub;
  now?: () => number;
  /** Called when a batch could not be written (it is kept and sent with the next one), or the log read. */
  onWriteError?: (error: unknown) => void;
}

/**
 * The event log of one run as its lifecycle writes it (shared/runs/lifecycle.ts and the durable runner
 * emit through it at start, per step, per approval, per cycle and at the end). Events get consecutive
 * sequences as they are emitted and are kept in memory until {@link flush}, which writes them as one
 * batch (one table write): the lifecycle flushes once per cycle, and with the final event.
 * Sequences are deterministic for a given run: a durable execution that replays a run emits the same
 * events with the same sequences, and {@link skipWritten} makes it write only those the log does not
 * hold yet (whoever wrote the others: the synchronous path before a hand-over, an earlier invocation).
 * A failed write is reported to `onWriteError` and never changes the run; its events go out with the
 * next batch, so the log has no gaps.
 */
export class RunEventLog {
  private seq = 0;
  /** The sequence of the last event known to be in the table: nothing up to it is written again. */
  private written = 0;
  private buffer: RunEvent[] = [];
  private readonly startedCalls = new Set<string>();
  private lastReply: { cycle: number; result: ModelCallResult } | undefined;
  private readonly now: () => number;

  /**
   * @param expiresAtSeconds the run record's TTL (epoch s): every batch expires with the record
   */
  constructor(
    private readonly ports: RunEventPorts,
    readonly tenantId: string,
    readonly runId: string,
    private readonly expiresAtSeconds: number,
  ) {
    this.now = ports.now ?? Date.now;
  }

  /** Gives `body` the next sequence, keeps it for the next batch and tells this process's readers. */
  emit(body: RunEventBody): RunEvent {
    this.seq += 1;
    const event = { ...body, runId: this.runId, seq: this.seq, at: new Date(this.now()).toISOString() };
    this.buffer.push(event as RunEvent);
    this.ports.hub.publish(this.runId, event as RunEvent);
    return event as RunEvent;
  }

  /**
   * Writes the events kept since the last batch that the log does not hold yet as one batch (nothing
   * for none: a replayed cycle's events are dropped unwritten); never throws.
   */
  async flush(): Promise<void> {
    this.buffer = this.buffer.filter((event) => event.seq > this.written);
    const batch = this.buffer;
    const last = batch.at(-1);
    if (!last) return;
    try {
      await this.ports.store.append(this.tenantId, this.runId, batch, this.expiresAtSeconds);
      this.buffer = this.buffer.slice(batch.length);
      this.written = last.seq;
      this.ports.hub.publish(this.runId, undefined);
    } catch (error) {
      this.ports.onWriteError?.(error);
    }
  }

  /**
   * Reads how far the run's log goes (one query), so that a durable execution replaying the run writes
   * only the events after it. Never throws: when the log cannot be read the failure goes to
   * `onWriteError` and every batch is written whole (readers merge overlapping batches by sequence).
   */
  async skipWritten(): Promise<void> {
    try {
      this.written = await this.ports.store.lastSeq(this.tenantId, this.runId);
    } catch (error) {
      this.ports.onWriteError?.(error);
    }
  }

  /** `run.started` with the run's effective limits (ms) and the run it continues. */
  started(limits: { maxCycles: number; timeoutMs: number }, previousRunId: string | null): void {
    this.emit({ type: "run.started", limits, previousRunId });
  }

  /**
   * Before a step: a tools step announces its calls (`tool.call.started`): the cycle's reply's, or the
   * ones the step names when no model asked for them (an MCP call's); an approved step the call it names
   * (an MCP call's approved repeat, whose run has no tools step).
   */
  stepStarting(step: StepDescriptor): void {
    if ((step.kind === "tools" || step.kind === "approved") && step.calls) {
      for (const call of step.calls) this.toolStarted(step.cycle, call.id, call.name, call.arguments);
      return;
    }
    const reply = this.lastReply;
    if (step.kind !== "tools" || reply?.result.kind !== "reply" || reply.cycle !== step.cycle) return;
    for (const call of turnCallsOf(reply.result, reply.cycle)) {
      this.toolStarted(reply.cycle, call.id, call.name, call.arguments);
    }
  }

  /** After a step: a model step is `model.call.finished` (unless the deadline had passed before it). */
  stepFinished(step: StepDescriptor, result: unknown): void {
    const modelResult = result as ModelStepResult;
    if (
      (step.kind !== "model" && step.kind !== "summary") ||
      (modelResult.kind !== "reply" && modelResult.kind !== "failure")
    )
      return;
    // The summary call comes after the last cycle and is numbered as the audit numbers it.
    const cycle = step.kind === "model" ? step.cycle : (this.lastReply?.cycle ?? 0) + 1;
    this.lastReply = { cycle, result: modelResult };
    this.emit({
      type: "model.call.finished",
      cycle,
      finishReason: modelResult.kind === "reply" ? modelResult.finishReason : null,
      usage: modelResult.usage,
      latencyMs: modelResult.latencyMs,
      ...(step.kind === "summary" ? { summary: true as const } : {}),
      ...(modelResult.cost ? { cost: costView(modelResult.cost) } : {}),
    });
  }

  /** `approval.requested`; written at once (a durable run may wait hours, a paused one continues elsewhere). */
  async approvalRequested(request: ApprovalRequest): Promise<void> {
    this.emit({
      type: "approval.requested",
      cycle: request.cycle,
      approvalId: request.approvalId,
      toolCallId: request.toolCallId,
      toolName: request.toolName,
      preview: request.preview,
    });
    await this.flush();
  }

  /** `approval.decided` or `approval.expired`. */
  approvalDecided(request: ApprovalRequest, decision: ApprovalDecision): void {
    if (decision.decision === "expired") {
      this.emit({ type: "approval.expired", approvalId: request.approvalId });
      return;
    }
    this.emit({
      type: "approval.decided",
      approvalId: request.approvalId,
      decision: decision.decision,
      decidedBy: decision.decidedBy,
      reason: decision.reason,
    });
  }

  /**
   * The end of a cycle: `tool.call.finished` for each of its calls (with `tool.call.started` first for a
   * call no tools step announced), then the batch is written — except for the cycle that ends the run,
   * whose events go with the final event, in one batch. A replayed cycle's events are in the log
   * already: {@link flush} writes none of them again.
   */
  async cycle(record: CycleRecord): Promise<void> {
    let dataBytes = RESULT_DATA_BYTES_PER_CYCLE;
    for (const call of record.toolCalls) {
      this.toolStarted(record.cycle, call.id, call.name, call.arguments);
      const { result } = call;
      const size = result.data === null || result.data === undefined ? 0 : jsonBytes(result.data);
      const fits = size <= dataBytes;
      if (fits) dataBytes -= size;
      this.emit({
        type: "tool.call.finished",
        cycle: record.cycle,
        toolCallId: call.id,
        name: call.name,
        status: result.status,
        errorCode: result.error?.code ?? null,
        latencyMs: result.metadata.latencyMs,
        idempotencyKey: result.metadata.idempotencyKey,
        data: fits ? (result.data ?? null) : null,
        error: result.error,
        ...(fits ? {} : { dataOmitted: true as const }),
        ...(result.metadata.policy ? { policy: result.metadata.policy } : {}),
      });
    }
    if (record.outcome === undefined) await this.flush();
  }

  /** `run.finished`, written at once with whatever is still kept: always the last event of the log. */
  async finished(outcome: Omit<Extract<RunEventBody, { type: "run.finished" }>, "type">): Promise<void> {
    this.emit({ type: "run.finished", ...outcome });
    await this.flush();
  }

  private toolStarted(cycle: number, toolCallId: string, name: string, args: string): void {
    const key = `${cycle}:${toolCallId}`;
    if (this.startedCalls.has(key)) return;
    this.startedCalls.add(key);
    this.emit({ type: "tool.call.started", cycle, toolCallId, name, arguments: parseArguments(args) });
  }
}

/** The UTF-8 size of a value's JSON. */
function jsonBytes(value: unknown): number {
  return Buffer.byteLength(JSON.stringify(value) ?? "", "utf8");
}

/** Tool-call arguments as JSON when they parse, else the raw text (what the model sent either way). */
function parseArguments(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}

/**
 * The run events as a {@link RunObserver} of the one lifecycle (shared/runs/lifecycle.ts): each run's
 * lifecycle gets its own {@link RunEventLog} (keyed by the lifecycle's subject), created at `started`
 * (the synchronous path: sequences from 1) or `resumed` (a durable execution: `run.started` again as 1,
 * then the same sequence the run had, whoever ran its first steps), and fed at every point. Failed
 * writes are logged (WARN "run events not written").
 * @param ttlSeconds RUN_TTL_SECONDS: a durable execution's batches expire with the record it resumes
 */
export function runEventObserver(ports: RunEventPorts & { ttlSeconds: number }): RunObserver {
  const logs = new WeakMap<RunSubject, RunEventLog>();
  const open = (run: RunSubject, expiresAtSeconds: number) => {
    const log = new RunEventLog(ports, run.tenantId, run.runId, expiresAtSeconds);
    logs.set(run, log);
    return log;
  };
  const done = { status: "", answer: null, reason: null, cycles: null, durationMs: null };
  return {
    started: (run, record) => {
      open(run, Math.floor(Date.parse(record.expiresAt) / 1000)).started(record.limits, record.previousRunId);
    },
    resumed: async (run, start) => {
      const log = open(run, Math.floor(start.startedAt / 1000) + ports.ttlSeconds);
      log.started(start.limits, start.previousRunId);
      await log.skipWritten();
    },
    stepStarting: (run, step) => logs.get(run)?.stepStarting(step),
    stepFinished: (run, step, result) => logs.get(run)?.stepFinished(step, result),
    approvalRequested: (run, request) => logs.get(run)?.approvalRequested(request),
    approvalDecided: (run, request, decision) => logs.get(run)?.approvalDecided(request, decision),
    cycle: (run, record) => logs.get(run)?.cycle(record),
    // Its events were written then; emitted again so the sequence goes on as it did (flush skips them).
    cycleReplayed: (run, record) => logs.get(run)?.cycle(record),
    // A synchronous run paused for approval continues as a durable run, which emits the rest.
    paused: (run) => logs.get(run)?.flush(),
    finished: (run, outcome, durationMs) => {
      const { grounding } = outcome;
      if (grounding && (grounding.ungrounded.length > 0 || grounding.firstUngrounded?.length)) {
        const { mode: _mode, ...found } = grounding;
        logs.get(run)?.emit({ type: "answer.ungrounded", ...found });
      }
      return logs.get(run)?.finished({
        status: outcome.status,
        answer: outcome.answer,
        reason: outcome.reason,
        cycles: outcome.cycles,
        usage: outcome.usage,
        durationMs,
        ...(outcome.cost === undefined ? {} : { cost: outcome.cost, costNote: outcome.costNote ?? null }),
      });
    },
    failed: (run, reason) =>
      logs.get(run)?.finished({ ...done, status: "failed", reason, usage: zeroUsage() }),
  };
}
