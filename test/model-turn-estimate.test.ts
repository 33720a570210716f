import { describe, expect, it } from "vitest";
import type { ChatMessage, ModelTool } from "../shared/agent/model.js";
import { estimateRequestTokens } from "../shared/agent/model-turn.js";
import { estimateTokens } from "../shared/agent/transcript.js";

const messages: ChatMessage[] = [
  { role: "system", content: "You are an accounting assistant." },
  { role: "user", content: "Calculate VAT on 100.00 GBP, then record it for Café Zoë." },
];

const tools: ModelTool[] = [
  {
    name: "calculateTax",
    description: "Computes tax for an amount — exact decimals, per jurisdiction (€, £, ¥).",
    parameters: { type: "object", properties: { amount: { type: "string" } }, required: ["amount"] },
  },
  { name: "listInvoices", description: "Lists the caller's invoices.", parameters: { type: "object" } },
  { name: "getInvoice", description: "One invoice by id.", parameters: { type: "object", properties: {} } },
];

/** The definition the estimate keeps: the tools' JSON at 3 UTF-8 bytes a token, on top of the messages'. */
const bySerializing = (list: readonly ModelTool[]) =>
  estimateTokens(messages) +
  (list.length === 0 ? 0 : Math.ceil(Buffer.byteLength(JSON.stringify(list), "utf8") / 3));

describe("a request's estimated prompt tokens", () => {
  it("count the tools' JSON bytes exactly as serializing them would, every call (the per-tool bytes are kept)", () => {
    for (const list of [tools, tools.slice(0, 1), tools.slice(1), [], [...tools].reverse()]) {
      const first = estimateRequestTokens(messages, list);
      expect(first).toBe(bySerializing(list));
      expect(estimateRequestTokens(messages, list)).toBe(first);
    }
    expect(estimateRequestTokens(messages, tools)).toBeGreaterThan(estimateTokens(messages) + 60);
  });
});
