import type { ChatCompletionMessageParam, ChatCompletionTool } from "openai/resources/chat/completions";
import { createModelClient } from "../../shared/model-client.js";
import { chatToolDefinitions, type ScenarioOptions, type ScenarioRunner, SYSTEM_PROMPT } from "./types.js";

/**
 * The openai SDK's floor, not a framework: bare-fetch's exchange (scenario/bare-fetch.ts: the same
 * messages and tools, tool calls in parallel, arguments parsed but not validated) made through the
 * official `openai` SDK's `chat.completions.create` on the client boundloop builds (shared/model-client.ts:
 * the same fetch, retries and options), nothing of boundloop's loop around it. What any client that uses the SDK pays at least: ours ÷
 * this is the framework's own overhead once the SDK it must use is counted.
 */
export function createRunner(options: ScenarioOptions): ScenarioRunner {
  const client = createModelClient({ baseURL: options.baseURL, apiKey: "bench" });
  const tools = new Map(options.tools.map((tool) => [tool.name, tool]));
  const toolDefinitions: ChatCompletionTool[] = chatToolDefinitions(options.tools);
  return {
    framework: "openai-sdk",
    async run(prompt) {
      const messages: ChatCompletionMessageParam[] = [
        { role: "system", content: SYSTEM_PROMPT },
        { role: "user", content: prompt },
      ];
      for (let cycle = 0; cycle < options.maxCycles; cycle++) {
        const completion = await client.chat.completions.create({
          model: options.model,
          messages,
          tools: toolDefinitions,
        });
        const message = completion.choices[0]?.message;
        const calls = (message?.tool_calls ?? []).filter((call) => call.type === "function");
        if (!message || calls.length === 0) return message?.content ?? "";
        messages.push(message);
        const results = await Promise.all(
          calls.map((call) =>
            tools
              .get(call.function.name)
              ?.execute(JSON.parse(call.function.arguments) as Record<string, unknown>),
          ),
        );
        calls.forEach((call, i) => {
          messages.push({ role: "tool", tool_call_id: call.id, content: JSON.stringify(results[i]) });
        });
      }
      throw new Error("openai-sdk: no answer within maxCycles");
    },
  };
}
