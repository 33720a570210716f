/**
 * A synchronous run whose Lambda is killed mid-run (here: SIGKILL in a child process right after its
 * ledger write) never writes its outcome. Past its deadline + STALE_RUN_GRACE_MS every surface reads it
 * `abandoned` (shared/runs/abandoned.ts): GET, the listing and its status filter, the events feed (a
 * final event instead of waiting forever), A2A, a cancel, a continuation; before that it is `running`.
 * Time is the stack's injected clock: nothing sleeps for the grace.
 */
import { randomUUID } from "node:crypto";
import { once } from "node:events";
import type { APIGatewayProxyEventV2 } from "aws-lambda";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RUN_ABANDONED_REASON, STALE_RUN_GRACE_MS } from "../shared/runs/abandoned.js";
import { apiEvent } from "./fixtures/events.js";
import { spawnHandlerChild } from "./support/spawn-handler.js";
import { startTestStack, type TestStack } from "./support/stack.js";
import { ManualClock, parseSse, runEventsOf } from "./support/streaming.js";

/** The killed child's run timeout (ms): its deadline is at most this long after its request began. */
const CHILD_RUN_TIMEOUT_MS = 4_000;

const tenant = `tenant_abandon_${randomUUID().slice(0, 8)}`;
const ALICE = { sub: "usr_abandon_alice", tenant_id: tenant, scope: "billing:write" };
/** Same tenant, another user without billing:read: may not see Alice's runs. */
const BOB = { sub: "usr_abandon_bob", tenant_id: tenant, scope: "billing:write" };
/** Same tenant, billing:read: sees every run of the tenant. */
const CAROL = { sub: "usr_abandon_carol", tenant_id: tenant, scope: "billing:read" };
/** Another tenant, billing:read: sees none of this tenant's runs. */
const MALLORY = { sub: "usr_abandon_mallory", tenant_id: `${tenant}_other`, scope: "billing:read" };
/** A user of a tenant of its own, whose A2A context's latest turn is killed. */
const DAVE = { sub: "usr_abandon_dave", tenant_id: `${tenant}_a2a`, scope: "billing:write" };
type Caller = typeof ALICE;

const clock = new ManualClock();
let stack: TestStack;
let runId: string;
/** Dave's A2A context: its first turn completed, its second was killed mid-run. */
let context: { id: string; firstRunId: string };

/** The fields of the API's JSON answers these tests read (a run, a page of runs, a problem, usage). */
interface Answer {
  status?: string;
  cycles?: number | null;
  cyclesRecorded?: number;
  finishedAt?: string | null;
  items?: Array<{ runId: string; status: string }>;
  user?: { day: { tokens: { reserved: number } } };
  tenant?: { inFlight: { runs: number }; day: { runs: number; tokens: { reserved: number } } } | null;
  [field: string]: unknown;
}

/** One request through the real handler as `claims`; the parsed JSON body (or the raw text) and status. */
async function call(
  claims: Caller,
  method: string,
  path: string,
  options: { body?: unknown; headers?: Record<string, string> } = {},
) {
  const result = await stack.invoke(
    apiEvent("http-api-v2", {
      method,
      path,
      claims,
      body: options.body ?? null,
      ...(options.headers ? { headers: options.headers } : {}),
    }) as unknown as APIGatewayProxyEventV2,
  );
  const text = result.isBase64Encoded
    ? Buffer.from(result.body ?? "", "base64").toString("utf8")
    : (result.body ?? "");
  const type = String(result.headers?.["content-type"] ?? "");
  return {
    status: result.statusCode,
    text,
    body: type.includes("json") && text ? (JSON.parse(text) as Answer) : undefined,
  };
}

/** The ids of the runs a listing as `claims` holds (`query` e.g. `?status=running&scope=tenant`). */
async function listed(claims: Caller, query: string): Promise<string[]> {
  const page = await call(claims, "GET", `/v1/runs${query}`);
  expect(page.status).toBe(200);
  return (page.body?.items ?? []).map((run) => run.runId);
}

/** A2A GetTask of the run as `claims`: the JSON-RPC answer. */
async function getTask(claims: Caller, id: string) {
  const answer = await call(claims, "POST", "/v1/a2a", { body: a2aRequest("GetTask", { id }), headers: A2A });
  return answer.body as { result?: { status: { state: string; message?: unknown } }; error?: unknown };
}

/** Runs the real handler on `event` in a child process that SIGKILLs itself right after its ledger write. */
async function killedMidRun(event: unknown): Promise<void> {
  const { process: child, output } = spawnHandlerChild("kill-after-ledger-child.ts", stack.config, event, {
    RUN_TIMEOUT_MS: String(CHILD_RUN_TIMEOUT_MS),
  });
  const [, signal] = (await once(child, "close")) as [number | null, NodeJS.Signals | null];
  expect(signal, output().slice(-3000)).toBe("SIGKILL");
}

/** An A2A SendMessage of `text` as `claims`, in `contextId` when given: the JSON-RPC answer. */
async function sendMessage(claims: Caller, text: string, contextId?: string) {
  const message = {
    messageId: randomUUID(),
    role: "ROLE_USER",
    parts: [{ text }],
    ...(contextId ? { contextId } : {}),
  };
  const answer = await call(claims, "POST", "/v1/a2a", {
    body: a2aRequest("SendMessage", { message }),
    headers: A2A,
  });
  return answer.body as {
    result?: { task: { id: string; contextId: string; status: { state: string } } };
    error?: { message: string };
  };
}

/** A JSON-RPC request of `method`. */
const a2aRequest = (method: string, params: unknown) => ({ jsonrpc: "2.0", id: 1, method, params });

/** The headers of an A2A request. */
const A2A = { "content-type": "application/json", "a2a-version": "1.0" };

beforeAll(async () => {
  stack = await startTestStack({}, { clock, quotas: { now: () => clock.now() } });
  // Dave's context, before the clock moves: a child's quota admission keeps the wall clock's minutes.
  const first = await sendMessage(DAVE, "What is the UK VAT on 41 GBP?");
  expect(first.result?.task.status.state).toBe("TASK_STATE_COMPLETED");
  const contextId = first.result?.task.contextId as string;
  context = { id: contextId, firstRunId: first.result?.task.id as string };
  await killedMidRun(
    apiEvent("http-api-v2", {
      method: "POST",
      path: "/v1/a2a",
      claims: DAVE,
      headers: A2A,
      body: a2aRequest("SendMessage", {
        message: {
          messageId: randomUUID(),
          role: "ROLE_USER",
          parts: [{ text: "Calculate tax on 130 GBP for a client in the UK and record it." }],
          contextId,
        },
      }),
    }),
  );
  // Alice's run last: its deadline + grace is the nearest, and the first test reads it before then.
  await killedMidRun(
    apiEvent("http-api-v2", {
      body: { prompt: "Calculate tax on 120 GBP for a client in the UK and record it." },
      claims: ALICE,
    }),
  );
  const { runs } = await stack.deps.runs.listPage(tenant, { limit: 10 });
  expect(runs).toHaveLength(1);
  runId = runs[0]?.runId as string;
  // The stack's clock at the wall clock's now: the child's run ended less than its deadline + grace ago.
  clock.advance(Date.now() - clock.now());
}, 90_000);

afterAll(async () => {
  await stack?.stop();
});

describe("a synchronous run killed mid-run", () => {
  it("is running until its deadline + grace has passed, on GET and in the running listing", async () => {
    const got = await call(ALICE, "GET", `/v1/runs/${runId}`);
    expect(got.status).toBe(200);
    expect(got.body).toMatchObject({ status: "running", finishedAt: null, reason: null });
    expect(await listed(ALICE, "?status=running")).toEqual([runId]);
    expect(await listed(ALICE, "?status=abandoned")).toEqual([]);
    // Its slot in flight and its hold still count (GET /v1/usage, the tenant's view and its user's own).
    const usage = (await call(CAROL, "GET", "/v1/usage")).body;
    expect(usage?.tenant?.inFlight.runs).toBe(1);
    expect(usage?.tenant?.day.tokens.reserved).toBeGreaterThan(0);
    expect((await call(ALICE, "GET", "/v1/usage")).body?.user?.day.tokens.reserved).toBeGreaterThan(0);
  });

  it("then reads abandoned on GET, with a fixed reason, for whoever may see it and no one else", async () => {
    clock.advance(CHILD_RUN_TIMEOUT_MS + STALE_RUN_GRACE_MS + 1_000);
    const got = await call(ALICE, "GET", `/v1/runs/${runId}`);
    expect(got.status).toBe(200);
    expect(got.body).toMatchObject({ status: "abandoned", reason: RUN_ABANDONED_REASON, answer: null });
    expect(got.body?.finishedAt).toEqual(expect.any(String));
    expect(got.body?.cycles).toBe(got.body?.cyclesRecorded);
    expect((await call(CAROL, "GET", `/v1/runs/${runId}`)).body?.status).toBe("abandoned");
    expect((await call(BOB, "GET", `/v1/runs/${runId}`)).status).toBe(404);
    expect((await call(MALLORY, "GET", `/v1/runs/${runId}`)).status).toBe(404);
  });

  it("no longer holds its slot in flight nor its reservation on GET /v1/usage once abandoned", async () => {
    const usage = (await call(CAROL, "GET", "/v1/usage")).body;
    expect(usage?.tenant?.inFlight.runs).toBe(0);
    expect(usage?.tenant?.day.tokens.reserved).toBe(0);
    expect(usage?.tenant?.day.runs).toBe(1);
    expect((await call(ALICE, "GET", "/v1/usage")).body?.user?.day.tokens.reserved).toBe(0);
    expect((await call(MALLORY, "GET", "/v1/usage")).body?.tenant?.inFlight.runs).toBe(0);
  });

  it("the status filter agrees with GET: listed as abandoned, never as running", async () => {
    expect(await listed(ALICE, "?status=running")).toEqual([]);
    expect(await listed(ALICE, "?status=abandoned")).toEqual([runId]);
    const all = await call(ALICE, "GET", "/v1/runs");
    expect((all.body?.items ?? []).map((run) => run.status)).toEqual(["abandoned"]);
    expect(await listed(CAROL, "?status=abandoned&scope=tenant")).toEqual([runId]);
    expect(await listed(BOB, "?status=abandoned")).toEqual([]);
    expect(await listed(MALLORY, "?status=abandoned&scope=tenant")).toEqual([]);
  });

  it("its events feed ends with a final run.finished made from the record, and a resume after it is 204", async () => {
    const stream = await call(ALICE, "GET", `/v1/runs/${runId}/events`, {
      headers: { accept: "text/event-stream" },
    });
    expect(stream.status).toBe(200);
    const events = runEventsOf(parseSse(stream.text));
    const final = events.at(-1);
    expect(final).toMatchObject({ type: "run.finished", status: "abandoned", reason: RUN_ABANDONED_REASON });
    expect(events.map((event) => event.seq)).toEqual(events.map((_, i) => i + 1));
    const resumed = await call(ALICE, "GET", `/v1/runs/${runId}/events`, {
      headers: { accept: "text/event-stream", "last-event-id": String(final?.seq) },
    });
    expect(resumed.status).toBe(204);
  });

  it("A2A GetTask says failed (not working), with the reason", async () => {
    const task = await getTask(ALICE, runId);
    expect(task.result?.status.state).toBe("TASK_STATE_FAILED");
    expect(JSON.stringify(task.result?.status.message)).toContain(RUN_ABANDONED_REASON);
    expect((await getTask(MALLORY, runId)).error).toBeDefined();
  });

  it("A2A ListTasks after its last write but before it was abandoned lists it: its status changed then", async () => {
    const run = await call(ALICE, "GET", `/v1/runs/${runId}`);
    const abandonedAt = Date.parse(run.body?.finishedAt as string);
    // Its record's last write came before its deadline, so at least the grace before it read abandoned:
    // a filter on the stored last write alone would leave it out of the first two listings below.
    const tasksAfter = async (instant: number) => {
      const answer = await call(ALICE, "POST", "/v1/a2a", {
        body: a2aRequest("ListTasks", { statusTimestampAfter: new Date(instant).toISOString() }),
        headers: A2A,
      });
      const result = answer.body?.result as {
        tasks: Array<{ id: string; status: { state: string; timestamp: string } }>;
      };
      return result.tasks.map((task) => ({
        id: task.id,
        state: task.status.state,
        at: task.status.timestamp,
      }));
    };
    const failed = { id: runId, state: "TASK_STATE_FAILED", at: new Date(abandonedAt).toISOString() };
    expect(await tasksAfter(abandonedAt - 1_000)).toEqual([failed]);
    expect(await tasksAfter(abandonedAt - STALE_RUN_GRACE_MS - 1)).toEqual([failed]);
    expect(await tasksAfter(abandonedAt)).toEqual([]);
    // A GET of the run says when it last changed: at its abandonment.
    expect(run.body?.updatedAt).toBe(new Date(abandonedAt).toISOString());
  });

  it("cannot be cancelled (409 RUN_NOT_RUNNING) nor continued (409 PREVIOUS_RUN_NOT_CONTINUABLE)", async () => {
    const cancel = await call(ALICE, "POST", `/v1/runs/${runId}/cancel`);
    expect(cancel.status).toBe(409);
    expect(cancel.body).toMatchObject({ code: "RUN_NOT_RUNNING", runStatus: "abandoned" });
    const next = await call(ALICE, "POST", "/v1/runs", { body: { prompt: "go on", previousRunId: runId } });
    expect(next.status).toBe(409);
    expect(next.body).toMatchObject({ code: "PREVIOUS_RUN_NOT_CONTINUABLE", previousRunStatus: "abandoned" });
  });

  it("never changes again: a late outcome write is refused and the run still reads abandoned", async () => {
    const late = await stack.deps.runs.finish(tenant, runId, {
      status: "completed",
      cycles: 1,
      answer: "late",
      reason: null,
      usage: { promptTokens: 0, completionTokens: 0, totalTokens: 0 },
      durationMs: 1,
    });
    expect(late).toBe(false);
    expect((await stack.deps.runs.getRecord(tenant, runId))?.status).toBe("abandoned");
  });
});

describe("runs the rule does not judge", () => {
  it("a record without a writer's deadline, and a handed-over run before its execution's end, stay running past the run's deadline", async () => {
    const base = {
      tenantId: tenant,
      userId: ALICE.sub,
      prompt: "p",
      limits: { maxCycles: 5, timeoutMs: 1_000 },
    };
    const durable = `run_${randomUUID()}`;
    const handedOver = `run_${randomUUID()}`;
    const startedAt = new Date(clock.now());
    await stack.deps.runs.start({ ...base, runId: durable }, startedAt);
    await stack.deps.runs.start(
      { ...base, runId: handedOver, syncDeadlineAt: new Date(startedAt.getTime() + 1_000).toISOString() },
      startedAt,
    );
    // Handed over before its deadline: the write of the durable limits replaces the synchronous deadline
    // by its execution's latest end (an hour on).
    const endsAt = new Date(startedAt.getTime() + 3_600_000).toISOString();
    expect(
      await stack.deps.runs.setLimits(tenant, handedOver, { maxCycles: 5, timeoutMs: 900_000 }, endsAt),
    ).toBe(true);
    clock.advance(10 * 60_000);
    for (const id of [durable, handedOver]) {
      expect((await call(ALICE, "GET", `/v1/runs/${id}`)).body?.status).toBe("running");
    }
    expect(await listed(ALICE, "?status=running")).toEqual(expect.arrayContaining([durable, handedOver]));
  });
});

describe("an A2A context whose latest turn was killed mid-run", () => {
  it("goes on from the turn before it once that turn is abandoned (no transcript to continue)", async () => {
    const third = await sendMessage(DAVE, "What is the UK VAT on 42 GBP?", context.id);
    expect(third.error).toBeUndefined();
    expect(third.result?.task.status.state).toBe("TASK_STATE_COMPLETED");
    const record = await stack.deps.runs.getRecord(DAVE.tenant_id, third.result?.task.id as string);
    expect(record?.previousRunId).toBe(context.firstRunId);
  });
});
