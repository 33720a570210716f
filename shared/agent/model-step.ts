import { zeroUsage } from "../token-usage.js";
import type { BudgetDecision, CallCost } from "./budget.js";
import type { Deadline } from "./deadline.js";
import { describeThrown } from "./dispatcher.js";
import type { ChatMessage, Model, ModelFailure, ModelReply, ModelTool, ModelUsage } from "./model.js";
import { strictSchemaOf, type ToolDefinition } from "./tool.js";
import { chatSpan } from "./trace-spans.js";

/**
 * The result of one model step (`cycle-N:model`, `summary:model`; plain JSON): `expired` when the deadline
 * had passed before the call, `over_budget` when the run's own token budget leaves fewer than the
 * minimum completion tokens after the prompt's estimate, `over_quota` when the run's quota budget
 * refused the call (no call was made in these three), else the reply or failure with the call's wall
 * time `latencyMs` (ms) and the budget's decision for it.
 */
export type ModelStepResult =
  | { kind: "expired" }
  | { kind: "over_budget"; promptTokens: number; maxTokens: number }
  | { kind: "over_quota"; budget: Extract<BudgetDecision, { kind: "refused" }> }
  | (ModelReply & { latencyMs: number; budget?: BudgetDecision; cost?: CallCost })
  | (ModelFailure & { latencyMs: number; budget?: BudgetDecision; cost?: CallCost });

/** A model step's result when a call was made: the reply or the failure. */
export type ModelCallResult = Extract<ModelStepResult, { kind: "reply" | "failure" }>;

/**
 * One model call as a step's work (its deadline check and budget come first: shared/agent/model-turn.ts):
 * `model.call` with the deadline's signal and `options.maxTokens` (sent as `max_tokens`), inside its
 * `chat` span, its result with `options.costOf` of its usage as `cost` (shared/agent/trace-spans.ts: only a call made has one, so a replayed step has none). A model
 * that throws despite the port's contract is a provider failure with the thrown text, never a crash.
 */
export function callModel(
  model: Model,
  deadline: Deadline,
  messages: ChatMessage[],
  tools: readonly ModelTool[],
  toolChoice: "auto" | "none",
  options: { maxTokens?: number; costOf?: (usage: ModelUsage) => CallCost } = {},
): Promise<ModelCallResult> {
  const { maxTokens, costOf } = options;
  return chatSpan(model, messages, async () => {
    const started = performance.now();
    let response: ModelReply | ModelFailure;
    try {
      response = await model.call({
        messages,
        tools,
        toolChoice,
        signal: deadline.signal,
        deadlineAt: deadline.wallClockAt(),
        ...(maxTokens === undefined ? {} : { maxTokens }),
      });
    } catch (error) {
      response = {
        kind: "failure",
        cause: "provider",
        status: null,
        message: describeThrown(error),
        usage: zeroUsage(),
      };
    }
    const latencyMs = Math.round(performance.now() - started);
    // Object.assign, not `{ ...response, latencyMs }`: on Node 20 (V8 11) a spread followed by more
    // properties costs about a microsecond; the result is the same object.
    const result = Object.assign({}, response, { latencyMs });
    return costOf ? Object.assign(result, { cost: costOf(response.usage) }) : result;
  });
}

/** Each tool as offered to the model, derived once per definition (definitions are built once). */
const modelToolByDefinition = new WeakMap<ToolDefinition, ModelTool>();

/**
 * A tool as offered to the model: name, description and its strict JSON Schema (see `strictSchemaOf`).
 * @throws ToolDefinitionError when the schema is outside the strict subset
 */
export function modelTool(definition: ToolDefinition): ModelTool {
  return {
    name: definition.name,
    description: definition.description,
    parameters: strictSchemaOf(definition).parameters,
  };
}

/**
 * The tools a run offers the model, as {@link ModelTool}s in the given order: the registry's tools
 * the caller may call (`toolsAllowedFor`, shared/agent/dispatcher.ts). Each tool's conversion is cached.
 */
export function modelTools(definitions: readonly ToolDefinition[]): ModelTool[] {
  return definitions.map((definition) => {
    let tool = modelToolByDefinition.get(definition);
    if (!tool) {
      tool = modelTool(definition);
      modelToolByDefinition.set(definition, tool);
    }
    return tool;
  });
}
