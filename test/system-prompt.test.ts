/**
 * SYSTEM_PROMPT (docs/configuration.md): a deployment's own system message reaches the model on the
 * synchronous path and in a durable run, and the setting is validated at cold start.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RunRecordSchema, RunResponseSchema } from "../functions/api/contract.js";
import { DEFAULT_SYSTEM_PROMPT } from "../shared/agent/loop.js";
import { ConfigError, loadConfig, MAX_SYSTEM_PROMPT_CHARS } from "../shared/config.js";
import { json, pollUntil, SEED_PROMPT } from "./support/approvals.js";
import { type DurableStack, startDurableStack } from "./support/durable.js";
import { runEvent } from "./support/idempotency.js";

const SYSTEM_PROMPT = "You are the payroll assistant of Example Ltd. Use the tools for every number.";

let stack: DurableStack;
beforeAll(async () => {
  stack = await startDurableStack({ SYSTEM_PROMPT: `  ${SYSTEM_PROMPT}\n` });
});
afterAll(async () => {
  await stack?.stop();
});

describe("SYSTEM_PROMPT", () => {
  it("is the system message of every model request of a synchronous run", async () => {
    stack.model.usePlanner();
    const before = stack.model.requests.length;
    const response = await stack.invoke(runEvent({ tenantId: "tenant_sys_sync", prompt: SEED_PROMPT }));
    expect(response.statusCode, response.body).toBe(200);
    expect(RunResponseSchema.parse(json(response)).status).toBe("completed");
    const requests = stack.model.requests.slice(before);
    expect(requests.length).toBeGreaterThan(1);
    for (const request of requests)
      expect(request.messages[0]).toEqual({ role: "system", content: SYSTEM_PROMPT });
  });

  it("is the system message of a durable run's model requests", async () => {
    stack.model.usePlanner();
    const tenantId = "tenant_sys_async";
    const before = stack.model.requests.length;
    const event = runEvent({ tenantId, prompt: SEED_PROMPT });
    event.headers = { ...event.headers, prefer: "respond-async" };
    const started = RunRecordSchema.parse(json(await stack.invoke(event)));
    expect((await pollUntil(stack, started.runId, tenantId)).status).toBe("completed");
    const requests = stack.model.requests.slice(before);
    expect(requests.length).toBeGreaterThan(1);
    for (const request of requests)
      expect(request.messages[0]).toEqual({ role: "system", content: SYSTEM_PROMPT });
  });

  it("unset or blank means the accounting assistant's prompt; over the cap fails the cold start", () => {
    expect(loadConfig({}).prompts.system).toBeUndefined();
    expect(loadConfig({ SYSTEM_PROMPT: " \n " }).prompts.system).toBeUndefined();
    expect(DEFAULT_SYSTEM_PROMPT).toContain("accounting assistant");
    expect(loadConfig({ SYSTEM_PROMPT: "x".repeat(MAX_SYSTEM_PROMPT_CHARS) }).prompts.system).toHaveLength(
      MAX_SYSTEM_PROMPT_CHARS,
    );
    expect(() => loadConfig({ SYSTEM_PROMPT: "x".repeat(MAX_SYSTEM_PROMPT_CHARS + 1) })).toThrow(ConfigError);
    expect(() => loadConfig({ SYSTEM_PROMPT: "x".repeat(MAX_SYSTEM_PROMPT_CHARS + 1) })).toThrow(
      /SYSTEM_PROMPT/,
    );
  });
});
