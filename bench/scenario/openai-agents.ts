import { Agent, OpenAIProvider, Runner, setTracingDisabled, tool } from "@openai/agents";
import { type ScenarioOptions, type ScenarioRunner, SYSTEM_PROMPT } from "./types.js";

/**
 * The OpenAI Agents SDK (@openai/agents) with its chat-completions model (`useResponses: false`) over the
 * openai client it ships with (its own openai major; the provider's default retries, 2, as ours), tools declared with its `tool()` (strict, from the same zod schemas), parallel tool
 * calls on, `maxTurns` = `maxCycles`. Tracing is disabled (it would export spans to OpenAI).
 */
export function createRunner(options: ScenarioOptions): ScenarioRunner {
  setTracingDisabled(true);
  const runner = new Runner({
    modelProvider: new OpenAIProvider({ apiKey: "bench", baseURL: options.baseURL, useResponses: false }),
  });
  const agent = new Agent({
    name: "bench",
    instructions: SYSTEM_PROMPT,
    model: options.model,
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
      const result = await runner.run(agent, prompt, { maxTurns: options.maxCycles });
      if (typeof result.finalOutput !== "string") throw new Error("openai-agents run gave no text answer");
      return result.finalOutput;
    },
  };
}
