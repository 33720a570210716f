/**
 * Refusals over A2A and AG-UI (docs/a2a.md and docs/ag-ui.md, "Errors"): a tenant's policy that forbids a
 * tool call reaches the task's artifacts and the AG-UI tool result as POLICY_DENIED with nothing written;
 * a run refused at the door by a rate limit is a JSON-RPC error with RATE_LIMITED and when to retry in its
 * ErrorInfo metadata (A2A), a RUN_ERROR with the code (AG-UI), and no run is written; the same message
 * (same message id, same run id) sent again once the limit allows runs.
 */
import { type Task, TaskState } from "@a2a-js/sdk";
import { EventType } from "@ag-ui/client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { mintToken } from "../local/dev-auth.js";
import {
  a2aClientAt,
  a2aMessage,
  aguiAgentAt,
  artifactValues,
  errorInfoOf,
  type ProtocolStack,
  runAgui,
  SEED_PROMPT,
  startProtocolStack,
} from "./support/protocols.js";

const TENANT = "tenant_proto_refusals";
/**
 * The quotas' injected clock: 1 s into a minute, so a refusal's Retry-After is the minute's 59 s left; a
 * test moves it on to the next minute.
 */
let now = Math.floor(Date.now() / 60_000) * 60_000 + 1_000;

let env: ProtocolStack;
let writer: string;
beforeAll(async () => {
  env = await startProtocolStack(
    { USER_RUNS_PER_MINUTE: "2", POWERTOOLS_LOG_LEVEL: "SILENT" },
    { quotas: { now: () => now } },
  );
  writer = await mintToken(env.issuer, { sub: "usr_proto", tenant_id: TENANT, scope: "billing:write" });
  const admin = await mintToken(env.issuer, { sub: "usr_admin", tenant_id: TENANT, scope: "policy:admin" });
  const put = await env.fetchAs(admin)(`${env.dev.url}/v1/policies`, {
    method: "PUT",
    headers: { "content-type": "application/json", "if-none-match": "*" },
    body: JSON.stringify({
      mode: "enforce",
      policies:
        '@id("base")\npermit (principal, action, resource);\n@id("no-invoices")\nforbid (principal, action == Action::"recordInvoice", resource);',
    }),
  });
  expect(put.status, await put.clone().text()).toBe(200);
}, 120_000);
afterAll(async () => {
  await env?.stop();
});

/** The official A2A client as the tenant's writer. */
const a2aClient = () => a2aClientAt(env.dev.url, env.fetchAs(writer));

/** An AG-UI run of `prompt` as the tenant's writer, with every event it applied. */
async function aguiRun(prompt: string) {
  return (await runAgui(aguiAgentAt(`${env.dev.url}/v1/agui`, writer, prompt))).events;
}

/** How many runs the writer has (GET /v1/runs). */
async function ownRuns(): Promise<number> {
  const response = await env.fetchAs(writer)(`${env.dev.url}/v1/runs?limit=50`);
  expect(response.status).toBe(200);
  return ((await response.json()) as { items: unknown[] }).items.length;
}

describe("refusals over A2A and AG-UI", () => {
  it("a policy's forbid: POLICY_DENIED in the A2A task's artifact and the AG-UI tool result, no invoice written", async () => {
    const client = await a2aClient();
    const task = (await client.sendMessage(a2aMessage(SEED_PROMPT))) as Task;
    const invoice = artifactValues(task, "recordInvoice");
    expect(invoice).toEqual([
      expect.objectContaining({
        status: "permission_denied",
        error: expect.objectContaining({
          code: "POLICY_DENIED",
          details: expect.objectContaining({ policyIds: ["no-invoices"] }),
        }),
      }),
    ]);

    const events = await aguiRun(SEED_PROMPT);
    const results = events
      .filter((event) => event.type === EventType.TOOL_CALL_RESULT)
      .map(
        (event) => JSON.parse((event as unknown as { content: string }).content) as Record<string, unknown>,
      );
    expect(results.at(-1)).toMatchObject({ status: "permission_denied", error: { code: "POLICY_DENIED" } });
    expect(events.at(-1)?.type).toBe(EventType.RUN_FINISHED);
    expect(await env.stack.deps.ledger.list(TENANT)).toEqual([]);
  });

  it("over the user's runs per minute: A2A's JSON-RPC error and AG-UI's RUN_ERROR carry RATE_LIMITED and the retry; no run is written", async () => {
    const before = await ownRuns();
    expect(before).toBe(2);
    const client = await a2aClient();
    const refused = await client
      .sendMessage(a2aMessage("What is the UK VAT on 10 GBP?"))
      .catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(Error);
    expect(errorInfoOf(refused)).toMatchObject({
      code: "RATE_LIMITED",
      policy: "user-minute",
      limit: "2",
      retryAfterSeconds: "59",
    });

    const events = await aguiRun("What is the UK VAT on 10 GBP?");
    expect(events).toEqual([
      expect.objectContaining({
        type: EventType.RUN_ERROR,
        code: "RATE_LIMITED",
        rawEvent: expect.objectContaining({ retryAfterSeconds: 59 }),
      }),
    ]);
    expect(await ownRuns()).toBe(before);
  });

  it("a message refused by the rate limit and sent again with its message id (or run id) once the minute is over runs, never PREVIOUS_RUN_IN_PROGRESS", async () => {
    const client = await a2aClient();
    const message = a2aMessage("What is the UK VAT on 11 GBP?");
    const refused = await client.sendMessage(message).catch((error: unknown) => error);
    expect(errorInfoOf(refused)).toMatchObject({ code: "RATE_LIMITED", retryAfterSeconds: "59" });
    const agent = () =>
      aguiAgentAt(`${env.dev.url}/v1/agui`, writer, "What is the UK VAT on 12 GBP?", "t-11");
    const aguiRunId = "agui-rate-limited";
    expect((await runAgui(agent(), aguiRunId)).events).toEqual([
      expect.objectContaining({ type: EventType.RUN_ERROR, code: "RATE_LIMITED" }),
    ]);
    const before = await ownRuns();

    now += 60_000;
    const task = (await client.sendMessage(message)) as Task;
    expect(task.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(task.contextId).toBe(task.id);
    const again = await runAgui(agent(), aguiRunId);
    expect(again.events.at(-1)?.type).toBe(EventType.RUN_FINISHED);
    expect(await ownRuns()).toBe(before + 2);
  });
});
