/**
 * A2A 1.0's rules this agent follows where the SDK's transport leaves them to the handler, checked on the
 * wire through the dev gateway (docs/a2a.md): GetExtendedAgentCard without the capability, ListTasks'
 * page size and total, a JSON-RPC notification (a request without an `id`), task ids no run can have,
 * message parts the card does not take, and a message naming a task of another context or one that has
 * ended.
 */
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { countRunList } from "../shared/store/run-list.js";
import { type ProtocolStack, startProtocolStack } from "./support/protocols.js";

let env: ProtocolStack;
beforeAll(async () => {
  env = await startProtocolStack();
});
afterAll(async () => {
  await env?.stop();
});

/** A JSON-RPC error or result as the endpoint answered it. */
interface RpcAnswer {
  id?: unknown;
  result?: Record<string, unknown>;
  error?: { code: number; message: string };
}

/** A ListTasks result (protojson). */
interface ListAnswer {
  tasks: Array<{ id: string }>;
  nextPageToken: string;
  pageSize: number;
  totalSize: number;
}

/** POSTs `body` to /v1/a2a as `token`'s caller: the HTTP status, content type and parsed body. */
async function post(token: string, body: unknown) {
  const response = await env.fetchAs(token)(`${env.dev.url}/v1/a2a`, {
    method: "POST",
    headers: { "content-type": "application/json", "a2a-version": "1.0" },
    body: JSON.stringify(body),
  });
  const text = await response.text();
  return {
    status: response.status,
    type: response.headers.get("content-type") ?? "",
    body: (text ? JSON.parse(text) : undefined) as RpcAnswer & { code?: string; errors?: unknown },
  };
}

/** One JSON-RPC call of `method` as `token`'s caller. */
const rpc = async (token: string, method: string, params?: unknown) =>
  (await post(token, { jsonrpc: "2.0", id: randomUUID(), method, params })).body;

/** A SendMessage of `text` (a fresh message id), in `contextId` when given. */
const sendParams = (text: string, contextId?: string) => ({
  message: {
    messageId: randomUUID(),
    role: "ROLE_USER",
    parts: [{ text }],
    ...(contextId ? { contextId } : {}),
  },
});

describe("GetExtendedAgentCard", () => {
  it("is UnsupportedOperationError (-32004): the public card does not declare capabilities.extendedAgentCard", async () => {
    const card = (await (await fetch(`${env.dev.url}/.well-known/agent-card.json`)).json()) as {
      capabilities: { extendedAgentCard?: boolean };
    };
    expect(card.capabilities.extendedAgentCard ?? false).toBe(false);
    const answer = await rpc(env.tokens.alice, "GetExtendedAgentCard");
    expect(answer.result).toBeUndefined();
    expect(answer.error?.code).toBe(-32004);
  });
});

describe("ListTasks", () => {
  it("refuses a pageSize outside 1..100 (or not a whole number) with invalid params (-32602), listing nothing", async () => {
    for (const pageSize of [-5, 0, 101, 2.5]) {
      const answer = await rpc(env.tokens.bob, "ListTasks", { pageSize });
      expect(answer.result, `pageSize ${pageSize}`).toBeUndefined();
      expect(answer.error?.code, `pageSize ${pageSize}`).toBe(-32602);
      expect(answer.error?.message).toMatch(/pageSize/);
    }
    const listed = await rpc(env.tokens.bob, "ListTasks", { pageSize: 100 });
    expect(listed.error).toBeUndefined();
  });

  it("reports totalSize as every task the request matches, not the page's: across pages and with filters", async () => {
    const caller = env.tokens.carol;
    const list = async (params: Record<string, unknown>) =>
      (await rpc(caller, "ListTasks", params)).result as unknown as ListAnswer;
    const sent: string[] = [];
    for (const amount of [21, 22, 23]) {
      const answer = await rpc(caller, "SendMessage", sendParams(`What is the UK VAT on ${amount} GBP?`));
      sent.push((answer.result as unknown as { task: { id: string } }).task.id);
    }
    const first = await list({ pageSize: 2 });
    expect(first.tasks).toHaveLength(2);
    expect(first).toMatchObject({ pageSize: 2, totalSize: 3 });
    expect(first.nextPageToken).not.toBe("");
    const second = await list({ pageSize: 2, pageToken: first.nextPageToken });
    expect(second.tasks).toHaveLength(1);
    expect(second).toMatchObject({ totalSize: 3, nextPageToken: "" });
    const ids = [...first.tasks, ...second.tasks].map((task) => task.id);
    expect(ids.sort()).toEqual([...sent].sort());

    expect(await list({ pageSize: 1, status: "TASK_STATE_COMPLETED" })).toMatchObject({
      pageSize: 1,
      totalSize: 3,
    });
    expect(await list({ status: "TASK_STATE_FAILED" })).toMatchObject({ tasks: [], totalSize: 0 });
    const context = await list({ contextId: sent[1], pageSize: 1 });
    expect(context.tasks.map((task) => task.id)).toEqual([sent[1]]);
    expect(context).toMatchObject({ totalSize: 1, nextPageToken: "" });

    // The count is bounded: within its read budget it is exact, past it the count so far (a lower bound).
    const { deps, config } = env.stack;
    const count = (budget: { reads: number; readSize: number }) =>
      countRunList(
        deps.ddb,
        config.table.name,
        "tenant_uk_01",
        { userId: "usr_carol" },
        Date.now() / 1000,
        budget,
      );
    const kept = await countRunList(deps.ddb, config.table.name, "tenant_uk_01", {}, Date.now() / 1000);
    expect(kept.exact).toBe(true);
    expect(await count({ reads: kept.count + 1, readSize: 1 })).toEqual({ count: 3, exact: true });
    const partial = await count({ reads: 1, readSize: 1 });
    expect(partial.exact).toBe(false);
    expect(partial.count).toBeLessThanOrEqual(1);
  });
});

describe("ListTasks' filters and what each task holds (A2A 1.0 ListTasksRequest)", () => {
  it("keeps tasks whose status changed after statusTimestampAfter, and refuses an unreadable one or an unknown status", async () => {
    const caller = env.tokens.alice;
    const list = async (params: Record<string, unknown>) =>
      (await rpc(caller, "ListTasks", params)).result as unknown as ListAnswer & {
        tasks: Array<{ id: string; status: { timestamp: string } }>;
      };
    const first = await rpc(caller, "SendMessage", sendParams("What is the UK VAT on 41 GBP?"));
    const firstTask = (first.result as unknown as { task: { id: string; status: { timestamp: string } } })
      .task;
    const second = await rpc(caller, "SendMessage", sendParams("What is the UK VAT on 42 GBP?"));
    const secondTask = (second.result as unknown as { task: { id: string; status: { timestamp: string } } })
      .task;
    expect(Date.parse(secondTask.status.timestamp)).toBeGreaterThan(Date.parse(firstTask.status.timestamp));

    // Strictly after the first task's status time: the second only, counted as such.
    const after = await list({ statusTimestampAfter: firstTask.status.timestamp });
    expect(after.tasks.map((task) => task.id)).toEqual([secondTask.id]);
    expect(after.totalSize).toBe(1);
    // The same instant written without milliseconds and in another offset still compares as an instant.
    const earlier = new Date(Date.parse(firstTask.status.timestamp) - 1000);
    const withOffset = `${earlier.toISOString().slice(0, 19)}+00:00`;
    const both = await list({ statusTimestampAfter: withOffset });
    expect(both.tasks.map((task) => task.id)).toEqual(expect.arrayContaining([firstTask.id, secondTask.id]));
    expect(await list({ statusTimestampAfter: "2999-01-01T00:00:00Z" })).toMatchObject({
      tasks: [],
      totalSize: 0,
    });

    for (const params of [{ statusTimestampAfter: "yesterday" }, { status: "TASK_STATE_DONE" }]) {
      const answer = await rpc(caller, "ListTasks", params);
      expect(answer.result, JSON.stringify(params)).toBeUndefined();
      expect(answer.error?.code, JSON.stringify(params)).toBe(-32602);
    }
  });

  it("gives artifacts only with includeArtifacts, and at most historyLength messages of history (GetTask too)", async () => {
    const caller = env.tokens.alice;
    const sent = await rpc(caller, "SendMessage", sendParams("What is the UK VAT on 43 GBP?"));
    const taskId = (sent.result as unknown as { task: { id: string } }).task.id;
    type Listed = { id: string; artifacts?: Array<{ artifactId: string }>; history?: unknown[] };
    const listed = async (params: Record<string, unknown>) =>
      ((await rpc(caller, "ListTasks", params)).result as unknown as { tasks: Listed[] }).tasks.find(
        (task) => task.id === taskId,
      );
    expect((await listed({}))?.artifacts ?? []).toEqual([]);
    const full = await listed({ includeArtifacts: true });
    const got = (await rpc(caller, "GetTask", { id: taskId })).result as unknown as Listed;
    expect(full?.artifacts?.map((artifact) => artifact.artifactId)).toEqual(
      got.artifacts?.map((artifact) => artifact.artifactId),
    );
    expect(full?.artifacts?.map((artifact) => artifact.artifactId)).toContain("answer");

    expect(got.history).toHaveLength(1);
    expect((await listed({}))?.history).toHaveLength(1);
    expect((await listed({ historyLength: 0 }))?.history ?? []).toEqual([]);
    const none = (await rpc(caller, "GetTask", { id: taskId, historyLength: 0 })).result as unknown as Listed;
    expect(none.history ?? []).toEqual([]);
    const one = (await rpc(caller, "GetTask", { id: taskId, historyLength: 1 })).result as unknown as Listed;
    expect(one.history).toHaveLength(1);
    const quiet = await rpc(caller, "SendMessage", {
      ...sendParams("What is the UK VAT on 44 GBP?"),
      configuration: { historyLength: 0 },
    });
    const quietTask = (quiet.result as unknown as { task: Listed }).task;
    expect(quietTask.history ?? []).toEqual([]);
    expect(
      ((await rpc(caller, "GetTask", { id: quietTask.id })).result as unknown as Listed).history,
    ).toHaveLength(1);
  });
});

describe("a JSON-RPC notification (no id)", () => {
  it("is refused before the protocol (400 INVALID_REQUEST problem+json), starting no run", async () => {
    const caller = env.tokens.mallory;
    const before = (await rpc(caller, "ListTasks", {})).result?.tasks ?? [];
    for (const method of ["SendMessage", "ListTasks"]) {
      const answer = await post(caller, {
        jsonrpc: "2.0",
        method,
        params: method === "SendMessage" ? sendParams("What is the UK VAT on 30 GBP?") : {},
      });
      expect(answer.status, method).toBe(400);
      expect(answer.type).toMatch(/application\/problem\+json/);
      expect(answer.body.code).toBe("INVALID_REQUEST");
      expect(answer.body.errors).toEqual([
        { in: "body", path: "id", message: expect.stringMatching(/need an id/) },
      ]);
    }
    expect((await rpc(caller, "ListTasks", {})).result?.tasks ?? []).toEqual(before);
  });
});

describe("A task id that cannot be a run id", () => {
  it("is invalid params (-32602, INVALID_REQUEST) for GetTask, CancelTask, SubscribeToTask and a SendMessage's taskId, never an internal error", async () => {
    for (const id of ["", `run_${"a".repeat(3000)}`, "run_../x"]) {
      for (const [method, params] of [
        ["GetTask", { id }],
        ["CancelTask", { id }],
        ["SubscribeToTask", { id }],
        [
          "SendMessage",
          {
            message: {
              messageId: randomUUID(),
              taskId: id || "run_ä",
              role: "ROLE_USER",
              parts: [{ text: "Hi" }],
            },
          },
        ],
      ] as const) {
        const answer = (await post(env.tokens.alice, { jsonrpc: "2.0", id: 1, method, params })).body;
        expect(answer.result, `${method} ${id.slice(0, 12)}`).toBeUndefined();
        expect(answer.error?.code, `${method} ${id.slice(0, 12)}`).toBe(-32602);
        expect(JSON.stringify(answer.error)).toContain('"code":"INVALID_REQUEST"');
      }
    }
  });
});

describe("A Last-Event-ID that is not an event sequence", () => {
  it("is invalid params (-32602, INVALID_REQUEST) for SubscribeToTask, as on every other stream, never read as 0", async () => {
    const task = (await rpc(env.tokens.alice, "SendMessage", sendParams("What is the UK VAT on 31 GBP?")))
      .result?.task as { id: string };
    for (const lastEventId of ["abc", "-1", "1e1", "1.5", "9".repeat(16)]) {
      const response = await env.fetchAs(env.tokens.alice)(`${env.dev.url}/v1/a2a`, {
        method: "POST",
        headers: { "content-type": "application/json", "a2a-version": "1.0", "last-event-id": lastEventId },
        body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "SubscribeToTask", params: { id: task.id } }),
      });
      const answer = JSON.parse(await response.text()) as RpcAnswer;
      expect(answer.result, lastEventId).toBeUndefined();
      expect(answer.error?.code, lastEventId).toBe(-32602);
      expect(JSON.stringify(answer.error), lastEventId).toContain("Last-Event-ID must be the id of an event");
    }
  });
});

describe("A message part the card does not take (defaultInputModes text/plain)", () => {
  it("is ContentTypeNotSupportedError (-32005) for a file, URL or data part beside the text, starting no run, never a run on the text alone", async () => {
    const caller = env.tokens.mallory;
    const before = (await rpc(caller, "ListTasks", {})).result?.tasks ?? [];
    for (const part of [
      { url: "https://example.com/invoice.pdf", mediaType: "application/pdf" },
      { raw: Buffer.from("%PDF-1.7").toString("base64"), mediaType: "application/pdf" },
      { data: { amount: "999999.00", currency: "GBP" } },
    ]) {
      for (const method of ["SendMessage", "SendStreamingMessage"]) {
        const answer = await post(caller, {
          jsonrpc: "2.0",
          id: 1,
          method,
          params: {
            message: {
              messageId: randomUUID(),
              role: "ROLE_USER",
              parts: [{ text: "Record the invoice in the attached file for a UK client" }, part],
            },
          },
        });
        expect(answer.type, method).toMatch(/application\/json/);
        expect(answer.body.error, `${method} ${Object.keys(part)[0]}`).toMatchObject({
          code: -32005,
          message: expect.stringMatching(/text\/plain/),
          data: [{ metadata: { code: "INVALID_REQUEST", field: "message.parts" } }],
        });
      }
    }
    expect((await rpc(caller, "ListTasks", {})).result?.tasks ?? []).toEqual(before);
  });
});

/** The task (its id and context) of a SendMessage of `text` as `token`'s caller. */
const sentTask = async (token: string, text: string) =>
  (await rpc(token, "SendMessage", sendParams(text))).result?.task as { id: string; contextId: string };

describe("A message naming a task and another context (A2A 1.0 §3.4.3)", () => {
  it("is invalid params (-32602, INVALID_REQUEST), starting no run", async () => {
    const caller = env.tokens.mallory;
    const first = await sentTask(caller, "What is the UK VAT on 31 GBP?");
    const other = await sentTask(caller, "What is the UK VAT on 32 GBP?");
    expect(other.contextId).not.toBe(first.contextId);
    const before = (await rpc(caller, "ListTasks", {})).result?.tasks ?? [];
    const mismatched = sendParams("And on 33 GBP?", other.contextId);
    const answer = await rpc(caller, "SendMessage", {
      message: { ...mismatched.message, taskId: first.id },
    });
    expect(answer.error).toMatchObject({ code: -32602, message: expect.stringMatching(/context/) });
    expect((await rpc(caller, "ListTasks", {})).result?.tasks ?? []).toEqual(before);
  });
});

describe("A message naming a task that has ended (A2A 1.0 §3.1.1, the TCK's CORE-SEND-002)", () => {
  it("is UnsupportedOperationError (-32004, RUN_NOT_RUNNING with the status), starting no run; its context without the task id goes on", async () => {
    const caller = env.tokens.mallory;
    const first = await sentTask(caller, "What is the UK VAT on 35 GBP?");
    const before = (await rpc(caller, "ListTasks", {})).result?.tasks ?? [];
    for (const contextId of [first.contextId, undefined]) {
      const params = sendParams("And on 36 GBP?", contextId);
      for (const method of ["SendMessage", "SendStreamingMessage"]) {
        const answer = await post(caller, {
          jsonrpc: "2.0",
          id: 1,
          method,
          params: { message: { ...params.message, taskId: first.id } },
        });
        expect(answer.body.error, method).toMatchObject({
          code: -32004,
          data: [{ metadata: { code: "RUN_NOT_RUNNING", runId: first.id, runStatus: "completed" } }],
        });
      }
    }
    expect((await rpc(caller, "ListTasks", {})).result?.tasks ?? []).toEqual(before);
    const next = await rpc(caller, "SendMessage", sendParams("And on 37 GBP?", first.contextId));
    expect(next.result?.task).toMatchObject({ contextId: first.contextId });
  });
});
