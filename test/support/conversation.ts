import { expect } from "vitest";
import { type RecordedRequest, transcriptProblem } from "../../local/model-server.js";
import { DEFAULT_SYSTEM_PROMPT } from "../../shared/agent/loop.js";
import type { HistoryMessage } from "../../shared/agent/transcript.js";

/**
 * Checks that `request` (a continuing run's first model request) is today's system prompt, the earlier
 * run in order (its prompt, the calculateTax call, that call's tool result with the GB figures 300.00 /
 * 1800.00 and `earlier.quoteId`, its answer), then `nextPrompt`, and valid for chat completions (each
 * tool message follows its assistant tool_calls). Returns the history part (messages 1–4).
 */
export function expectContinues(
  request: RecordedRequest,
  earlier: { prompt: string; answer: string | null; quoteId: string | undefined },
  nextPrompt: string,
): HistoryMessage[] {
  const messages = request.messages as unknown as Array<Record<string, unknown>>;
  expect(messages.map((m) => m.role)).toEqual(["system", "user", "assistant", "tool", "assistant", "user"]);
  expect(messages[0]).toEqual({ role: "system", content: DEFAULT_SYSTEM_PROMPT });
  expect(messages[1]).toEqual({ role: "user", content: earlier.prompt });
  const call = (
    messages[2]?.tool_calls as Array<{ id: string; function: { name: string } }> | undefined
  )?.[0];
  expect(call?.function.name).toBe("calculateTax");
  expect(messages[3]?.tool_call_id).toBe(call?.id);
  expect(JSON.parse(String(messages[3]?.content))).toMatchObject({
    status: "success",
    data: { quoteId: earlier.quoteId, taxAmount: { amount: "300.00" }, grossTotal: { amount: "1800.00" } },
  });
  expect(messages[4]).toEqual({ role: "assistant", content: earlier.answer });
  expect(messages[5]).toEqual({ role: "user", content: nextPrompt });
  expect(transcriptProblem(request.messages)).toBeUndefined();
  return messages.slice(1, 5) as unknown as HistoryMessage[];
}
