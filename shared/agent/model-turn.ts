import { type BudgetCall, DEFAULT_MIN_COMPLETION_TOKENS } from "./budget.js";
import { toolsAllowedFor } from "./dispatcher.js";
import type { ChatMessage, ModelTool, ModelUsage } from "./model.js";
import { callModel, type ModelStepResult, modelTools } from "./model-step.js";
import { initialMessages } from "./run-state.js";
import { runInline, type StepDescriptor } from "./step.js";
import { estimateTokens } from "./transcript.js";
import type { RunInput, RunUsage } from "./types.js";

/** UTF-8 bytes per estimated token of the tools' schemas (as shared/agent/transcript.ts counts messages). */
const TOOL_BYTES_PER_TOKEN = 3;

/**
 * The estimated prompt tokens of a request: its messages (shared/agent/transcript.ts `estimateTokens`, an
 * over-estimate) plus its tools' names, descriptions and JSON Schemas at 3 bytes a token.
 */
export function estimateRequestTokens(messages: readonly ChatMessage[], tools: readonly ModelTool[]): number {
  return estimateTokens(messages) + Math.ceil(toolsBytes(tools) / TOOL_BYTES_PER_TOKEN);
}

/** UTF-8 bytes of each tool's JSON, kept per tool object (modelTools returns the same objects every cycle). */
const toolBytesByTool = new WeakMap<ModelTool, number>();

/**
 * UTF-8 bytes of `JSON.stringify(tools)` (0 for none), without serializing the schemas again every call:
 * the brackets, the commas between the tools and each tool's own bytes.
 */
function toolsBytes(tools: readonly ModelTool[]): number {
  if (tools.length === 0) return 0;
  let bytes = 2 + tools.length - 1;
  for (const tool of tools) {
    let own = toolBytesByTool.get(tool);
    if (own === undefined) {
      own = Buffer.byteLength(JSON.stringify(tool), "utf8");
      toolBytesByTool.set(tool, own);
    }
    bytes += own;
  }
  return bytes;
}

/**
 * A run's first model call as its admission holds it (shared/quotas/): the estimated prompt of its first
 * request (the same messages and tools the loop will send) and the `max_tokens` the run's own bounds
 * allow, before any quota.
 */
export function firstCallOf(
  input: Pick<RunInput, "model" | "tools" | "security" | "prompt" | "history" | "systemPrompt" | "limits">,
): { promptTokens: number; maxTokens: number } {
  const tools = modelTools(toolsAllowedFor(input.tools, input.security));
  const promptTokens = estimateRequestTokens(initialMessages(input), tools);
  const runLeft = input.limits.maxTotalTokens - promptTokens;
  return { promptTokens, maxTokens: Math.min(input.model.maxTokens ?? runLeft, runLeft) };
}

/** What one model turn needs of the run as it stands: its messages and the tokens spent so far. */
export interface TurnState {
  messages: ChatMessage[];
  usage: RunUsage;
}

/**
 * One model call of a run, guarded, as one step (`turn.step`; its name gains `#<attempt>` after each wait).
 * Inside the step, in this order: the deadline check; the run's own token budget (`max_tokens` is the
 * smaller of the model's cap and what MAX_TOTAL_TOKENS leaves after the prompt's estimate; fewer than
 * the minimum completion tokens → `over_budget`); the run's quota budget, if any (`input.budget`:
 * reserve the call's worst case, or `over_quota`); then the call with that `max_tokens`. Outside it, the
 * budget observes the result (replayed ones too). A refused call may wait (`input.waitForQuota`, the
 * durable runner's) and is tried again under the next attempt's name; without a wait it is the result.
 */
export async function modelTurn(
  input: RunInput,
  state: TurnState,
  turn: { step: StepDescriptor; cycle: number; tools: readonly ModelTool[]; toolChoice: "auto" | "none" },
): Promise<ModelStepResult> {
  const step = input.step ?? runInline;
  for (let attempt = 0; ; attempt += 1) {
    const descriptor = attempt === 0 ? turn.step : { ...turn.step, name: `${turn.step.name}#${attempt}` };
    const result = await step(descriptor, () =>
      // Field by field: a spread followed by a property costs ~1 µs a call on Node 20 (V8 11).
      guardedCall(input, state, {
        name: descriptor.name,
        cycle: turn.cycle,
        tools: turn.tools,
        toolChoice: turn.toolChoice,
      }),
    );
    const decision =
      result.kind === "over_quota" ? result.budget : "budget" in result ? result.budget : undefined;
    if (decision) {
      const usage = result.kind === "reply" || result.kind === "failure" ? result.usage : null;
      input.budget?.observe(decision, usage);
    }
    if (result.kind !== "over_quota" || !input.waitForQuota) return result;
    const resume = await input.waitForQuota({ cycle: turn.cycle, attempt, refusal: result.budget.refusal });
    if (!resume) return result;
  }
}

/** The step's work: see {@link modelTurn}. */
async function guardedCall(
  input: RunInput,
  state: TurnState,
  turn: { name: string; cycle: number; tools: readonly ModelTool[]; toolChoice: "auto" | "none" },
): Promise<ModelStepResult> {
  const { deadline, limits } = input;
  if (deadline.expired) return { kind: "expired" };
  const promptTokens = estimateRequestTokens(state.messages, turn.tools);
  const runLeft = limits.maxTotalTokens - state.usage.totalTokens - promptTokens;
  const maxTokens = Math.min(input.model.maxTokens ?? Number.POSITIVE_INFINITY, runLeft);
  if (maxTokens < (input.minCompletionTokens ?? DEFAULT_MIN_COMPLETION_TOKENS)) {
    return { kind: "over_budget", promptTokens, maxTokens: Math.max(0, runLeft) };
  }
  const call: BudgetCall = { step: turn.name, cycle: turn.cycle, promptTokens, maxTokens };
  const decision = input.budget ? await input.budget.reserve(call) : undefined;
  if (decision?.kind === "refused") return { kind: "over_quota", budget: decision };
  const granted = decision?.maxTokens ?? maxTokens;
  const budget = input.budget;
  const result = await callModel(input.model, deadline, state.messages, turn.tools, turn.toolChoice, {
    maxTokens: granted,
    ...(budget ? { costOf: (usage: ModelUsage) => budget.costOf(usage) } : {}),
  });
  return decision ? Object.assign({}, result, { budget: decision }) : result;
}
