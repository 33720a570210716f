/**
 * The local model server's planner latency (`plannerDelayMs`): the benchmarks' cold start against a
 * model that takes as long as a hosted one to answer. A delayed planner answers no sooner than the delay,
 * with the same reply as an instant one.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type LocalModelServer, startModelServer } from "../local/model-server.js";

const DELAY_MS = 120;
let instant: LocalModelServer;
let delayed: LocalModelServer;
beforeAll(async () => {
  instant = await startModelServer();
  delayed = await startModelServer({ plannerDelayMs: DELAY_MS });
});
afterAll(async () => {
  await instant?.stop();
  await delayed?.stop();
});

/** One chat-completions request asking the planner for tax on an invoice, with the tool it may call. */
async function ask(server: LocalModelServer): Promise<{ ms: number; message: unknown }> {
  const started = performance.now();
  const response = await fetch(`${server.baseURL}/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({
      model: "planner",
      messages: [{ role: "user", content: "Calculate tax on 1500 GBP for a client in the UK" }],
      tools: [
        {
          type: "function",
          function: { name: "calculateTax", parameters: { type: "object", properties: {} } },
        },
      ],
    }),
  });
  expect(response.status).toBe(200);
  const body = (await response.json()) as { choices: Array<{ message: unknown }> };
  return { ms: performance.now() - started, message: body.choices[0]?.message };
}

describe("the planner's latency", () => {
  it("answers after plannerDelayMs, with the reply an instant planner gives", async () => {
    const fast = await ask(instant);
    const slow = await ask(delayed);
    // A lower bound holds whatever the machine's load (less 1 ms: libuv's timer clock counts whole ms).
    expect(slow.ms).toBeGreaterThanOrEqual(DELAY_MS - 1);
    expect(slow.message).toEqual(fast.message);
    expect(JSON.stringify(fast.message)).toContain("calculateTax");
  });
});
