/**
 * The tool message the model reads is a tool result's model view (shared/agent/result.ts `toolMessage`):
 * `{ status, data, error }`, the error whole (code, message, details with field paths, retryable), cut
 * to MAX_TOOL_RESULT_BYTES with its marker. The envelope's metadata (tool name, call id, latency,
 * idempotency key, truncation, approval, policy) is the backend's audit: it stays in the stored results
 * and is never sent. Real loop, real openai client, local model server in scripted mode.
 */
import { describe, expect, it } from "vitest";
import {
  bigTool,
  call,
  echoTool,
  runScripted,
  scriptedModelForFile,
  toolMessages,
} from "./support/agent-harness.js";

const setup = scriptedModelForFile();

describe("the tool message", () => {
  it("is { status, data, error } of the stored result, in success, failure and truncation; the metadata stays in the stored result", async () => {
    const { outcome } = await runScripted(setup, {
      tools: [echoTool(), bigTool()],
      script: [
        {
          toolCalls: [call("ok", "echo", { n: 7 }), call("bad", "echo", { n: 500 }), call("cut", "big", {})],
        },
        { content: "done" },
      ],
    });
    expect(outcome.status).toBe("completed");
    const messages = toolMessages(setup.model, 1);
    expect(messages.map((m) => m.id)).toEqual(["ok", "bad", "cut"]);
    for (const [i, message] of messages.entries()) {
      const stored = outcome.toolResults[i];
      expect(Object.keys(message.result)).toEqual(["status", "data", "error"]);
      expect(message.result).toEqual({ status: stored?.status, data: stored?.data, error: stored?.error });
      expect(message.content).toBe(JSON.stringify(message.result));
      for (const audit of ["metadata", "latencyMs", "idempotencyKey", "toolName", "originalBytes"])
        expect(message.content, audit).not.toContain(audit);
      // The transcript the run hands on holds what the model read.
      const sent = outcome.messages.find((m) => m.role === "tool" && m.tool_call_id === message.id);
      expect(sent?.content).toBe(message.content);
    }
    const [ok, bad, cut] = messages;
    expect(ok?.result).toEqual({ status: "success", data: { n: 7 }, error: null });
    // Failures stay structured data: code, field path and constraint, as the stored result has them.
    expect(bad?.result.status).toBe("validation_error");
    expect(bad?.result.error).toMatchObject({
      code: "INVALID_ARGUMENTS",
      retryable: true,
      details: { issues: [expect.objectContaining({ path: "n", code: "too_big", maximum: 100 })] },
    });
    // Over the cap: the data is the cut JSON with its marker (test/loop-bounds.test.ts reads it), within
    // the cap; the sizes are in the stored result only.
    const truncated = outcome.toolResults[2]?.metadata.truncated;
    expect(truncated).toEqual({ originalBytes: expect.any(Number), maxBytes: 16_384 });
    expect(Buffer.byteLength(cut?.content ?? "", "utf8")).toBeLessThanOrEqual(16_384);
    expect(String(cut?.result.data)).toMatch(/^\{"text":"é+… \[truncated by boundloop: /);
    // The stored results keep their whole envelope.
    expect(outcome.toolResults.map((r) => [r.metadata.toolName, r.metadata.toolCallId])).toEqual([
      ["echo", "ok"],
      ["echo", "bad"],
      ["big", "cut"],
    ]);
    expect(outcome.toolResults.every((r) => typeof r.metadata.latencyMs === "number")).toBe(true);
  });
});
