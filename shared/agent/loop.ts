import OpenAI from "openai";
import type {
  ChatCompletion,
  ChatCompletionMessageFunctionToolCall,
  ChatCompletionMessageParam,
} from "openai/resources/chat/completions";
import type { SecurityContext } from "../identity.js";
import { type Deadline, DeadlineExceededError } from "./deadline.js";
import { dispatchToolCall, type ToolRegistry } from "./dispatcher.js";
import { canonicalJson } from "./idempotency-key.js";
import type { ToolResult } from "./result.js";
import { toOpenAITool } from "./tool.js";

/** How a run ended. Every run ends in exactly one of these; none is an exception. */
export type RunStatus =
  | "completed"
  | "max_cycles_exceeded"
  | "deadline_exceeded"
  | "permission_denied"
  | "model_refused"
  | "model_output_truncated"
  | "model_error";

/** Token usage summed over every model call of a run (from the provider's `usage`). */
export interface RunUsage {
  promptTokens: number;
  completionTokens: number;
  totalTokens: number;
}

/**
 * The typed outcome of a run, with the partial transcript when it stopped early.
 * - `cycles`: model calls made (one cycle = one model call and the tool calls it asked for)
 * - `answer`: the model's final text, or null when the run did not complete
 * - `reason`: a human sentence on why a non-completed run stopped
 * - `durationMs`: wall time of the run in ms
 */
export interface RunOutcome {
  runId: string;
  status: RunStatus;
  answer: string | null;
  reason: string | null;
  cycles: number;
  toolResults: ToolResult[];
  usage: RunUsage;
  messages: ChatCompletionMessageParam[];
  durationMs: number;
}

/**
 * What happened in one cycle, for the audit trail (handed to {@link RunHooks.onCycle} after the
 * cycle's tool calls settle, or after the final model answer).
 * - `request`: a summary of the model request (message count, tools offered), never the prompt text
 * - `toolCalls`: each call's id, name, raw arguments, and its tool result (status, error code,
 *   latencyMs, idempotencyKey)
 * - `modelLatencyMs`: wall time of the model call in ms
 */
export interface CycleRecord {
  cycle: number;
  request: { messageCount: number; toolsOffered: string[] };
  finishReason: string | null;
  modelLatencyMs: number;
  usage: RunUsage;
  toolCalls: Array<{ id: string; name: string; arguments: string; result: ToolResult }>;
}

/** Optional observers of a run. A hook that throws is ignored: observers never change the outcome. */
export interface RunHooks {
  onCycle?: (record: CycleRecord) => Promise<void> | void;
}

/**
 * Everything one run needs, injected (no module singletons).
 * - `runScope`: the client's Idempotency-Key, else `runId` (feeds tool idempotency keys)
 * - `maxCycles`: cap on model calls (config MAX_CYCLES, default 5)
 * - `deadline`: the run's single deadline; its signal reaches every model and tool call
 */
export interface RunInput {
  client: OpenAI;
  model: string;
  tools: ToolRegistry;
  security: SecurityContext;
  prompt: string;
  runId: string;
  runScope: string;
  maxCycles: number;
  deadline: Deadline;
  systemPrompt?: string;
  hooks?: RunHooks;
}

/** The default instructions: the model chooses tools and phrases; the backend owns every number. */
export const DEFAULT_SYSTEM_PROMPT = [
  "You are boundloop, an accounting assistant. Use the tools for every number: never compute tax,",
  "totals or invoice ids yourself, and never invent a tool result. If a tool reports an error, explain it",
  "plainly. Record an invoice only when the user asked for it and its tax calculation succeeded.",
].join(" ");

/**
 * Runs the bounded agent loop: model call → concurrent tool calls → tool messages → … until the model
 * answers without tool calls, or a bound stops it. Never throws for model, tool or deadline failures.
 * Tool messages are appended exactly one per tool_call id, in call order.
 */
export async function runAgent(input: RunInput): Promise<RunOutcome> {
  const started = performance.now();
  const openAITools = [...input.tools.values()].map(toOpenAITool);
  const messages: ChatCompletionMessageParam[] = [
    { role: "system", content: input.systemPrompt ?? DEFAULT_SYSTEM_PROMPT },
    { role: "user", content: input.prompt },
  ];
  const toolResults: ToolResult[] = [];
  const usage: RunUsage = { promptTokens: 0, completionTokens: 0, totalTokens: 0 };
  let cycles = 0;

  const finish = (status: RunStatus, answer: string | null, reason: string | null): RunOutcome => ({
    runId: input.runId,
    status,
    answer,
    reason,
    cycles,
    toolResults,
    usage,
    messages,
    durationMs: Math.round(performance.now() - started),
  });

  while (cycles < input.maxCycles) {
    if (input.deadline.expired)
      return finish("deadline_exceeded", null, "The deadline passed before the next model call.");
    cycles += 1;
    let completion: ChatCompletion;
    const request = { messageCount: messages.length, toolsOffered: openAITools.map((t) => t.function.name) };
    const modelStarted = performance.now();
    try {
      completion = await input.client.chat.completions.create(
        { model: input.model, messages, tools: openAITools, parallel_tool_calls: true },
        { signal: input.deadline.signal, timeout: Math.max(1, input.deadline.remainingMs()) },
      );
    } catch (error) {
      if (input.deadline.expired || error instanceof DeadlineExceededError) {
        return finish("deadline_exceeded", null, "The deadline passed during a model call.");
      }
      const status = error instanceof OpenAI.APIError ? ` (status ${error.status ?? "none"})` : "";
      return finish("model_error", null, `The model provider failed${status}: ${(error as Error).message}`);
    }
    const modelLatencyMs = Math.round(performance.now() - modelStarted);
    const cycleUsage = addUsage(usage, completion);
    const choice = completion.choices[0];
    if (!choice) return finish("model_error", null, "The model returned no choices.");
    const message = choice.message;
    if (message.refusal) return finish("model_refused", null, message.refusal);
    if (choice.finish_reason === "length" || choice.finish_reason === "content_filter") {
      return finish(
        "model_output_truncated",
        null,
        `The model's output stopped early (${choice.finish_reason}).`,
      );
    }
    const toolCalls = (message.tool_calls ?? []).filter(
      (call): call is ChatCompletionMessageFunctionToolCall => call.type === "function",
    );
    const record = (calls: CycleRecord["toolCalls"]) =>
      notify(input.hooks, {
        cycle: cycles,
        request,
        finishReason: choice.finish_reason ?? null,
        modelLatencyMs,
        usage: cycleUsage,
        toolCalls: calls,
      });
    if (toolCalls.length === 0) {
      await record([]);
      return finish("completed", message.content ?? "", null);
    }

    messages.push({ role: "assistant", content: message.content ?? null, tool_calls: toolCalls });
    const seen = new Map<string, number>();
    const turnResults = await Promise.all(
      toolCalls.map((call) => {
        const identity = `${call.function.name}\u0000${canonicalArguments(call.function.arguments)}`;
        const occurrence = seen.get(identity) ?? 0;
        seen.set(identity, occurrence + 1);
        return dispatchToolCall(
          { id: call.id, name: call.function.name, arguments: call.function.arguments },
          input.tools,
          input.security,
          { runId: input.runId, runScope: input.runScope, occurrence, signal: input.deadline.signal },
        );
      }),
    );
    for (const result of turnResults) {
      toolResults.push(result);
      messages.push({
        role: "tool",
        tool_call_id: result.metadata.toolCallId,
        content: JSON.stringify(result),
      });
    }
    await record(
      toolCalls.map((call, index) => ({
        id: call.id,
        name: call.function.name,
        arguments: call.function.arguments,
        result: turnResults[index] as ToolResult,
      })),
    );
    const denied = turnResults.find((r) => r.status === "permission_denied");
    if (denied) {
      return finish(
        "permission_denied",
        null,
        `${denied.metadata.toolName} needs the permission "${String(denied.error?.details.requiredPermission)}", which the caller lacks.`,
      );
    }
    if (input.deadline.expired)
      return finish("deadline_exceeded", null, "The deadline passed during tool calls.");
  }
  return finish("max_cycles_exceeded", null, `The run reached its limit of ${input.maxCycles} cycles.`);
}

/** Canonical form of raw tool arguments (JCS when they are JSON, the raw text otherwise). */
function canonicalArguments(raw: string): string {
  try {
    return canonicalJson(JSON.parse(raw));
  } catch {
    return raw;
  }
}

/** Adds a completion's usage to the run total; returns the completion's own usage. */
function addUsage(usage: RunUsage, completion: ChatCompletion): RunUsage {
  const own = {
    promptTokens: completion.usage?.prompt_tokens ?? 0,
    completionTokens: completion.usage?.completion_tokens ?? 0,
    totalTokens: completion.usage?.total_tokens ?? 0,
  };
  usage.promptTokens += own.promptTokens;
  usage.completionTokens += own.completionTokens;
  usage.totalTokens += own.totalTokens;
  return own;
}

/** Calls the onCycle hook; a failing observer is ignored so it never changes the run's outcome. */
async function notify(hooks: RunHooks | undefined, record: CycleRecord): Promise<void> {
  try {
    await hooks?.onCycle?.(record);
  } catch {
    // Observers (audit writes, metrics) must not break a run; the run record's final write reports state.
  }
}
