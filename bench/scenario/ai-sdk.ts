import { createOpenAICompatible } from "@ai-sdk/openai-compatible";
import { generateText, stepCountIs, type ToolSet, tool } from "ai";
import { type ScenarioOptions, type ScenarioRunner, SYSTEM_PROMPT } from "./types.js";

/**
 * The Vercel AI SDK: `generateText` with `@ai-sdk/openai-compatible` pointed at the same server, tools
 * declared with its `tool()` from the same zod schemas, stopping after `maxCycles` steps (a step is one
 * model call and the tool calls it asked for).
 */
export function createRunner(options: ScenarioOptions): ScenarioRunner {
  const provider = createOpenAICompatible({ name: "bench", baseURL: options.baseURL, apiKey: "bench" });
  const model = provider.chatModel(options.model);
  const tools: ToolSet = Object.fromEntries(
    options.tools.map((definition) => [
      definition.name,
      tool({
        description: definition.description,
        inputSchema: definition.schema,
        execute: (input, { abortSignal }) =>
          definition.execute(input as Record<string, unknown>, abortSignal),
      }),
    ]),
  );
  return {
    framework: "ai-sdk",
    async run(prompt) {
      const result = await generateText({
        model,
        system: SYSTEM_PROMPT,
        prompt,
        tools,
        stopWhen: stepCountIs(options.maxCycles),
        maxRetries: 2,
      });
      if (result.finishReason !== "stop") throw new Error(`ai-sdk run finished ${result.finishReason}`);
      return result.text;
    },
  };
}
