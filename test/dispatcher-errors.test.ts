import { describe, expect, it } from "vitest";
import { z } from "zod";
import { createRegistry, describeThrown, dispatchToolCall, zodIssues } from "../shared/agent/dispatcher.js";
import { capToolResult, type ToolResult } from "../shared/agent/result.js";
import { defineTool, type ToolDefinition } from "../shared/agent/tool.js";

const security = { userId: "usr_1", tenantId: "tenant_a", permissions: [] };

describe("errors the model can act on", () => {
  it("zod issues carry path, expected and received for each kind of constraint", () => {
    const schema = z
      .object({
        kind: z.enum(["net", "gross"]),
        amount: z.union([z.number(), z.string()]),
        lines: z.array(z.string()).max(1),
        code: z.string().regex(/^[A-Z]{2}$/),
      })
      .strict();
    const input = { kind: "tax", amount: true, lines: ["a", "b"], code: "gb", extra: 1 };
    const parsed = schema.safeParse(input);
    expect(parsed.success).toBe(false);
    const issues = zodIssues(parsed.error as z.ZodError, input);
    expect(issues.map(({ path, code, expected, received }) => ({ path, code, expected, received }))).toEqual([
      { path: "kind", code: "invalid_value", expected: 'one of "net", "gross"', received: "string" },
      { path: "amount", code: "invalid_union", expected: "number | string", received: "boolean" },
      { path: "lines", code: "too_big", expected: "array <= 1 items", received: "array" },
      { path: "code", code: "invalid_format", expected: "regex /^[A-Z]{2}$/", received: "string" },
      { path: "(root)", code: "unrecognized_keys", expected: "no other keys", received: "object" },
    ]);
    expect(issues.at(-1)).toMatchObject({ keys: ["extra"] });
    const missing = schema.safeParse({});
    expect(zodIssues(missing.error as z.ZodError, {})[0]).toMatchObject({
      path: "kind",
      received: "missing",
    });
  });

  it("a thrown value's text is never lost", () => {
    expect(describeThrown(new Error("boom"))).toBe("Error: boom");
    expect(describeThrown(new Error("outer", { cause: new Error("inner") }))).toBe(
      "Error: outer (cause: Error: inner)",
    );
    expect(describeThrown(new AggregateError([new Error("a"), new TypeError("b")], "both failed"))).toBe(
      "AggregateError: both failed [Error: a; TypeError: b]",
    );
    expect(describeThrown("plain")).toBe("plain");
    expect(describeThrown({ status: 418 })).toBe("{ status: 418 }");
    expect(describeThrown(new Error(""))).toBe("Error");
  });

  it("a call whose run deadline already passed is not started", async () => {
    let ran = false;
    const tool = defineTool({
      name: "write",
      description: "Writes.",
      inputSchema: z.object({}).strict(),
      isMutating: true,
      requiredPermission: undefined,
      handler: async () => {
        ran = true;
        return {};
      },
    });
    const controller = new AbortController();
    controller.abort(new Error("deadline"));
    const result = await dispatchToolCall(
      { id: "c1", name: "write", arguments: "{}" },
      createRegistry([tool as unknown as ToolDefinition]),
      security,
      { runId: "r", runScope: "r", occurrence: 0, signal: controller.signal },
    );
    expect(ran).toBe(false);
    expect(result.error).toMatchObject({
      code: "DEADLINE_EXCEEDED",
      details: { started: false, mayHaveCommitted: false },
    });
  });

  it("an oversized error message is cut to the cap too", () => {
    const result: ToolResult = {
      status: "fatal_error",
      data: null,
      error: {
        code: "TOOL_FAILED",
        message: "x".repeat(50_000),
        details: { big: "y".repeat(10_000) },
        retryable: false,
      },
      metadata: { toolName: "t", toolCallId: "c", latencyMs: 1, idempotencyKey: null },
    };
    const { result: capped, json } = capToolResult(result, 4_096);
    expect(Buffer.byteLength(json, "utf8")).toBeLessThanOrEqual(4_096);
    expect(JSON.parse(json)).toEqual(capped);
    expect(capped.error?.code).toBe("TOOL_FAILED");
    expect(capped.error?.message).toMatch(
      /^x+… \[truncated by boundloop: this tool result was 60\d{3} bytes/,
    );
    expect(capped.error?.details).toEqual({ truncated: true });
    // Under the cap nothing changes.
    const small = {
      ...result,
      error: { ...(result.error as ToolResult["error"] & object), message: "m", details: {} },
    };
    expect(capToolResult(small, 4_096).result).toBe(small);
  });
});
