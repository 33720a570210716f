/**
 * A run's events (shared/runs/events.ts) as AG-UI events (docs/ag-ui.md), one run event at a time:
 * - `run.started` → RUN_STARTED; each cycle a step (STEP_STARTED `cycle <n>` at its model call,
 *   STEP_FINISHED when the next cycle starts or the run ends)
 * - `tool.call.started` → TOOL_CALL_START, TOOL_CALL_ARGS (the arguments as the model sent them, JSON),
 *   TOOL_CALL_END; the backend's result → TOOL_CALL_RESULT (the tool result as GET /v1/runs/{runId}'s
 *   steps hold it, JSON) when its cycle's step is stored, at the end of the cycle
 * - `approval.*`, `answer.ungrounded` → CUSTOM `boundloop.<type>` with the event
 * - `run.finished` → the answer as TEXT_MESSAGE_START/CONTENT/END, then RUN_FINISHED (completed: `result`
 *   holds the run's status, answer, cycles and tokens; cancelled: outcome `cancelled`) or RUN_ERROR
 *   (every other status, its `code`, with the run's reason as the message)
 * RUN_STARTED, STEP_STARTED, the tool call events, CUSTOM and the run's end carry the run event they came
 * from as `rawEvent`. A resumed stream (Last-Event-ID) is translated from the run's first event, its
 * events up to the resume point unsent: `reopen` gives what a client reading a new stream needs first.
 */

import type { RunEvent } from "../runs/events.js";
import type { AgentRunShapes } from "../runs/run-shapes.js";
import type { RunStep } from "../store/runs.js";
import type { AguiEvent } from "./event-type.js";

/** Reads a run's stored audit steps (for the tool results), given its id. */
export type StepReader = () => Promise<RunStep<AgentRunShapes>[]>;

/** A tool call whose result is still to be sent. */
interface PendingResult {
  toolCallId: string;
  status: string;
  errorCode: string | null;
}

/**
 * Translates one run's events into AG-UI events for the client's `threadId` and `runId` (the AG-UI run
 * id the client sent; the boundloop run id is in RUN_STARTED's `rawEvent`).
 */
export class AguiTranslator {
  private step: number | undefined;
  private stepOpening: AguiEvent | undefined;
  private runStarted: AguiEvent | undefined;
  private pending: PendingResult[] = [];
  /** Whether the event being translated is one the client already has (nothing of it is sent). */
  private seen = false;

  constructor(
    private readonly ids: { threadId: string; runId: string },
    private readonly readSteps: StepReader,
  ) {}

  /**
   * The AG-UI events of one run event, in order. `seen`: the client already has them (a resumed stream
   * replays the run's events up to Last-Event-ID to know the open step): they are not sent, so the tool
   * results they would close a step with are not read.
   */
  async translate(event: RunEvent, seen = false): Promise<AguiEvent[]> {
    const raw = { rawEvent: event };
    this.seen = seen;
    try {
      return await this.translateOne(event, raw);
    } finally {
      this.seen = false;
    }
  }

  /**
   * What a resumed stream sends before its first unseen event: RUN_STARTED again, and STEP_STARTED of
   * the step open at the resume point, as first sent. The official client checks each stream from its
   * start (RUN_STARTED first; no STEP_FINISHED of a step it did not see start).
   */
  reopen(): AguiEvent[] {
    return [this.runStarted, this.step === undefined ? undefined : this.stepOpening].filter(
      (event): event is AguiEvent => event !== undefined,
    );
  }

  /** The events of one run event (see {@link translate}). */
  private async translateOne(event: RunEvent, raw: { rawEvent: RunEvent }): Promise<AguiEvent[]> {
    switch (event.type) {
      case "run.started":
        this.runStarted = { type: "RUN_STARTED", ...this.ids, ...raw };
        return [this.runStarted];
      case "model.call.finished":
        return event.cycle === this.step
          ? []
          : [...(await this.closeStep()), this.openStep(event.cycle, event)];
      case "tool.call.started":
        return [
          ...(this.step === event.cycle
            ? []
            : [...(await this.closeStep()), this.openStep(event.cycle, event)]),
          { type: "TOOL_CALL_START", toolCallId: event.toolCallId, toolCallName: event.name, ...raw },
          {
            type: "TOOL_CALL_ARGS",
            toolCallId: event.toolCallId,
            delta: argumentsText(event.arguments),
            ...raw,
          },
          { type: "TOOL_CALL_END", toolCallId: event.toolCallId, ...raw },
        ];
      case "tool.call.finished":
        this.pending.push({ toolCallId: event.toolCallId, status: event.status, errorCode: event.errorCode });
        return [];
      case "run.finished":
        return [...(await this.closeStep()), ...this.finish(event)];
      default:
        return [{ type: "CUSTOM", name: `boundloop.${event.type}`, value: event, ...raw }];
    }
  }

  /** STEP_STARTED of cycle `cycle`. */
  private openStep(cycle: number, event: RunEvent): AguiEvent {
    this.step = cycle;
    this.stepOpening = { type: "STEP_STARTED", stepName: `cycle ${cycle}`, rawEvent: event };
    return this.stepOpening;
  }

  /** The open step's tool results, then its STEP_FINISHED (nothing when no step is open). */
  private async closeStep(): Promise<AguiEvent[]> {
    if (this.step === undefined) return [];
    const cycle = this.step;
    this.step = undefined;
    const results = await this.results();
    return [...results, { type: "STEP_FINISHED", stepName: `cycle ${cycle}` }];
  }

  /**
   * TOOL_CALL_RESULT of each pending call: the stored tool result when its step is there, else what the
   * event said (status and error code) — never model text.
   */
  private async results(): Promise<AguiEvent[]> {
    if (this.pending.length === 0) return [];
    const pending = this.pending;
    this.pending = [];
    if (this.seen) return [];
    const stored = new Map<string, unknown>();
    for (const step of await this.readSteps()) {
      for (const call of step.toolCalls) stored.set(call.id, call.result);
    }
    return pending.map((call) => ({
      type: "TOOL_CALL_RESULT",
      messageId: `${this.ids.runId}:result:${call.toolCallId}`,
      toolCallId: call.toolCallId,
      content: JSON.stringify(
        stored.get(call.toolCallId) ?? { status: call.status, errorCode: call.errorCode },
      ),
      role: "tool",
    }));
  }

  /** The answer as a text message, then RUN_FINISHED or RUN_ERROR by the run's status. */
  private finish(event: Extract<RunEvent, { type: "run.finished" }>): AguiEvent[] {
    const raw = { rawEvent: event };
    const events: AguiEvent[] = [];
    if (event.answer) {
      const messageId = `${this.ids.runId}:answer`;
      events.push(
        { type: "TEXT_MESSAGE_START", messageId, role: "assistant" },
        { type: "TEXT_MESSAGE_CONTENT", messageId, delta: event.answer },
        { type: "TEXT_MESSAGE_END", messageId },
      );
    }
    const result = {
      runId: event.runId,
      status: event.status,
      answer: event.answer,
      cycles: event.cycles,
      usage: event.usage,
    };
    if (event.status === "completed") {
      events.push({ type: "RUN_FINISHED", ...this.ids, result, ...raw });
    } else if (event.status === "cancelled") {
      events.push({
        type: "RUN_FINISHED",
        ...this.ids,
        result,
        outcome: { type: "cancelled" },
        ...raw,
      });
    } else {
      const message = `The run ended ${event.status}: ${event.reason ?? "no reason was recorded"}`;
      events.push({ type: "RUN_ERROR", message, code: event.status, ...raw });
    }
    return events;
  }
}

/** A tool call's arguments as the JSON text AG-UI streams (the raw text when they were not JSON). */
function argumentsText(value: unknown): string {
  return typeof value === "string" ? value : JSON.stringify(value ?? {});
}
