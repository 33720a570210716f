import { randomUUID } from "node:crypto";
import { type Task, TaskState, type TaskStatusUpdateEvent } from "@a2a-js/sdk";
import type { Client } from "@a2a-js/sdk/client";
import {
  RequestMalformedError,
  TaskNotCancelableError,
  TaskNotFoundError,
  UnsupportedOperationError,
} from "@a2a-js/sdk/errors";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { agentCardOf } from "../shared/a2a/card.js";
import { PROMPT_MAX_CHARS } from "../shared/runs/run-request.js";
import {
  a2aClientAt,
  a2aMessage,
  artifactValues,
  CALLERS,
  errorInfoOf,
  listedTaskIds,
  type ProtocolStack,
  SEED_PROMPT,
  startProtocolStack,
} from "./support/protocols.js";

let env: ProtocolStack;
beforeAll(async () => {
  env = await startProtocolStack();
});
afterAll(async () => {
  await env?.stop();
});

/** The official A2A client for one caller, built from the card it discovers at the dev server. */
const clientAs = (token: string): Promise<Client> => a2aClientAt(env.dev.url, env.fetchAs(token));

describe("A2A through the official client, against the real handler behind the dev gateway", () => {
  it("serves the Agent Card without a token: JSON-RPC interface, skills, bearer security of the API's issuer", async () => {
    const response = await fetch(`${env.dev.url}/.well-known/agent-card.json`);
    expect(response.status).toBe(200);
    const card = (await response.json()) as {
      name: string;
      supportedInterfaces: unknown;
      skills: Array<{ id: string }>;
      securitySchemes: Record<string, Record<string, Record<string, string>>>;
      capabilities: unknown;
    };
    expect(card.name).toBe("boundloop");
    expect(card.supportedInterfaces).toEqual([
      { url: `${env.dev.url}/v1/a2a`, protocolBinding: "JSONRPC", protocolVersion: "1.0" },
    ]);
    expect(card.skills.map((skill: { id: string }) => skill.id)).toEqual(
      expect.arrayContaining(["accounting-task", "calculateTax", "recordInvoice"]),
    );
    expect(card.securitySchemes.bearer?.httpAuthSecurityScheme).toMatchObject({
      scheme: "Bearer",
      bearerFormat: "JWT",
    });
    // The dev issuer is a URN: there is no discovery document to point at, so no OpenID Connect scheme.
    expect(env.issuer.issuer).toMatch(/^urn:/);
    expect(Object.keys(card.securitySchemes)).toEqual(["bearer"]);
    expect(card.capabilities).toMatchObject({ streaming: true });
  });

  it("points the OpenID Connect scheme at an https issuer's discovery document", () => {
    const issuer = "https://cognito-idp.eu-west-2.amazonaws.com/eu-west-2_abc/";
    const card = agentCardOf(
      { auth: { ...env.stack.config.auth, issuer } },
      env.stack.deps.tools,
      env.dev.url,
    );
    const oidc = card.securitySchemes.oidc?.scheme;
    expect(oidc?.$case === "openIdConnectSecurityScheme" && oidc.value.openIdConnectUrl).toBe(
      "https://cognito-idp.eu-west-2.amazonaws.com/eu-west-2_abc/.well-known/openid-configuration",
    );
  });

  it("sends the seed scenario: a completed task with the backend's 300.00 / 1800.00 as artifacts and one invoice; a repeated message id is the same task", async () => {
    const client = await clientAs(env.tokens.alice);
    const messageId = randomUUID();
    const result = await client.sendMessage(a2aMessage(SEED_PROMPT, { messageId }));
    const task = result as Awaited<ReturnType<Client["getTask"]>>;
    expect(task.id).toMatch(/^run_/);
    expect(task.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    const taxes = artifactValues(task, "calculateTax");
    expect(taxes[0]).toMatchObject({
      status: "success",
      data: { taxAmount: { amount: "300.00" }, grossTotal: { amount: "1800.00" } },
    });
    expect(taxes[1]).toMatchObject({ status: "business_error", error: { code: "UNSUPPORTED_JURISDICTION" } });
    const [answer] = artifactValues(task, "answer") as string[];
    expect(answer).toContain("1800.00");
    expect(await env.stack.deps.ledger.list("tenant_uk_01")).toHaveLength(1);

    const again = (await client.sendMessage(a2aMessage(SEED_PROMPT, { messageId }))) as typeof task;
    expect(again.id).toBe(task.id);
    expect(await env.stack.deps.ledger.list("tenant_uk_01")).toHaveLength(1);

    const got = await client.getTask({ id: task.id, tenant: "", historyLength: undefined });
    expect(got.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(got.contextId).toBe(task.contextId);

    expect(await listedTaskIds(client)).toContain(task.id);
  });

  it("keeps a message's tool keys apart from POST /v1/runs: an Idempotency-Key in a protocol's key scope (a2a:<messageId>) is refused, never a replay of the message's invoice", async () => {
    const client = await clientAs(env.tokens.alice);
    const messageId = randomUUID();
    await client.sendMessage(a2aMessage(SEED_PROMPT, { messageId }));
    const invoices = (await env.stack.deps.ledger.list("tenant_uk_01")).length;
    for (const key of [`a2a:${messageId}`, `agui:${messageId}`, `mcp:${CALLERS.alice.sub}:${messageId}`]) {
      const response = await env.fetchAs(env.tokens.alice)(`${env.dev.url}/v1/runs`, {
        method: "POST",
        headers: { "content-type": "application/json", "idempotency-key": key },
        body: JSON.stringify({ prompt: SEED_PROMPT }),
      });
      expect(response.status).toBe(400);
      expect(await response.json()).toMatchObject({
        code: "INVALID_REQUEST",
        errors: [{ in: "header", path: "Idempotency-Key" }],
      });
    }
    expect(await env.stack.deps.ledger.list("tenant_uk_01")).toHaveLength(invoices);
  });

  it("continues a context: the second message's run continues the first's; an unknown context is refused", async () => {
    const client = await clientAs(env.tokens.alice);
    const first = (await client.sendMessage(a2aMessage("What is the UK VAT on 100 GBP?"))) as Task;
    const second = (await client.sendMessage(
      a2aMessage("And on 200 GBP?", { contextId: first.contextId }),
    )) as Task;
    expect(second.contextId).toBe(first.contextId);
    expect(second.id).not.toBe(first.id);
    expect(second.metadata?.boundloop.previousRunId).toBe(first.id);
    await expect(client.sendMessage(a2aMessage("Hi", { contextId: "ctx-never-started" }))).rejects.toThrow(
      /conversation/,
    );
  });

  it("streams a task: the task, working updates with ids, the artifacts and the final completed state; resubscribe replays it", async () => {
    const client = await clientAs(env.tokens.alice);
    const kinds: string[] = [];
    let taskId = "";
    let final: TaskStatusUpdateEvent | undefined;
    const events: string[] = [];
    for await (const item of client.sendMessageStream(a2aMessage("What is the UK VAT on 250 GBP?"))) {
      kinds.push(item.payload?.$case ?? "?");
      if (item.payload?.$case === "task") taskId = item.payload.value.id;
      if (item.payload?.$case === "statusUpdate") {
        final = item.payload.value;
        events.push(`${final.metadata?.seq}:${final.metadata?.event.type}`);
      }
    }
    expect(kinds[0]).toBe("task");
    expect(kinds).toContain("artifactUpdate");
    expect(final?.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(events[0]).toBe("1:run.started");
    expect(events.at(-1)).toMatch(/^[0-9]+:run\.finished$/);
    expect(events.map((event) => Number(event.split(":")[0]))).toEqual(events.map((_, i) => i + 1));

    const replay: string[] = [];
    for await (const item of client.resubscribeTask({ id: taskId, tenant: "" }))
      replay.push(item.payload?.$case ?? "?");
    expect(replay).toEqual(["task"]);
  });

  it("isolates tasks: another user's or tenant's task is not found, not listed, not cancelled, its context not continued", async () => {
    const alice = await clientAs(env.tokens.alice);
    const task = (await alice.sendMessage(a2aMessage("What is the UK VAT on 10 GBP?"))) as Task;
    for (const token of [env.tokens.bob, env.tokens.mallory]) {
      const other = await clientAs(token);
      const notFound = await other
        .getTask({ id: task.id, tenant: "", historyLength: undefined })
        .catch((error: unknown) => error);
      expect(notFound).toBeInstanceOf(TaskNotFoundError);
      expect((notFound as TaskNotFoundError).message).toBe(`There is no run ${task.id}.`);
      await expect(other.cancelTask({ id: task.id, tenant: "", metadata: undefined })).rejects.toThrow(
        TaskNotFoundError,
      );
      await expect(other.sendMessage(a2aMessage("Go on", { contextId: task.contextId }))).rejects.toThrow(
        /no conversation/,
      );
      await expect(
        other.sendMessage({
          ...a2aMessage("Go on"),
          message: { ...a2aMessage("Go on").message, taskId: task.id },
        }),
      ).rejects.toThrow(TaskNotFoundError);
      expect(await listedTaskIds(other, "tenant_uk_01")).not.toContain(task.id);
    }
    expect(CALLERS.mallory.tenant_id).not.toBe(CALLERS.alice.tenant_id);
    expect(CALLERS.mallory.scope).toContain("billing:read");
    expect((await env.stack.deps.runs.get(CALLERS.alice.tenant_id, task.id))?.run.status).toBe("completed");
  });

  it("applies the one access rule: a billing reader of the tenant sees a task (as GET /v1/runs/{runId}), but does not list, cancel or continue it", async () => {
    const alice = await clientAs(env.tokens.alice);
    const task = (await alice.sendMessage(a2aMessage("What is the UK VAT on 12 GBP?"))) as Task;
    const carol = await clientAs(env.tokens.carol);
    const seen = await carol.getTask({ id: task.id, tenant: "", historyLength: undefined });
    expect(seen.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(await listedTaskIds(carol)).not.toContain(task.id);
    await expect(carol.cancelTask({ id: task.id, tenant: "", metadata: undefined })).rejects.toThrow(
      TaskNotFoundError,
    );
    await expect(carol.sendMessage(a2aMessage("Go on", { contextId: task.contextId }))).rejects.toThrow(
      /no conversation/,
    );
  });

  it("refuses a message id reused for another message (the code in the error's metadata) and a task that cannot be cancelled", async () => {
    const client = await clientAs(env.tokens.alice);
    const messageId = randomUUID();
    const task = (await client.sendMessage(
      a2aMessage("What is the UK VAT on 7 GBP?", { messageId }),
    )) as Task;
    const reused = await client
      .sendMessage(a2aMessage("What is the UK VAT on 8 GBP?", { messageId }))
      .catch((error: unknown) => error);
    expect(reused).toBeInstanceOf(UnsupportedOperationError);
    expect(errorInfoOf(reused)).toEqual({ code: "IDEMPOTENCY_KEY_REUSED" });
    const ended = await client
      .cancelTask({ id: task.id, tenant: "", metadata: undefined })
      .catch((error: unknown) => error);
    expect(ended).toBeInstanceOf(TaskNotCancelableError);
    expect(errorInfoOf(ended)).toMatchObject({
      code: "RUN_NOT_RUNNING",
      runStatus: "completed",
    });
  });

  it("answers concurrent sends of one message id with its task or IDEMPOTENCY_KEY_IN_USE, never TaskNotFoundError", async () => {
    const client = await clientAs(env.tokens.alice);
    const messageId = randomUUID();
    const answers = await Promise.all(
      Array.from({ length: 4 }, () =>
        client
          .sendMessage(a2aMessage("What is the UK VAT on 9 GBP?", { messageId }))
          .catch((error: unknown) => error),
      ),
    );
    const tasks = answers.filter((answer): answer is Task => !(answer instanceof Error));
    expect(tasks.length).toBeGreaterThan(0);
    expect(new Set(tasks.map((task) => task.id)).size).toBe(1);
    for (const refused of answers.filter((answer) => answer instanceof Error)) {
      expect(refused).toBeInstanceOf(UnsupportedOperationError);
      expect(errorInfoOf(refused)).toMatchObject({ code: "IDEMPOTENCY_KEY_IN_USE", runId: tasks[0]?.id });
      expect(Number(errorInfoOf(refused)?.retryAfterSeconds)).toBeGreaterThan(0);
    }
  });

  it("refuses a message POST /v1/runs would refuse as a prompt (blank, or over PROMPT_MAX_CHARS) and starts no run", async () => {
    const client = await clientAs(env.tokens.alice);
    const before = await listedTaskIds(client);
    for (const text of ["   ", `What is the UK VAT on 5 GBP? ${"x".repeat(PROMPT_MAX_CHARS)}`]) {
      const refused = await client.sendMessage(a2aMessage(text)).catch((error: unknown) => error);
      expect(refused).toBeInstanceOf(RequestMalformedError);
      expect((refused as Error).message).toMatch(/text part/);
    }
    expect(await listedTaskIds(client)).toEqual(before);
  });

  it("refuses a call without a token before the function (the gateway's 401)", async () => {
    const response = await fetch(`${env.dev.url}/v1/a2a`, {
      method: "POST",
      headers: { "content-type": "application/json", "a2a-version": "1.0" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "ListTasks", params: {} }),
    });
    expect(response.status).toBe(401);
  });
});

describe("A2A resume", () => {
  it("SubscribeToTask with Last-Event-ID gives every later event once, each SSE event's id its run event sequence", async () => {
    const client = await clientAs(env.tokens.alice);
    const task = (await client.sendMessage(a2aMessage("What is the UK VAT on 40 GBP?"))) as Task;
    const response = await env.fetchAs(env.tokens.alice)(`${env.dev.url}/v1/a2a`, {
      method: "POST",
      headers: { "content-type": "application/json", "a2a-version": "1.0", "last-event-id": "1" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 7, method: "SubscribeToTask", params: { id: task.id } }),
    });
    expect(response.headers.get("content-type")).toMatch(/text\/event-stream/);
    const body = await response.text();
    const ids = [...body.matchAll(/^id: ([0-9]+)$/gm)].map((match) => Number(match[1]));
    expect(ids[0]).toBe(2);
    expect(ids).not.toContain(1);
    expect(body).toContain('"run.finished"');
  });

  it("SubscribeToTask on a task whose run waits for budget (awaiting_quota) follows it to its end, not a snapshot", async () => {
    const { tenant_id: tenantId, sub: userId } = CALLERS.alice;
    const runId = `run_${randomUUID()}`;
    const limits = { maxCycles: 5, timeoutMs: 600_000 };
    await env.stack.deps.runs.start({ tenantId, runId, userId, prompt: "wait for budget", limits });
    expect(await env.stack.deps.runs.setAwaitingQuota(tenantId, runId, true)).toBe(true);
    // The run ends (cancelled here) while the stream follows it; the gateway buffers the answer (as API
    // Gateway does), so the end is set up before the request.
    const ended = new Promise((resolve) => setTimeout(resolve, 1_500)).then(() =>
      env.stack.deps.runs.cancel(tenantId, runId, "Cancelled by usr_alice."),
    );
    const response = await env.fetchAs(env.tokens.alice)(`${env.dev.url}/v1/a2a`, {
      method: "POST",
      headers: { "content-type": "application/json", "a2a-version": "1.0" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 9, method: "SubscribeToTask", params: { id: runId } }),
    });
    const body = await response.text();
    expect(await ended).toBe(true);
    const results = [...body.matchAll(/^data: (.*)$/gm)].map((match) => JSON.parse(match[1] ?? "{}").result);
    expect(results.length).toBeGreaterThan(1);
    expect(JSON.stringify(results.at(-1))).toContain("TASK_STATE_CANCELED");
  });

  it("SubscribeToTask with Last-Event-ID at or past an ended task's last event answers the task, not TaskNotFoundError", async () => {
    const client = await clientAs(env.tokens.alice);
    const task = (await client.sendMessage(a2aMessage("What is the UK VAT on 41 GBP?"))) as Task;
    const last = await env.stack.deps.runEvents.store.lastSeq(CALLERS.alice.tenant_id, task.id);
    expect(last).toBeGreaterThan(1);
    for (const lastEventId of [last, last + 5]) {
      const response = await env.fetchAs(env.tokens.alice)(`${env.dev.url}/v1/a2a`, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          "a2a-version": "1.0",
          "last-event-id": String(lastEventId),
        },
        body: JSON.stringify({ jsonrpc: "2.0", id: 8, method: "SubscribeToTask", params: { id: task.id } }),
      });
      const body = await response.text();
      expect(body).not.toContain('"error"');
      const results = [...body.matchAll(/^data: (.*)$/gm)].map(
        (match) => JSON.parse(match[1] ?? "{}").result,
      );
      expect(results).toHaveLength(1);
      expect(results[0].task).toMatchObject({ id: task.id, status: { state: "TASK_STATE_COMPLETED" } });
    }
  });
});

describe("A2A subscribe to a task waiting for budget (awaiting_quota, docs/quotas.md)", () => {
  it("follows the task (it is working, not ended) until its real end, instead of closing after the snapshot", async () => {
    const { tenant_id: tenantId, sub: userId } = CALLERS.alice;
    const runId = `run_${randomUUID()}`;
    const { runs, runEvents } = env.stack.deps;
    await runs.start({ tenantId, runId, userId, prompt: "x", limits: { maxCycles: 5, timeoutMs: 25_000 } });
    expect(await runs.setAwaitingQuota(tenantId, runId, true)).toBe(true);
    // The task's events are followed once its log is read: the run then ends (a cancel here).
    const read = runEvents.store.read.bind(runEvents.store);
    let following: () => void = () => {};
    const followed = new Promise<"followed">((resolve) => {
      following = () => resolve("followed");
    });
    runEvents.store.read = async (...args) => {
      if (args[1] === runId) following();
      return read(...args);
    };
    try {
      const answered = env.fetchAs(env.tokens.alice)(`${env.dev.url}/v1/a2a`, {
        method: "POST",
        headers: { "content-type": "application/json", "a2a-version": "1.0" },
        body: JSON.stringify({ jsonrpc: "2.0", id: 9, method: "SubscribeToTask", params: { id: runId } }),
      });
      // Behind the HTTP API the stream is buffered: it arrives whole, once it has ended.
      if ((await Promise.race([followed, answered])) === "followed") {
        expect(await runs.cancel(tenantId, runId, "Cancelled by usr_alice.")).toBe(true);
      }
      const body = await (await answered).text();
      const results = [...body.matchAll(/^data: (.*)$/gm)].map(
        (match) => JSON.parse(match[1] ?? "{}").result,
      );
      // The task as it is when its first event comes, then that event: the end of the run.
      expect(results[0].task).toMatchObject({ id: runId });
      expect(results.length).toBeGreaterThan(1);
      expect(JSON.stringify(results.at(-1))).toContain("TASK_STATE_CANCELED");
    } finally {
      runEvents.store.read = read;
    }
  });
});
