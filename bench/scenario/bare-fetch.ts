import { chatToolDefinitions, type ScenarioOptions, type ScenarioRunner, SYSTEM_PROMPT } from "./types.js";

/**
 * The transport floor, not a framework: the same chat-completions exchange (the same messages and tool definitions: {@link chatToolDefinitions}) with Node's global `fetch`
 * and `JSON.parse` only (no validation, no retries, no deadline). Tool calls run in parallel with the
 * arguments parsed but not validated. What every fetch-based client pays at least.
 */
export function createRunner(options: ScenarioOptions): ScenarioRunner {
  const url = `${options.baseURL}/chat/completions`;
  const tools = new Map(options.tools.map((tool) => [tool.name, tool]));
  const toolDefinitions = chatToolDefinitions(options.tools);
  interface Message {
    role: string;
    content: string | null;
    tool_calls?: Array<{ id: string; function: { name: string; arguments: string } }>;
    tool_call_id?: string;
  }
  return {
    framework: "bare-fetch",
    async run(prompt) {
      const messages: Message[] = [
        { role: "system", content: SYSTEM_PROMPT },
        { role: "user", content: prompt },
      ];
      for (let cycle = 0; cycle < options.maxCycles; cycle++) {
        const response = await fetch(url, {
          method: "POST",
          headers: { "content-type": "application/json", authorization: "Bearer bench" },
          body: JSON.stringify({ model: options.model, messages, tools: toolDefinitions }),
        });
        const completion = (await response.json()) as { choices: Array<{ message: Message }> };
        const message = completion.choices[0]?.message as Message;
        if (!message.tool_calls?.length) return message.content ?? "";
        messages.push(message);
        const results = await Promise.all(
          message.tool_calls.map((call) =>
            tools
              .get(call.function.name)
              ?.execute(JSON.parse(call.function.arguments) as Record<string, unknown>),
          ),
        );
        message.tool_calls.forEach((call, i) => {
          messages.push({ role: "tool", tool_call_id: call.id, content: JSON.stringify(results[i]) });
        });
      }
      throw new Error("bare-fetch: no answer within maxCycles");
    },
  };
}
