import type OpenAI from "openai";
import { z } from "zod";
import { type LocalModelServer, type ScriptedReply, startModelServer } from "../../local/model-server.js";
import { Deadline } from "../../shared/agent/deadline.js";
import { createRegistry, type InternalFailure } from "../../shared/agent/dispatcher.js";
import { type CycleRecord, type RunOutcome, runAgent } from "../../shared/agent/loop.js";
import { clampRunLimits, type RequestedRunLimits } from "../../shared/agent/run-limits.js";
import type { StepRunner } from "../../shared/agent/step.js";
import { defineTool, type ToolDefinition } from "../../shared/agent/tool.js";
import { loadConfig } from "../../shared/config.js";
import type { SecurityContext } from "../../shared/identity.js";
import { OpenAIChatModel } from "../../shared/model/openai-chat.js";
import { createModelClient } from "../../shared/model-client.js";
import { startedForFile } from "./file-hooks.js";

/** The server's default caps, from the single source of config (an empty environment). */
export const DEFAULT_CAPS = loadConfig({}).limits;

/** A caller with no permissions. */
export const READER: SecurityContext = { userId: "usr_1", tenantId: "tenant_a", permissions: [] };

/** What {@link runScripted} returns: the outcome, the audit records, when it ended, and the deadline. */
export interface ScriptedRun {
  outcome: RunOutcome;
  cycles: CycleRecord[];
  /** What the run's onInternalFailure hook got: the detail kept from the model, for the logs. */
  failures: InternalFailure[];
  /** Epoch ms when runAgent resolved. */
  endedAt: number;
  /** Epoch ms of the run's deadline. */
  deadlineAt: number;
}

/** A scripted local model server, the openai client pointed at it, and how to stop it. */
export interface ScriptedModel {
  model: LocalModelServer;
  client: OpenAI;
  stop(): Promise<void>;
}

/**
 * A local model server in scripted mode and a real openai client pointed at it, built by the service's
 * factory (createModelClient: the same fetch as production; SDK retries as given),
 * for loop tests. Call `stop()` in afterAll.
 */
export async function startScriptedModel(maxRetries = 0): Promise<ScriptedModel> {
  const model = await startModelServer({ script: [] });
  const client = createModelClient({ apiKey: "test", baseURL: model.baseURL, maxRetries });
  return { model, client, stop: () => model.stop() };
}

/**
 * The calling file's {@link startScriptedModel} (SDK retries `maxRetries`), started before its tests
 * and stopped after them.
 * @returns the scripted model, whose fields are set once the file's `beforeAll` has run
 */
export const scriptedModelForFile = (maxRetries = 0): ScriptedModel =>
  startedForFile(() => startScriptedModel(maxRetries));

/**
 * Runs the real loop against the scripted model (through the OpenAI chat-completions adapter): `script`
 * is the model's replies, `tools` the registry, `limits` lowers the default caps, `timeoutMs` is the
 * deadline (default 5000 ms), `step` the loop's step runner (default: inline).
 */
export async function runScripted(
  setup: { model: LocalModelServer; client: OpenAI },
  options: {
    script: ScriptedReply[];
    tools: ToolDefinition[];
    limits?: RequestedRunLimits;
    caps?: typeof DEFAULT_CAPS;
    timeoutMs?: number;
    security?: SecurityContext;
    step?: StepRunner;
  },
): Promise<ScriptedRun> {
  setup.model.requests.length = 0;
  setup.model.script(options.script);
  const deadline = new Deadline(options.timeoutMs ?? 5_000);
  const cycles: CycleRecord[] = [];
  const failures: InternalFailure[] = [];
  try {
    const outcome = await runAgent({
      model: new OpenAIChatModel(setup.client, "scripted"),
      tools: createRegistry(options.tools),
      security: options.security ?? READER,
      prompt: "test prompt",
      runId: "run_test",
      runScope: "run_test",
      limits: clampRunLimits(options.caps ?? DEFAULT_CAPS, options.limits),
      deadline,
      hooks: {
        onCycle: (record) => void cycles.push(record),
        onInternalFailure: (failure) => void failures.push(failure),
      },
      ...(options.step ? { step: options.step } : {}),
    });
    return { outcome, cycles, failures, endedAt: Date.now(), deadlineAt: deadline.at };
  } finally {
    deadline.dispose();
  }
}

/** A read-only tool `echo({ n })` returning `{ n }`, counting its calls in `calls`. */
export function echoTool(): ToolDefinition & { calls: number[] } {
  const calls: number[] = [];
  const tool = defineTool({
    name: "echo",
    description: "Returns n.",
    inputSchema: z.object({ n: z.number().int().max(100) }).strict(),
    isMutating: false,
    requiredPermission: undefined,
    handler: async ({ n }) => {
      calls.push(n);
      return { n };
    },
  });
  return Object.assign(tool as unknown as ToolDefinition, { calls });
}

/** A read-only tool `big()` returning `{ text }` of 20 000 "é": 40 011 bytes of JSON, over the default cap. */
export function bigTool(): ToolDefinition {
  const tool = defineTool({
    name: "big",
    description: "Returns 40 KB.",
    inputSchema: z.object({}).strict(),
    isMutating: false,
    requiredPermission: undefined,
    handler: async () => ({ text: "é".repeat(20_000) }),
  });
  return tool as unknown as ToolDefinition;
}

/** The tool messages of a recorded model request, as `{ id, result }` with the parsed ToolResult JSON. */
export function toolMessages(
  model: LocalModelServer,
  requestIndex: number,
): Array<{
  id: string;
  content: string;
  result: Record<string, unknown> & { error?: Record<string, unknown> };
}> {
  const request = model.requests[requestIndex];
  if (!request) throw new Error(`No model request #${requestIndex} (got ${model.requests.length}).`);
  return request.messages
    .filter((message) => message.role === "tool")
    .map((message) => ({
      id: String(message.tool_call_id),
      content: String(message.content),
      result: JSON.parse(String(message.content)) as Record<string, unknown>,
    }));
}

/** A tool call as the scripted model sends it. */
export const call = (id: string, name: string, args: unknown) => ({
  id,
  name,
  arguments: typeof args === "string" ? args : JSON.stringify(args),
});

/** Resolves after `ms`; rejects with the signal's reason as soon as `signal` aborts (a tool honouring it). */
export const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve, reject) => {
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener("abort", () => {
      clearTimeout(timer);
      reject(signal.reason);
    });
  });
