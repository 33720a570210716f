/**
 * A conversation's history bounded through the handler (HISTORY_MAX_TOKENS, MAX_TOTAL_TOKENS): the real
 * Lambda handler over real deps, DynamoDB Local, and the local model server through the real openai client.
 */
import { describe, expect, it } from "vitest";
import { type RecordedRequest, transcriptProblem } from "../local/model-server.js";
import { DEFAULT_SYSTEM_PROMPT } from "../shared/agent/loop.js";
import { estimateTokens, type HistoryMessage } from "../shared/agent/transcript.js";
import { newCaller, post, run } from "./support/conversation.js";
import { startTestStack } from "./support/stack.js";

describe("bounded history through the handler", () => {
  it("a long conversation is cut to HISTORY_MAX_TOKENS by whole turns, with no orphaned tool message", async () => {
    const small = await startTestStack({ HISTORY_MAX_TOKENS: "700" });
    try {
      const caller = newCaller();
      let previousRunId: string | undefined;
      let last: ReturnType<typeof run> | undefined;
      let before: ReturnType<typeof run> | undefined;
      let from = 0;
      for (const amount of [100, 200, 300, 400, 500]) {
        from = small.model.requests.length;
        before = last;
        last = run(
          await post(small, caller, {
            prompt: `Calculate tax on ${amount} GBP for a client in the UK.`,
            ...(previousRunId ? { previousRunId } : {}),
          }),
        );
        expect(last.status).toBe("completed");
        previousRunId = last.runId;
      }
      const messages = (small.model.requests[from] as RecordedRequest).messages;
      expect(transcriptProblem(messages)).toBeUndefined();
      const history = messages.slice(1, -1) as unknown as HistoryMessage[];
      expect(history[0]?.role).toBe("user");
      expect(estimateTokens(history)).toBeLessThanOrEqual(700);
      expect(last?.history?.estimatedTokens).toBe(estimateTokens(history));
      expect(last?.history?.messages).toBe(history.length);
      // Each earlier run is 4 messages (prompt, tool call, tool result, answer); the oldest are gone.
      expect(history.length % 4).toBe(0);
      expect(history.length).toBeGreaterThan(0);
      expect(history.length).toBeLessThan(16);
      // The previous run's transcript was its own history plus its 4 messages; the rest was dropped.
      expect(last?.history?.droppedMessages).toBe((before?.history?.messages ?? 0) + 4 - history.length);
      expect(last?.history?.droppedMessages).toBeGreaterThan(0);
      const prompts = history.filter((m) => m.role === "user").map((m) => m.content);
      expect(prompts.at(-1)).toBe("Calculate tax on 400 GBP for a client in the UK.");
      expect(prompts).not.toContain("Calculate tax on 100 GBP for a client in the UK.");
    } finally {
      await small.stop();
    }
  });

  it("the history never takes the run's token budget: it gets what MAX_TOTAL_TOKENS leaves after the prompt", async () => {
    // 3000: the first two runs' first requests (the tools' definitions included) leave MIN_COMPLETION_TOKENS
    // for an answer, so their model calls are made and leave a transcript to carry.
    const tight = await startTestStack({ MAX_TOTAL_TOKENS: "3000", HISTORY_MAX_TOKENS: "2999" });
    try {
      const caller = newCaller();
      const first = run(
        await post(tight, caller, { prompt: "Calculate tax on 100 GBP for a client in the UK." }),
      );
      const second = run(
        await post(tight, caller, {
          prompt: "And on 200 GBP for a client in the UK.",
          previousRunId: first.runId,
        }),
      );
      const longPrompt = `Calculate tax on 300 GBP for a client in the UK. ${"Please be brief. ".repeat(420)}`;
      const third = run(await post(tight, caller, { prompt: longPrompt, previousRunId: second.runId }));
      const own = estimateTokens([
        { role: "user", content: DEFAULT_SYSTEM_PROMPT },
        { role: "user", content: longPrompt.trim() },
      ]);
      expect(own).toBeGreaterThan(2_300);
      expect(third.history?.estimatedTokens).toBeLessThanOrEqual(3_000 - own);
      expect(third.history?.droppedMessages).toBeGreaterThan(0);
    } finally {
      await tight.stop();
    }
  });
});
