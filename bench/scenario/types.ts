import { z } from "zod";

/** The agent frameworks the benchmarks compare, each driving the same tools against the same model server. */
export type Framework = "boundloop" | "openai-agents" | "ai-sdk";

/**
 * A reference runner that is not a framework: the bare transport (scenario/bare-fetch.ts), and the same
 * exchange through the openai SDK boundloop must use (scenario/openai-sdk.ts).
 */
export type Reference = "bare-fetch" | "openai-sdk";

/** The system prompt every framework sends, so the requests differ only in what each framework adds. */
export const SYSTEM_PROMPT = "You are a benchmark agent. Use the tools, then answer in one word.";

/** Every framework, ours first. */
export const FRAMEWORKS: readonly Framework[] = ["boundloop", "openai-agents", "ai-sdk"];

/**
 * One benchmark tool, declared once and handed to each framework in its own tool format.
 * - `schema`: the tool's input (a zod object inside OpenAI's strict subset: every field required)
 * - `execute`: the tool body; receives the validated input and the framework's abort signal when it has one
 */
export interface ScenarioTool {
  name: string;
  description: string;
  schema: z.ZodObject;
  execute(input: Record<string, unknown>, signal?: AbortSignal): Promise<unknown>;
}

/**
 * The chat-completions tool definitions of the reference runners (bare-fetch, openai-sdk): each tool's
 * input as the JSON Schema (draft-07) zod derives from its schema, the form the peers send too, so the
 * floor's requests describe the same tools as every framework's (a model cannot call a tool whose
 * arguments it is not told). Built once per runner, not per request.
 */
export function chatToolDefinitions(tools: readonly ScenarioTool[]) {
  return tools.map((tool) => ({
    type: "function" as const,
    function: {
      name: tool.name,
      description: tool.description,
      parameters: z.toJSONSchema(tool.schema, { target: "draft-7" }) as Record<string, unknown>,
      strict: false,
    },
  }));
}

/**
 * What a framework runner needs: the OpenAI-compatible endpoint (`baseURL` ending in /v1), the model name,
 * the tools, and the most model calls a run may make (`maxCycles`).
 */
export interface ScenarioOptions {
  baseURL: string;
  model: string;
  tools: ScenarioTool[];
  maxCycles: number;
  /**
   * boundloop only: decide every tool call through the policy decision service as the service wires it
   * (shared/deps.ts policyServices) on the DynamoDB at `dynamoEndpoint` (table `table`, created if
   * missing), with `text` as the default set (POLICIES; null: none). With `quotaLimits` (quota
   * variables such as TENANT_TOKENS_PER_DAY), every run is also admitted and budgeted by the quotas as
   * the API wires them (shared/quotas/run-quota.ts admitSyncRun, finishBudget) on the same table.
   */
  policies?: {
    dynamoEndpoint: string;
    table: string;
    text: string | null;
    quotaLimits?: Record<string, string> | undefined;
  };
}

/** A framework, set up once (clients, tool definitions), that runs prompts to their final text answer. */
export interface ScenarioRunner {
  framework: Framework | Reference;
  /**
   * Runs one prompt to completion and returns the final answer.
   * @throws Error when the run does not complete with a text answer
   */
  run(prompt: string): Promise<string>;
  /**
   * boundloop with quotas only: ms the last run spent at its door and exit (admission before the loop,
   * the budget's finish after it), part of its wall time but not of the loop's.
   */
  lastDoorMs?: () => number;
}
