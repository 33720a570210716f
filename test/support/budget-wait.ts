import type { APIGatewayProxyEventV2 } from "aws-lambda";
import { eventForRoute } from "../../local/durable-runner.js";
import type { ScriptedReply } from "../../local/model-server.js";
import { runEvent } from "./idempotency.js";

/**
 * The budget-wait scenario the durable quota tests share (docs/quotas.md "Durable runs wait"): its prompt,
 * its tool call, the model's replies that make a run wait under USER_TOKENS_PER_DAY 3500, and the
 * limits change that wakes it.
 */
export const BUDGET_PROMPT = "Calculate tax on 100 GBP for a client in the UK.";

/** calculateTax of 100.00 GBP in GB, as the model's tool call `id`. */
export const taxCall = (id: string) => ({
  id,
  name: "calculateTax",
  arguments: JSON.stringify({ amount: "100.00", currency: "GBP", jurisdiction: "GB" }),
});

/**
 * Two calculateTax calls (2385 tokens), then the answer (20.00 GBP), whose prompt alone leaves fewer than
 * MIN_COMPLETION_TOKENS of 3500 tokens a day: the run waits for budget before its third call.
 */
export const budgetWaitScript = (): ScriptedReply[] => [
  { toolCalls: [taxCall("c1")], usage: { prompt_tokens: 1_100, completion_tokens: 40 } },
  { toolCalls: [taxCall("c2")], usage: { prompt_tokens: 1_200, completion_tokens: 45 } },
  { content: "The tax is 20.00 GBP.", usage: { prompt_tokens: 2_100, completion_tokens: 12 } },
];

/** `PUT /v1/limits` of `tenantId` by its limits admin (usr_admin, limits:admin) with `body` as JSON. */
export function putLimitsEvent(tenantId: string, body: unknown): APIGatewayProxyEventV2 {
  const put = eventForRoute(
    runEvent({ tenantId, userId: "usr_admin", scope: "limits:admin" }),
    "PUT",
    "/v1/limits",
  );
  put.body = JSON.stringify(body);
  put.headers = { ...put.headers, "content-type": "application/json" };
  return put;
}
