import { zeroUsage } from "../token-usage.js";
import type { Deadline } from "./deadline.js";
import { describeThrown } from "./dispatcher.js";
import type { ChatMessage, Model, ModelFailure, ModelReply, ModelTool } from "./model.js";
import { strictSchemaOf, type ToolDefinition } from "./tool.js";
import { chatSpan } from "./trace-spans.js";

/**
 * The result of one model step (`cycle-N:model`, `summary:model`; plain JSON): `expired` when the deadline
 * had passed before the call (no call was made), else the reply or failure with the call's wall time
 * `latencyMs` (ms).
 */
export type ModelStepResult =
  | { kind: "expired" }
  | (ModelReply & { latencyMs: number })
  | (ModelFailure & { latencyMs: number });

/**
 * One model call as a step's work: the deadline check (the clock read that decides whether the call is
 * made happens here, inside the step), then `model.call` with the deadline's signal, inside its `chat`
 * span (shared/agent/trace-spans.ts: only a call made has one, so a replayed step has none). A model
 * that throws despite the port's contract is a provider failure with the thrown text, never a crash.
 */
export async function callModel(
  model: Model,
  deadline: Deadline,
  messages: ChatMessage[],
  tools: readonly ModelTool[],
  toolChoice: "auto" | "none",
): Promise<ModelStepResult> {
  if (deadline.expired) return { kind: "expired" };
  return chatSpan(model, messages, async () => {
    const started = performance.now();
    let response: ModelReply | ModelFailure;
    try {
      response = await model.call({
        messages,
        tools,
        toolChoice,
        signal: deadline.signal,
        deadlineAt: deadline.at,
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
    return { ...response, latencyMs: Math.round(performance.now() - started) };
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
