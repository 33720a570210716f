/**
 * Bounded history: shared/agent/transcript.ts cuts a transcript to a token cap by whole turns,
 * never leaving a tool message without the assistant message that called it, nor a call without its
 * result. Validity is checked with the local model server's own chat-completions pairing check
 * (`transcriptProblem`, the rule OpenAI answers 400 for), an implementation independent of the cut.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { transcriptProblem } from "../local/model-server.js";
import type { ChatMessage } from "../shared/agent/model.js";
import {
  ESTIMATE_BYTES_PER_TOKEN,
  estimateTokens,
  type HistoryMessage,
  halveHistory,
  MESSAGE_OVERHEAD_TOKENS,
  transcriptOf,
  trimHistory,
} from "../shared/agent/transcript.js";
import { loadConfig } from "../shared/config.js";

/** One assistant turn with `n` tool calls and their results, ids unique by `prefix`. */
const toolUnit = (prefix: string, texts: string[]): HistoryMessage[] => [
  {
    role: "assistant",
    content: null,
    tool_calls: texts.map((text, i) => ({
      id: `${prefix}_${i}`,
      type: "function" as const,
      function: { name: "calculateTax", arguments: JSON.stringify({ note: text }) },
    })),
  },
  ...texts.map((text, i) => ({ role: "tool" as const, tool_call_id: `${prefix}_${i}`, content: text })),
];

/** A random valid transcript: turns of a prompt, 0-3 tool units of 1-3 calls, maybe a final answer. */
const transcriptArb = fc
  .array(
    fc.record({
      prompt: fc.string({ minLength: 1, maxLength: 80 }),
      units: fc.array(fc.array(fc.string({ maxLength: 120 }), { minLength: 1, maxLength: 3 }), {
        maxLength: 3,
      }),
      answer: fc.option(fc.string({ maxLength: 80 }), { nil: undefined }),
    }),
    { maxLength: 8 },
  )
  .map((turns) =>
    turns.flatMap((turn, t): HistoryMessage[] => [
      { role: "user", content: turn.prompt },
      ...turn.units.flatMap((texts, u) => toolUnit(`call_${t}_${u}`, texts)),
      ...(turn.answer === undefined ? [] : [{ role: "assistant" as const, content: turn.answer }]),
    ]),
  );

const isSuffix = (part: HistoryMessage[], whole: HistoryMessage[]) =>
  part.length <= whole.length &&
  JSON.stringify(part) === JSON.stringify(whole.slice(whole.length - part.length));

describe("trimHistory", () => {
  it("keeps a suffix within the cap, valid for chat completions, preferring whole turns (property)", () => {
    fc.assert(
      fc.property(transcriptArb, fc.integer({ min: 0, max: 1_500 }), (transcript, cap) => {
        const trimmed = trimHistory(transcript, cap);
        expect(isSuffix(trimmed.messages, transcript)).toBe(true);
        expect(trimmed.estimatedTokens).toBe(estimateTokens(trimmed.messages));
        expect(trimmed.estimatedTokens).toBeLessThanOrEqual(Math.max(0, cap));
        expect(trimmed.droppedMessages).toBe(transcript.length - trimmed.messages.length);
        // No orphan either way: every tool message follows its call, every call has its result.
        expect(transcriptProblem(trimmed.messages)).toBeUndefined();
        expect(trimmed.messages[0]?.role).not.toBe("tool");
        // Whole turns: when some turn start fits, the kept part starts at a user prompt, and it is the
        // longest such suffix (adding the turn before it would exceed the cap).
        const turnStarts = transcript.flatMap((m, i) => (m.role === "user" ? [i] : []));
        const fitting = turnStarts.filter((i) => estimateTokens(transcript.slice(i)) <= cap);
        if (estimateTokens(transcript) <= cap) {
          expect(trimmed.messages).toEqual(transcript);
        } else if (fitting.length > 0) {
          expect(trimmed.messages[0]?.role).toBe("user");
          expect(trimmed.messages.length).toBe(transcript.length - (fitting[0] as number));
        }
      }),
      { numRuns: 500 },
    );
  });

  it("drops orphans from a damaged transcript: a tool message without its call, a call without its result", () => {
    fc.assert(
      fc.property(transcriptArb, fc.nat(), fc.nat(), (transcript, a, b) => {
        const damaged = [...transcript];
        if (damaged.length > 0) damaged.splice(a % damaged.length, 1); // may cut a call or a result
        damaged.splice(b % (damaged.length + 1), 0, {
          role: "tool",
          tool_call_id: "call_nowhere",
          content: "x",
        });
        const trimmed = trimHistory(damaged, Number.MAX_SAFE_INTEGER);
        expect(transcriptProblem(trimmed.messages)).toBeUndefined();
        expect(trimmed.messages.some((m) => m.role === "tool" && m.tool_call_id === "call_nowhere")).toBe(
          false,
        );
      }),
      { numRuns: 300 },
    );
  });

  it("cuts inside the newest turn only when that turn alone is over the cap, keeping its latest units", () => {
    const transcript: HistoryMessage[] = [
      { role: "user", content: "Calculate tax on 1500 GBP for a UK client" },
      ...toolUnit("call_1", ["a".repeat(600)]),
      ...toolUnit("call_2", ["b".repeat(30)]),
      { role: "assistant", content: "done" },
    ];
    const lastTwo = transcript.slice(-3); // the second tool unit and the answer
    const trimmed = trimHistory(transcript, estimateTokens(lastTwo));
    expect(trimmed.messages).toEqual(lastTwo);
    expect(trimmed.droppedMessages).toBe(3);
    expect(trimHistory(transcript, 0)).toEqual({ messages: [], estimatedTokens: 0, droppedMessages: 6 });
  });
});

describe("halveHistory (the run store's transcript shortening)", () => {
  it("returns a strictly shorter valid suffix of at most half the estimated tokens, until empty (property)", () => {
    fc.assert(
      fc.property(transcriptArb, (transcript) => {
        let kept: HistoryMessage[] = transcript;
        while (kept.length > 0) {
          const shorter = halveHistory(kept);
          expect(shorter.length).toBeLessThan(kept.length);
          expect(isSuffix(shorter, kept)).toBe(true);
          expect(estimateTokens(shorter)).toBeLessThanOrEqual(Math.floor(estimateTokens(kept) / 2));
          expect(transcriptProblem(shorter)).toBeUndefined();
          kept = shorter;
        }
      }),
    );
  });
});

describe("estimateTokens", () => {
  it("counts UTF-8 bytes of text, ids and arguments at 3 a token, plus the per-message overhead", () => {
    expect(estimateTokens([{ role: "user", content: "abcdef" }])).toBe(MESSAGE_OVERHEAD_TOKENS + 2);
    // "£" is 2 bytes: 7 bytes → 3 tokens.
    expect(estimateTokens([{ role: "user", content: "£12345" }])).toBe(MESSAGE_OVERHEAD_TOKENS + 3);
    const call = toolUnit("id", ["xyz"]);
    const args = JSON.stringify({ note: "xyz" });
    expect(estimateTokens(call.slice(0, 1))).toBe(
      MESSAGE_OVERHEAD_TOKENS + Math.ceil(`id_0calculateTax${args}`.length / ESTIMATE_BYTES_PER_TOKEN),
    );
    expect(estimateTokens(call.slice(1))).toBe(MESSAGE_OVERHEAD_TOKENS + Math.ceil("xyzid_0".length / 3));
  });
});

describe("transcriptOf", () => {
  it("drops the system prompt, keeps order, copies the messages and appends the final answer", () => {
    const run: ChatMessage[] = [
      { role: "system", content: "old system prompt" },
      { role: "user", content: "Calculate tax" },
      ...toolUnit("c", ["{}"]),
    ];
    const transcript = transcriptOf(run, "GB tax is 300.00 GBP.");
    expect(transcript).toEqual([
      { role: "user", content: "Calculate tax" },
      ...toolUnit("c", ["{}"]),
      { role: "assistant", content: "GB tax is 300.00 GBP." },
    ]);
    // A copy: later changes to the run's messages do not reach the stored transcript.
    expect(transcript[1]).not.toBe(run[2]);
    const call = transcript[1]?.role === "assistant" ? transcript[1].tool_calls?.[0] : undefined;
    expect(call).toEqual((run[2] as { tool_calls: unknown[] }).tool_calls[0]);
    expect(call).not.toBe((run[2] as { tool_calls: unknown[] }).tool_calls[0]);
    expect(transcriptOf([{ role: "user", content: "hi" }], null)).toEqual([{ role: "user", content: "hi" }]);
  });
});

describe("HISTORY_MAX_TOKENS", () => {
  it("defaults to 8000, accepts 0 (history off) to 1000000, and names itself when invalid", () => {
    expect(loadConfig({}).history.maxTokens).toBe(8_000);
    expect(loadConfig({ HISTORY_MAX_TOKENS: "0" }).history.maxTokens).toBe(0);
    expect(loadConfig({ HISTORY_MAX_TOKENS: "1000000" }).history.maxTokens).toBe(1_000_000);
    for (const bad of ["-1", "1000001", "1.5", "lots"]) {
      expect(() => loadConfig({ HISTORY_MAX_TOKENS: bad })).toThrow(/HISTORY_MAX_TOKENS/);
    }
  });
});
