import { Agent, OpenAIChatCompletionsModel, run, setTracingDisabled, tool } from "@openai/agents";
import OpenAI from "openai";
import { type ScenarioOptions, type ScenarioRunner, SYSTEM_PROMPT } from "./types.js";

/**
 * The OpenAI Agents SDK (@openai/agents) with its chat-completions model over the same openai client
 * options as ours, tools declared with its `tool()` (strict, from the same zod schemas), parallel tool
 * calls on, `maxTurns` = `maxCycles`. Tracing is disabled (it would export spans to OpenAI).
 */
export function createRunner(options: ScenarioOptions): ScenarioRunner {
  setTracingDisabled(true);
  const client = new OpenAI({ apiKey: "bench", baseURL: options.baseURL, maxRetries: 2 });
  const agent = new Agent({
    name: "bench",
    instructions: SYSTEM_PROMPT,
    model: new OpenAIChatCompletionsModel(client, options.model),
    modelSettings: { parallelToolCalls: true },
    tools: options.tools.map((definition) =>
      tool({
        name: definition.name,
        description: definition.description,
        parameters: definition.schema,
        strict: true,
        execute: async (input, _context, details) =>
          JSON.stringify(await definition.execute(input as Record<string, unknown>, details?.signal)),
      }),
    ),
  });
  return {
    framework: "openai-agents",
    async run(prompt) {
      const result = await run(agent, prompt, { maxTurns: options.maxCycles });
      if (typeof result.finalOutput !== "string") throw new Error("openai-agents run gave no text answer");
      return result.finalOutput;
    },
  };
}
