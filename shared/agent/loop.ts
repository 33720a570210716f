import type { ClientOptions, default as OpenAI } from "openai";
import { APIError, APIUserAbortError } from "openai/core/error";
import type {
  ChatCompletion,
  ChatCompletionFunctionTool,
  ChatCompletionMessage,
  ChatCompletionMessageFunctionToolCall,
  ChatCompletionMessageParam,
} from "openai/resources/chat/completions";
import type { SecurityContext } from "../identity.js";
import { type ContextLengthDetails, contextLengthStop } from "./context-length.js";
import { type Deadline, raceAbort } from "./deadline.js";
import { dispatchToolCall, notStartedResult, type ToolCallRequest, type ToolRegistry } from "./dispatcher.js";
import type { HistoryMessage } from "./history.js";
import { canonicalJson } from "./idempotency-key.js";
import type { RunLimits } from "./limits.js";
import { capToolResult, type ToolResult } from "./result.js";
import { toOpenAITool } from "./tool.js";

/** How a run ended. Every run ends in exactly one of these; none is an exception. */
export type RunStatus =
  | "completed"
  | "max_cycles_exceeded"
  | "deadline_exceeded"
  | "budget_exceeded"
  | "permission_denied"
  | "loop_detected"
  | "model_refused"
  | "model_output_truncated"
  | "model_error"
  | "context_length_exceeded";

/** Token usage summed over every model call of a run (from the provider's `usage`). */
export interface RunUsage {
  promptTokens: number;
  completionTokens: number;
  totalTokens: number;
}

/**
 * Machine-readable facts about why a run stopped; only the entry for the run's status is set.
 * - `budget` (budget_exceeded): the budget that ran out, its limit and the amount used
 * - `permission` (permission_denied): the tool and the permission the caller lacks
 * - `loop` (loop_detected): the repeated tool, its canonical arguments, the error code, how many times it
 *   failed, and whether the model had been given a final hint
 * - `modelError` (model_error): the provider's HTTP status (null without an HTTP response) and message
 * - `deadline` (deadline_exceeded): the phase the deadline hit and the deadline (epoch ms)
 * - `finishReason` (model_output_truncated): "length" or "content_filter"
 * - `summarized` (max_cycles_exceeded): whether the tool-less summary call produced `answer`
 * - `contextLength` (context_length_exceeded): the provider's refusal and the size of the history and
 *   request it refused, see {@link ContextLengthDetails}
 */
export interface RunOutcomeDetails {
  budget?: { name: "maxTotalTokens" | "maxToolCallsPerRun"; limit: number; used: number };
  permission?: { toolName: string; requiredPermission: string };
  loop?: { toolName: string; arguments: string; errorCode: string; failures: number; hinted: boolean };
  modelError?: { status: number | null; message: string };
  deadline?: { phase: "before_model_call" | "model_call" | "tool_calls"; deadlineAt: number };
  finishReason?: string;
  summarized?: boolean;
  contextLength?: ContextLengthDetails;
}

/**
 * The typed outcome of a run, with the partial transcript when it stopped early.
 * - `cycles`: model calls made (one cycle = one model call and the tool calls it asked for); the optional
 *   summary call at the cycle limit is not counted
 * - `answer`: the model's final text; null when the run did not complete (except a summary at the limit)
 * - `reason`: a human sentence on why a non-completed run stopped
 * - `toolResults`: one per tool call the model asked for, in call order (started or not)
 * - `durationMs`: wall time of the run in ms
 * - `modelErrorStatus`: for `model_error`, the provider's HTTP status (e.g. 503; null when there was no
 *   HTTP response); null for every other status. The HTTP layer maps model_error to 502 MODEL_UNAVAILABLE.
 * - `details`: structured facts for the status, see {@link RunOutcomeDetails}
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
  modelErrorStatus: number | null;
  details: RunOutcomeDetails;
}

/**
 * What happened in one cycle, for the audit trail (handed to {@link RunHooks.onCycle} once per model
 * call, including the last one and one that failed).
 * - `request`: a summary of the model request (message count, tools offered), never the prompt text
 * - `finishReason`: the provider's finish_reason; null when the model call failed
 * - `toolCalls`: each call's id (re-keyed when the model repeated an id; `originalId` then holds the
 *   model's), name, raw arguments, and its tool result (status, error code, latencyMs, idempotencyKey)
 * - `modelLatencyMs`: wall time of the model call in ms
 * - `outcome`: the run's status when this cycle ended the run
 * - `summary`: true for the tool-less summary call at the cycle limit
 */
export interface CycleRecord {
  cycle: number;
  request: { messageCount: number; toolsOffered: string[] };
  finishReason: string | null;
  modelLatencyMs: number;
  usage: RunUsage;
  toolCalls: Array<{ id: string; originalId?: string; name: string; arguments: string; result: ToolResult }>;
  outcome?: RunStatus;
  summary?: boolean;
}

/** Optional observers of a run. A hook that throws is ignored: observers never change the outcome. */
export interface RunHooks {
  onCycle?: (record: CycleRecord) => Promise<void> | void;
}

/**
 * Everything one run needs, injected (no module singletons).
 * - `runScope`: the client's Idempotency-Key, else `runId` (feeds tool idempotency keys)
 * - `limits`: the run's bounds (`clampRunLimits(config.limits, request)`); `limits.maxCycles` caps model calls
 * - `deadline`: the run's single deadline; its signal reaches every model and tool call. Build it from
 *   `Deadline.budgetMs(limits.runTimeoutMs, lambdaRemainingMs, config.limits.deadlineReserveMs)`.
 * - `history`: an earlier conversation to continue (shared/conversation.ts loads and trims it), sent
 *   between the system prompt and `prompt`; never holds a system message
 */
export interface RunInput {
  client: OpenAI;
  model: string;
  tools: ToolRegistry;
  security: SecurityContext;
  prompt: string;
  runId: string;
  runScope: string;
  limits: RunLimits;
  deadline: Deadline;
  systemPrompt?: string;
  history?: HistoryMessage[];
  hooks?: RunHooks;
}

/** The default instructions: the model chooses tools and phrases; the backend owns every number. */
export const DEFAULT_SYSTEM_PROMPT = [
  "You are boundloop, an accounting assistant. Use the tools for every number: never compute tax,",
  "totals or invoice ids yourself, and never invent a tool result. If a tool reports an error, explain it",
  "plainly. Record an invoice only when the user asked for it and its tax calculation succeeded.",
].join(" ");

/**
 * Runs the bounded agent loop: model call → tool calls (concurrent, capped) → tool messages → … until the
 * model answers without tool calls, or a bound stops it. Never throws for model, tool, budget or deadline
 * failures: every run ends as a {@link RunOutcome}. Each tool_call id gets exactly one tool message, in
 * call order. Checks, in this order:
 * - before each model call: cycle limit, deadline, token budget
 * - after it: transport failure (model_error / deadline_exceeded; a context-window refusal is
 *   context_length_exceeded), refusal (model_refused), finish_reason
 *   length or content_filter (model_output_truncated; nothing is dispatched), no tool calls (completed)
 * - after the turn's tool calls settle: permission_denied, deadline_exceeded, budget_exceeded (tokens or
 *   tool calls per run), loop_detected
 */
export async function runAgent(input: RunInput): Promise<RunOutcome> {
  const { limits, deadline } = input;
  const run = new RunState(input);
  const tools = openAITools(input.tools);
  const model = new ModelCaller(input, tools);

  while (run.cycles < limits.maxCycles) {
    if (deadline.expired) {
      return run.end({
        status: "deadline_exceeded",
        reason: "The deadline passed before the next model call.",
        details: { deadline: { phase: "before_model_call", deadlineAt: deadline.at } },
      });
    }
    if (run.usage.totalTokens >= limits.maxTotalTokens) return run.end(run.tokenBudgetStop());
    run.cycles += 1;
    const cycle = run.startCycle(tools);
    const reply = await model.call(run.messages, "auto");
    run.addUsage(reply.usage);

    if (reply.kind === "failed") {
      await cycle.record(reply, [], reply.stop.status);
      return run.end(reply.stop);
    }
    const { message, finishReason } = reply;
    if (message.refusal) {
      await cycle.record(reply, [], "model_refused");
      return run.end({
        status: "model_refused",
        reason: `The model refused: ${message.refusal}`,
        details: {},
      });
    }
    if (finishReason === "length" || finishReason === "content_filter") {
      // A cut-off response may hold cut-off tool calls: none of them is dispatched.
      await cycle.record(reply, [], "model_output_truncated");
      return run.end({
        status: "model_output_truncated",
        reason: `The model's output stopped early (finish_reason ${finishReason}); no tool call was run.`,
        details: { finishReason },
      });
    }
    const calls = withUniqueIds(functionCalls(message), run.cycles);
    if (calls.length === 0) {
      await cycle.record(reply, [], "completed");
      return run.end({ status: "completed", reason: null, details: {} }, message.content ?? "");
    }

    run.messages.push({
      role: "assistant",
      content: message.content ?? null,
      tool_calls: calls.map((call) => ({
        id: call.id,
        type: "function",
        function: { name: call.name, arguments: call.arguments },
      })),
    });
    const overTokenBudget = run.usage.totalTokens >= limits.maxTotalTokens;
    const results = overTokenBudget ? calls.map(tokenBudgetResult) : await run.dispatchTurn(calls);
    const loop = run.breakLoops(calls, results);
    run.addToolResults(results);

    // The turn has settled: every call has its tool message. Does the run stop here?
    const denied = results.find((result) => result.status === "permission_denied");
    let stop: Stop | undefined;
    if (denied) {
      const requiredPermission = String(denied.error?.details.requiredPermission);
      stop = {
        status: "permission_denied",
        reason: `${denied.metadata.toolName} needs the permission "${requiredPermission}", which the caller lacks.`,
        details: { permission: { toolName: denied.metadata.toolName, requiredPermission } },
      };
    } else if (deadline.expired) {
      stop = {
        status: "deadline_exceeded",
        reason: "The deadline passed during tool calls.",
        details: { deadline: { phase: "tool_calls", deadlineAt: deadline.at } },
      };
    } else if (overTokenBudget) {
      stop = run.tokenBudgetStop();
    } else if (run.toolCallsRefused) {
      stop = {
        status: "budget_exceeded",
        reason: `The run reached its limit of ${limits.maxToolCallsPerRun} tool calls.`,
        details: {
          budget: {
            name: "maxToolCallsPerRun",
            limit: limits.maxToolCallsPerRun,
            used: run.toolCallsStarted,
          },
        },
      };
    } else if (loop) {
      stop = {
        status: "loop_detected",
        reason:
          `${loop.toolName} failed with ${loop.errorCode} ${loop.failures} times with the same arguments, ` +
          "after the model was told the next identical failure would end the run.",
        details: { loop },
      };
    }
    await cycle.record(reply, calls, stop?.status);
    if (stop) return run.end(stop);
  }

  // The cycle limit: optionally one last call with tools off, so the model can summarize.
  const reason = `The run reached its limit of ${limits.maxCycles} cycles.`;
  const budgetLeft = run.usage.totalTokens < limits.maxTotalTokens;
  if (!limits.summarizeOnMaxCycles || deadline.expired || !budgetLeft) {
    return run.end({ status: "max_cycles_exceeded", reason, details: { summarized: false } });
  }
  const cycle = run.startCycle(tools, true);
  const reply = await model.call(run.messages, "none");
  run.addUsage(reply.usage);
  await cycle.record(reply, [], "max_cycles_exceeded");
  const answer = reply.kind === "answered" && !reply.message.refusal ? (reply.message.content ?? null) : null;
  return run.end({ status: "max_cycles_exceeded", reason, details: { summarized: answer !== null } }, answer);
}

/** Why a run stops: its status, a human sentence (null for completed) and the structured details. */
interface Stop {
  status: RunStatus;
  reason: string | null;
  details: RunOutcomeDetails;
}

/** The mutable state of one run: transcript, results, usage, counters; and how it ends. */
class RunState {
  readonly messages: ChatCompletionMessageParam[];
  readonly toolResults: ToolResult[] = [];
  readonly usage: RunUsage = { promptTokens: 0, completionTokens: 0, totalTokens: 0 };
  cycles = 0;
  /** Tool calls dispatched so far (validation failures included: they reached the dispatcher). */
  toolCallsStarted = 0;
  /** True once a call was refused because the run's tool-call budget was spent. */
  toolCallsRefused = false;
  /** Identical failures so far, by tool + canonical arguments + error code. */
  private readonly failures = new Map<string, number>();
  private readonly started = performance.now();

  constructor(private readonly input: RunInput) {
    this.messages = [
      { role: "system", content: input.systemPrompt ?? DEFAULT_SYSTEM_PROMPT },
      ...(input.history ?? []),
      { role: "user", content: input.prompt },
    ];
  }

  /** The run's outcome. `answer` is set for completed runs (and a summary at the cycle limit). */
  end({ status, reason, details }: Stop, answer: string | null = null): RunOutcome {
    return {
      runId: this.input.runId,
      status,
      answer,
      reason,
      cycles: this.cycles,
      toolResults: this.toolResults,
      usage: this.usage,
      messages: this.messages,
      durationMs: Math.round(performance.now() - this.started),
      modelErrorStatus: details.modelError?.status ?? null,
      details,
    };
  }

  /** The stop for a spent token budget. */
  tokenBudgetStop(): Stop {
    const limit = this.input.limits.maxTotalTokens;
    return {
      status: "budget_exceeded",
      reason: `The run used ${this.usage.totalTokens} tokens, its budget is ${limit}.`,
      details: { budget: { name: "maxTotalTokens", limit, used: this.usage.totalTokens } },
    };
  }

  addUsage(usage: RunUsage): void {
    this.usage.promptTokens += usage.promptTokens;
    this.usage.completionTokens += usage.completionTokens;
    this.usage.totalTokens += usage.totalTokens;
  }

  /** Starts the audit record of the current cycle; `record` hands it to the onCycle hook. */
  startCycle(tools: ChatCompletionFunctionTool[], summary = false) {
    const cycle = summary ? this.cycles + 1 : this.cycles;
    const request = { messageCount: this.messages.length, toolsOffered: tools.map((t) => t.function.name) };
    const hooks = this.input.hooks;
    const results = this.toolResults;
    return {
      async record(reply: ModelReply, calls: TurnCall[], outcome: RunStatus | undefined): Promise<void> {
        const turn = results.slice(results.length - calls.length);
        await notify(hooks, {
          cycle,
          request,
          finishReason: reply.kind === "answered" ? reply.finishReason : null,
          modelLatencyMs: reply.latencyMs,
          usage: reply.usage,
          toolCalls: calls.map((call, index) => ({
            id: call.id,
            ...(call.originalId === undefined ? {} : { originalId: call.originalId }),
            name: call.name,
            arguments: call.arguments,
            result: turn[index] as ToolResult,
          })),
          ...(outcome === undefined ? {} : { outcome }),
          ...(summary ? { summary } : {}),
        });
      },
    };
  }

  /**
   * Runs one turn's tool calls, at most `maxConcurrentToolCalls` at a time, and returns their results in
   * call order. Calls past `maxToolCallsPerTurn` get validation_error TOO_MANY_TOOL_CALLS, calls past
   * the run's `maxToolCallsPerRun` get fatal_error BUDGET_EXCEEDED; neither kind runs.
   */
  async dispatchTurn(calls: TurnCall[]): Promise<ToolResult[]> {
    const { limits, deadline, tools, security, runId, runScope } = this.input;
    const seen = new Map<string, number>();
    const jobs = calls.map((call, index) => {
      if (index >= limits.maxToolCallsPerTurn) {
        return () =>
          Promise.resolve(
            notStartedResult(call, "validation_error", {
              code: "TOO_MANY_TOOL_CALLS",
              message: `At most ${limits.maxToolCallsPerTurn} tool calls run per turn; this one did not run. Ask for it again in the next turn.`,
              details: { maxToolCallsPerTurn: limits.maxToolCallsPerTurn },
              retryable: true,
            }),
          );
      }
      if (this.toolCallsStarted >= limits.maxToolCallsPerRun) {
        this.toolCallsRefused = true;
        return () =>
          Promise.resolve(
            notStartedResult(call, "fatal_error", {
              code: "BUDGET_EXCEEDED",
              message: `The run reached its limit of ${limits.maxToolCallsPerRun} tool calls; this one did not run.`,
              details: { maxToolCallsPerRun: limits.maxToolCallsPerRun },
              retryable: false,
            }),
          );
      }
      this.toolCallsStarted += 1;
      // `occurrence` only feeds a mutating tool's idempotency key: other tools skip the canonical form.
      let occurrence = 0;
      if (tools.get(call.name)?.isMutating) {
        const identity = `${call.name}\u0000${canonicalArguments(call.arguments)}`;
        occurrence = seen.get(identity) ?? 0;
        seen.set(identity, occurrence + 1);
      }
      return () =>
        dispatchToolCall(call, tools, security, {
          runId,
          runScope,
          occurrence,
          signal: deadline.signal,
          remainingMs: () => deadline.remainingMs(),
        });
    });
    return mapConcurrent(jobs, limits.maxConcurrentToolCalls);
  }

  /**
   * The loop breaker. Counts each failed call by tool + canonical arguments + error code. At
   * `loopBreakerThreshold` identical failures the tool result gets a final hint (message and
   * `details.loopWarning`); the next identical failure is returned as the loop that ends the run.
   * Calls that never started and deadline stops are not counted.
   */
  breakLoops(calls: TurnCall[], results: ToolResult[]): RunOutcomeDetails["loop"] | undefined {
    const threshold = this.input.limits.loopBreakerThreshold;
    let loop: RunOutcomeDetails["loop"] | undefined;
    results.forEach((result, index) => {
      const call = calls[index];
      const error = result.error;
      if (!call || !error || result.status === "success" || error.details.started === false) return;
      if (error.code === "DEADLINE_EXCEEDED") return;
      const args = canonicalArguments(call.arguments);
      const key = canonicalJson([call.name, args, error.code]);
      const failures = (this.failures.get(key) ?? 0) + 1;
      this.failures.set(key, failures);
      if (failures === threshold) {
        error.message += ` This exact call has now failed ${failures} times with ${error.code}. Do not repeat it unchanged: the next identical failure ends the run.`;
        error.details = { ...error.details, loopWarning: { failures, threshold } };
      } else if (failures > threshold) {
        loop ??= { toolName: call.name, arguments: args, errorCode: error.code, failures, hinted: true };
      }
    });
    return loop;
  }

  /** Appends the turn's tool results (capped to `maxToolResultBytes`) and one tool message per call. */
  addToolResults(results: ToolResult[]): void {
    for (const original of results) {
      const { result, json } = capToolResult(original, this.input.limits.maxToolResultBytes);
      this.toolResults.push(result);
      this.messages.push({ role: "tool", tool_call_id: result.metadata.toolCallId, content: json });
    }
  }
}

/** A model reply, or a failed model call with the outcome it forces. `latencyMs` is the call's wall time. */
type ModelReply =
  | {
      kind: "answered";
      message: ChatCompletionMessage;
      finishReason: string | null;
      usage: RunUsage;
      latencyMs: number;
    }
  | { kind: "failed"; stop: Stop; usage: RunUsage; latencyMs: number };

/** The `fetchOptions` of a chat-completions request (the SDK's RequestInit extension). */
type ModelFetchOptions = NonNullable<
  NonNullable<Parameters<OpenAI["chat"]["completions"]["create"]>[1]>["fetchOptions"]
>;

/** The fetchOptions key under which a model call hands the observing fetch its failed-status callback. */
const FAILED_STATUS_SINK = Symbol("boundloop.failedStatusSink");

/** The per-client observing wrappers, built once per openai client (see {@link observedClient}). */
const observedClients = new WeakMap<OpenAI, OpenAI>();

/**
 * The client wrapped (`withOptions({ fetch })`, the SDK's own hook) so each model call sees the HTTP
 * status of its failed attempts: the call passes a callback in its `fetchOptions` (the SDK hands those to
 * every `fetch` of the call, retries included), and the wrapping fetch calls it for a response that is not
 * ok. Built once per client and cached: `withOptions` constructs a whole client (every API resource), too
 * costly to repeat for each run (bench/ P1).
 */
function observedClient(client: OpenAI): OpenAI {
  let observed = observedClients.get(client);
  if (!observed) {
    // The client's configured fetch and options (the SDK keeps both private). `withOptions` copies the
    // resolved `apiKey` string, which is "Missing Key" for a client built with an apiKey *function* (a
    // key read lazily from Secrets Manager), so the original option is passed on explicitly.
    const { fetch: baseFetch, _options } = client as unknown as {
      fetch: typeof fetch;
      _options: { apiKey?: ClientOptions["apiKey"] };
    };
    observed = client.withOptions({
      ...(_options.apiKey === undefined ? {} : { apiKey: _options.apiKey }),
      fetch: async (url, init) => {
        const response = await baseFetch.call(undefined, url, init);
        if (!response.ok) {
          (init as { [FAILED_STATUS_SINK]?: (status: number) => void } | undefined)?.[FAILED_STATUS_SINK]?.(
            response.status,
          );
        }
        return response;
      },
    });
    observedClients.set(client, observed);
  }
  return observed;
}

/**
 * Makes the run's model calls with the real openai client. Each call carries the deadline's signal and
 * the time left as `timeout`, and is raced against the deadline, so neither a slow response nor the SDK's
 * retry backoff (429/5xx, `maxRetries` of the client) outlives the deadline. Through
 * {@link observedClient} each call sees the HTTP status of its failed attempts, so a provider still
 * failing when the deadline cuts its retries short ends `model_error` with that status.
 */
class ModelCaller {
  private readonly client: OpenAI;
  private lastFailedStatus: number | null = null;
  private readonly fetchOptions = {
    [FAILED_STATUS_SINK]: (status: number) => {
      this.lastFailedStatus = status;
    },
  } as ModelFetchOptions;

  constructor(
    private readonly input: RunInput,
    private readonly tools: ChatCompletionFunctionTool[],
  ) {
    this.client = observedClient(input.client);
  }

  async call(messages: ChatCompletionMessageParam[], toolChoice: "auto" | "none"): Promise<ModelReply> {
    const { deadline } = this.input;
    const started = performance.now();
    const latency = () => Math.round(performance.now() - started);
    const noUsage = { promptTokens: 0, completionTokens: 0, totalTokens: 0 };
    this.lastFailedStatus = null;
    let completion: ChatCompletion;
    try {
      completion = await raceAbort(
        this.client.chat.completions.create(
          {
            model: this.input.model,
            messages,
            ...(this.tools.length > 0
              ? { tools: this.tools, tool_choice: toolChoice, parallel_tool_calls: true }
              : {}),
          },
          {
            signal: deadline.signal,
            timeout: Math.max(1, deadline.remainingMs()),
            fetchOptions: this.fetchOptions,
          },
        ),
        deadline.signal,
      );
    } catch (error) {
      const failed = (status: RunStatus, reason: string, details: RunOutcomeDetails): ModelReply => ({
        kind: "failed",
        stop: { status, reason, details },
        usage: noUsage,
        latencyMs: latency(),
      });
      if (deadline.expired || error instanceof APIUserAbortError) {
        if (this.lastFailedStatus !== null) {
          const status = this.lastFailedStatus;
          return failed(
            "model_error",
            `The model provider was still failing (HTTP ${status}) at the deadline.`,
            {
              modelError: { status, message: `HTTP ${status}; retries were cut short by the deadline` },
            },
          );
        }
        return failed("deadline_exceeded", "The deadline passed during a model call.", {
          deadline: { phase: "model_call", deadlineAt: deadline.at },
        });
      }
      const contextLength = contextLengthStop(error, messages, this.input.history ?? []);
      if (contextLength) {
        return failed("context_length_exceeded", contextLength.reason, {
          contextLength: contextLength.details,
        });
      }
      const status = error instanceof APIError ? (error.status ?? null) : null;
      const message = error instanceof Error ? error.message : String(error);
      return failed(
        "model_error",
        `The model provider failed${status ? ` (HTTP ${status})` : ""}: ${message}`,
        {
          modelError: { status, message },
        },
      );
    }
    const usage = {
      promptTokens: completion.usage?.prompt_tokens ?? 0,
      completionTokens: completion.usage?.completion_tokens ?? 0,
      totalTokens: completion.usage?.total_tokens ?? 0,
    };
    const choice = completion.choices[0];
    if (!choice) {
      return {
        kind: "failed",
        stop: {
          status: "model_error",
          reason: "The model returned no choices.",
          details: { modelError: { status: null, message: "no choices" } },
        },
        usage,
        latencyMs: latency(),
      };
    }
    return {
      kind: "answered",
      message: choice.message,
      finishReason: choice.finish_reason ?? null,
      usage,
      latencyMs: latency(),
    };
  }
}

/** A tool call of the current turn, with a unique id (`originalId` is the model's id when it was re-keyed). */
interface TurnCall extends ToolCallRequest {
  originalId?: string;
}

/** The function tool calls of an assistant message, in order. */
function functionCalls(message: ChatCompletionMessage): TurnCall[] {
  return (message.tool_calls ?? [])
    .filter((call): call is ChatCompletionMessageFunctionToolCall => call.type === "function")
    .map((call) => ({ id: call.id, name: call.function.name, arguments: call.function.arguments }));
}

/**
 * Gives every call of a turn a unique id, deterministically: the first holder of an id keeps it; a
 * repeated or empty id becomes `<id>~<n>` (or `call_<cycle>_<index>`), skipping ids already in use. The
 * assistant message and the tool messages both use the new ids, so the transcript stays valid.
 */
function withUniqueIds(calls: TurnCall[], cycle: number): TurnCall[] {
  const modelIds = new Set(calls.map((call) => call.id));
  const used = new Set<string>();
  return calls.map((call, index) => {
    if (call.id && !used.has(call.id)) {
      used.add(call.id);
      return call;
    }
    const base = call.id || `call_${cycle}_${index}`;
    let id = base;
    for (let n = 1; used.has(id) || modelIds.has(id); n++) id = `${base}~${n}`;
    used.add(id);
    return { ...call, id, originalId: call.id };
  });
}

/** The result of a call that was not run because the model call that asked for it spent the token budget. */
function tokenBudgetResult(call: TurnCall): ToolResult {
  return notStartedResult(call, "fatal_error", {
    code: "BUDGET_EXCEEDED",
    message:
      "The run's token budget was spent by the model call that asked for this tool call; it did not run.",
    retryable: false,
  });
}

/** The OpenAI function tools of a registry, derived once per registry (registries are built once). */
const openAIToolsByRegistry = new WeakMap<ToolRegistry, ChatCompletionFunctionTool[]>();

/** The registry's tools as OpenAI chat-completions function tools (strict), in registry order; cached. */
function openAITools(registry: ToolRegistry): ChatCompletionFunctionTool[] {
  let tools = openAIToolsByRegistry.get(registry);
  if (!tools || tools.length !== registry.size) {
    tools = [...registry.values()].map(toOpenAITool);
    openAIToolsByRegistry.set(registry, tools);
  }
  return tools;
}

/** Canonical form of raw tool arguments (JCS when they are JSON, the raw text otherwise). */
function canonicalArguments(raw: string): string {
  try {
    return canonicalJson(JSON.parse(raw));
  } catch {
    return raw;
  }
}

/** Runs `jobs` with at most `limit` at a time; results in job order. */
async function mapConcurrent<T>(jobs: Array<() => Promise<T>>, limit: number): Promise<T[]> {
  const results = new Array<T>(jobs.length);
  let next = 0;
  const worker = async () => {
    while (next < jobs.length) {
      const index = next++;
      results[index] = await (jobs[index] as () => Promise<T>)();
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(limit, jobs.length)) }, worker));
  return results;
}

/** Calls the onCycle hook; a failing observer is ignored so it never changes the run's outcome. */
async function notify(hooks: RunHooks | undefined, record: CycleRecord): Promise<void> {
  try {
    await hooks?.onCycle?.(record);
  } catch {
    // Observers (audit writes, metrics) must not break a run; the run record's final write reports state.
  }
}
