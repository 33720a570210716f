import type { ModelTool } from "./model.js";
import type { ModelCallResult } from "./model-step.js";
import type { ToolResult } from "./result.js";
import type { TurnCall } from "./tool-turn.js";
import type { CycleRecord, RunHooks, RunStatus } from "./types.js";

/** What the audit record says about the model request: message count and tools offered, never the text. */
export type RequestSummary = CycleRecord["request"];

/** The request summary of a model call about to be made with `messageCount` messages and `tools`. */
export function requestSummary(messageCount: number, tools: readonly ModelTool[]): RequestSummary {
  return { messageCount, toolsOffered: tools.map((tool) => tool.name) };
}

/**
 * The audit record of one cycle (see {@link CycleRecord}) from its model step result, its calls and their
 * (capped) results in call order, and the status when the cycle ended the run.
 */
export function cycleRecord(parts: {
  cycle: number;
  request: RequestSummary;
  model: ModelCallResult;
  calls?: TurnCall[];
  results?: ToolResult[];
  outcome?: RunStatus | undefined;
  summary?: boolean;
}): CycleRecord {
  const { model, calls = [], results = [] } = parts;
  return {
    cycle: parts.cycle,
    request: parts.request,
    finishReason: model.kind === "reply" ? model.finishReason : null,
    modelLatencyMs: model.latencyMs,
    usage: model.usage,
    ...(model.cost ? { cost: model.cost } : {}),
    toolCalls: calls.map((call, index) => ({
      id: call.id,
      ...(call.originalId === undefined ? {} : { originalId: call.originalId }),
      name: call.name,
      arguments: call.arguments,
      result: results[index] as ToolResult,
    })),
    ...(parts.outcome === undefined ? {} : { outcome: parts.outcome }),
    ...(parts.summary ? { summary: true } : {}),
  };
}

/**
 * Calls the onCycle hook with `record()`; a failing observer is ignored so it never changes the run's
 * outcome. Without an onCycle hook the record is never built (no per-cycle work nobody reads).
 */
export async function notify(hooks: RunHooks | undefined, record: () => CycleRecord): Promise<void> {
  const onCycle = hooks?.onCycle;
  if (!onCycle) return;
  try {
    await onCycle(record());
  } catch {
    // Observers (audit writes, metrics) must not break a run; the run record's final write reports state.
  }
}
