import { randomUUID } from "node:crypto";
import type { APIGatewayProxyStructuredResultV2 } from "aws-lambda";
import { expect } from "vitest";
import { ProblemSchema, RunResponseSchema } from "../../functions/api/contract.js";
import { type RecordedRequest, transcriptProblem } from "../../local/model-server.js";
import { DEFAULT_SYSTEM_PROMPT } from "../../shared/agent/loop.js";
import type { ToolResult } from "../../shared/agent/result.js";
import type { HistoryMessage } from "../../shared/agent/transcript.js";
import { apiEvent, header } from "../fixtures/events.js";
import type { TestStack } from "./stack.js";

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

type Result = APIGatewayProxyStructuredResultV2;

/** Who posts a run: the tenant and user its token names. */
export interface Caller {
  tenantId: string;
  userId: string;
}

/** A caller of a tenant and user of their own (`tenant_conv_…`, `usr_…`), so tests share no runs. */
export const newCaller = (): Caller => ({
  tenantId: `tenant_conv_${randomUUID().slice(0, 8)}`,
  userId: `usr_${randomUUID().slice(0, 8)}`,
});

/** POST /v1/runs as `caller` with `body`, through the real handler. */
export async function post(
  target: TestStack,
  caller: Caller,
  body: Record<string, unknown>,
  headers: Record<string, string> = {},
): Promise<Result> {
  const event = apiEvent("http-api-v2", {
    body,
    headers,
    extraClaims: { tenant_id: caller.tenantId, sub: caller.userId },
  });
  return target.invoke(event as never);
}

/** The JSON body of a response. */
export const json = (response: Result) => JSON.parse(response.body ?? "") as Record<string, unknown>;

/** The run a response answers; expects 200. */
export const run = (response: Result) => {
  expect(response.statusCode, response.body).toBe(200);
  return RunResponseSchema.parse(json(response));
};

/** The problem a response answers; expects application/problem+json. */
export const problem = (response: Result) => {
  expect(header(response, "content-type")).toBe("application/problem+json");
  return ProblemSchema.parse(json(response));
};

/** Each tool result as `tool:status` (`:CODE` added for an error). */
export const summary = (results: ToolResult[]) =>
  results.map((r) => `${r.metadata.toolName}:${r.status}${r.error ? `:${r.error.code}` : ""}`);

/** The quote id a calculateTax result holds. */
export const quoteIdOf = (result: ToolResult | undefined) =>
  (result?.data as { quoteId: string } | undefined)?.quoteId;

/** The invoice a recordInvoice result holds; throws without one. */
export const invoiceOf = (result: ToolResult | undefined) => {
  const data = result?.data as { invoice: { invoiceId: string; quoteId: string } } | undefined;
  if (!data) throw new Error("no invoice in the tool result");
  return data.invoice;
};
