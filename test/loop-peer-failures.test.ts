/**
 * Each test replays a failure reported against a peer agent loop, through the real openai client and the
 * local model server's scripted mode (which rejects, as OpenAI does, a request whose tool messages do
 * not pair with its tool calls).
 * This file: a tool or an approval check that throws. What the model sent:
 * loop-peer-failures-model-output.test.ts; deadlines and parallel tools: loop-peer-failures-timing.test.ts.
 */
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { defineTool, type ToolDefinition } from "../shared/agent/tool.js";
import { call, runScripted, scriptedModelForFile, toolMessages } from "./support/agent-harness.js";

const setup = scriptedModelForFile();

/** A tool that throws `thrown` when called with `{ fail: true }`, else returns `{ ok: label }`. */
function flakyTool(thrown: unknown): ToolDefinition {
  return defineTool({
    name: "flaky",
    description: "Throws on request.",
    inputSchema: z.object({ label: z.string(), fail: z.boolean() }).strict(),
    isMutating: false,
    requiredPermission: undefined,
    handler: async ({ label, fail }) => {
      if (fail) throw thrown;
      return { ok: label };
    },
  }) as unknown as ToolDefinition;
}

describe("the loop does not repeat its peers' reported failures", () => {
  it("a fatal tool error mid-batch: every tool_call id gets its tool message, the next request is accepted (openai-agents-js #665)", async () => {
    const flaky = flakyTool(new TypeError("socket hang up"));
    const { outcome } = await runScripted(setup, {
      tools: [flaky],
      script: [
        {
          toolCalls: [
            call("a", "flaky", { label: "a", fail: false }),
            call("b", "flaky", { label: "b", fail: true }),
            call("c", "flaky", { label: "c", fail: false }),
          ],
        },
        { content: "handled" },
      ],
    });
    // The scripted server rejects unpaired tool messages with 400, so "completed" means it accepted them.
    expect(outcome.status).toBe("completed");
    expect(outcome.answer).toBe("handled");
    expect(toolMessages(setup.model, 1).map((m) => [m.id, m.result.status])).toEqual([
      ["a", "success"],
      ["b", "fatal_error"],
      ["c", "success"],
    ]);
  });

  it("a thrown Error('boom', { cause }): the model gets TOOL_FAILED and a fixed sentence, the error's text only the logs' hook (vercel/ai #13056)", async () => {
    const secret = new Error("connect ECONNREFUSED 10.0.3.7:5432", {
      cause: new Error("table billing_prod.invoices"),
    });
    const { outcome, failures } = await runScripted(setup, {
      tools: [flakyTool(new Error("boom", { cause: secret }))],
      script: [{ toolCalls: [call("c1", "flaky", { label: "x", fail: true })] }, { content: "sorry" }],
    });
    expect(outcome.status).toBe("completed");
    const [message] = toolMessages(setup.model, 1);
    expect(message?.result.error).toEqual({
      code: "TOOL_FAILED",
      message: "flaky failed with an internal error; it has no side effects.",
      details: { mayHaveCommitted: false },
      retryable: false,
    });
    // Nothing of the error reaches the model's request or the client's outcome.
    const sent = JSON.stringify(setup.model.requests);
    for (const leaked of ["boom", "ECONNREFUSED", "10.0.3.7", "billing_prod"]) {
      expect(sent).not.toContain(leaked);
      expect(JSON.stringify(outcome)).not.toContain(leaked);
    }
    expect(failures).toEqual([
      {
        source: "tool",
        name: "flaky",
        code: "TOOL_FAILED",
        detail:
          "Error: boom (cause: Error: connect ECONNREFUSED 10.0.3.7:5432 (cause: Error: table billing_prod.invoices))",
      },
    ]);

    // Not only Errors: a thrown plain object is described for the logs, never "{}" or "[object Object]".
    const objectRun = await runScripted(setup, {
      tools: [flakyTool({ reason: "boom-object", code: 7 })],
      script: [{ toolCalls: [call("c2", "flaky", { label: "x", fail: true })] }, { content: "sorry" }],
    });
    expect(objectRun.outcome.status).toBe("completed");
    expect(toolMessages(setup.model, 1)[0]?.result.error?.message).not.toContain("boom-object");
    expect(objectRun.failures[0]?.detail).toContain("boom-object");
    expect(objectRun.failures[0]?.detail).not.toContain("[object Object]");
  });

  it("an approval policy that throws: APPROVAL_CHECK_FAILED with a fixed sentence, the error's text only the logs' hook", async () => {
    let ran = false;
    const guarded = defineTool({
      name: "guarded",
      description: "Needs approval above a threshold.",
      inputSchema: z.object({ label: z.string() }).strict(),
      isMutating: true,
      requiredPermission: undefined,
      needsApproval: async () => {
        throw new Error("ResourceNotFoundException: table approvals-prod-eu not found");
      },
      handler: async () => {
        ran = true;
        return { ok: true };
      },
    }) as unknown as ToolDefinition;
    const { outcome, failures } = await runScripted(setup, {
      tools: [guarded],
      script: [{ toolCalls: [call("c1", "guarded", { label: "x" })] }, { content: "sorry" }],
    });
    expect(ran).toBe(false);
    expect(outcome.toolResults[0]?.error).toMatchObject({
      code: "APPROVAL_CHECK_FAILED",
      message:
        "guarded did not run: whether it needs approval could not be checked. The same call can be made again.",
      retryable: true,
    });
    expect(JSON.stringify(setup.model.requests)).not.toContain("approvals-prod-eu");
    expect(failures).toEqual([
      {
        source: "approval_check",
        name: "guarded",
        code: "APPROVAL_CHECK_FAILED",
        detail: "Error: ResourceNotFoundException: table approvals-prod-eu not found",
      },
    ]);
  });

  it("one of three parallel tools throws: the other two results are kept (langchain-ai/deepagentsjs #485)", async () => {
    const { outcome } = await runScripted(setup, {
      tools: [flakyTool(new RangeError("index out of range"))],
      script: [
        {
          toolCalls: [
            call("1", "flaky", { label: "one", fail: false }),
            call("2", "flaky", { label: "two", fail: true }),
            call("3", "flaky", { label: "three", fail: false }),
          ],
        },
        { content: "x" },
      ],
    });
    expect(outcome.status).toBe("completed");
    expect(outcome.toolResults.map((r) => [r.status, r.data, r.error?.message ?? null])).toEqual([
      ["success", { ok: "one" }, null],
      ["fatal_error", null, "flaky failed with an internal error; it has no side effects."],
      ["success", { ok: "three" }, null],
    ]);
  });
});
