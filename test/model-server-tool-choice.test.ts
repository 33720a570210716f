/**
 * The local model server honours `tool_choice: "none"` as the chat-completions API does: the reply has
 * text and no tool calls. The loop's summary call at the cycle limit (SUMMARIZE_ON_MAX_CYCLES) sends it;
 * a planner that still asked for tools left every local summary empty (`details.summarized` false).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type LocalModelServer, startModelServer } from "../local/model-server.js";
import { PLANNER_BANNER } from "../local/planner.js";

let server: LocalModelServer;
beforeAll(async () => {
  server = await startModelServer();
});
afterAll(async () => server?.stop());

const TOOLS = ["calculateTax", "recordInvoice"].map((name) => ({
  type: "function",
  function: { name, parameters: { type: "object", properties: {} } },
}));
const PROMPT = "Calculate tax on 1500 GBP for a client in the UK and record it";
const QUOTE = {
  status: "success",
  data: {
    jurisdiction: "GB",
    rate: "0.20",
    currency: "GBP",
    subtotal: { amount: "1500.00" },
    taxAmount: { amount: "300.00" },
    grossTotal: { amount: "1800.00" },
    quoteId: "qt_0123456789abcdef0123456789abcdef",
  },
  error: null,
  metadata: { toolName: "calculateTax", toolCallId: "call_1_0" },
};

async function ask(messages: unknown[], toolChoice?: string) {
  const response = await fetch(`${server.baseURL}/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({
      model: "planner",
      messages,
      tools: TOOLS,
      ...(toolChoice ? { tool_choice: toolChoice } : {}),
    }),
  });
  expect(response.status).toBe(200);
  const body = (await response.json()) as {
    choices: Array<{ finish_reason: string; message: { content: string | null; tool_calls?: unknown[] } }>;
  };
  return body.choices[0];
}

describe("the local model server with tool_choice none", () => {
  const afterOneTurn = [
    { role: "user", content: PROMPT },
    {
      role: "assistant",
      content: null,
      tool_calls: [
        {
          id: "call_1_0",
          type: "function",
          function: {
            name: "calculateTax",
            arguments: JSON.stringify({
              amount: "1500",
              currency: "GBP",
              jurisdiction: "UK",
              taxPointDate: null,
            }),
          },
        },
      ],
    },
    { role: "tool", tool_call_id: "call_1_0", content: JSON.stringify(QUOTE) },
  ];

  it("asks for the next tool without it (auto), as before", async () => {
    const choice = await ask(afterOneTurn);
    expect(choice?.finish_reason).toBe("tool_calls");
  });

  it("answers with the results so far instead of calling a tool", async () => {
    const choice = await ask(afterOneTurn, "none");
    expect(choice?.finish_reason).toBe("stop");
    expect(choice?.message.tool_calls ?? []).toEqual([]);
    expect(choice?.message.content).toBe(
      `${PLANNER_BANNER} Results:\n- GB: VAT at 0.20 on 1500.00 GBP is 300.00, gross total 1800.00.`,
    );
  });

  it("answers, calling nothing, before any tool ran", async () => {
    const choice = await ask([{ role: "user", content: PROMPT }], "none");
    expect(choice?.finish_reason).toBe("stop");
    expect(choice?.message.tool_calls ?? []).toEqual([]);
    expect(choice?.message.content).toContain(PLANNER_BANNER);
  });
});
