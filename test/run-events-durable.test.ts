import { QueryCommand } from "@aws-sdk/lib-dynamodb";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { RunRecordSchema } from "../functions/api/contract.js";
import { eventForRoute } from "../local/durable-runner.js";
import { followRunEvents } from "../shared/runs/event-feed.js";
import { type RunEvent, RunEventHub } from "../shared/runs/events.js";
import { decide, GBP_RULES, json, pollUntil } from "./support/approvals.js";
import { type DurableStack, startDurableStack } from "./support/durable.js";
import { runEvent } from "./support/idempotency.js";
import { ManualClock, parseSse, runEventsOf, SEED_RUN_EVENT_TYPES } from "./support/streaming.js";

// docs/run-events.md: the same events for a durable run and for a run handed over for approval.
let stack: DurableStack;
beforeAll(async () => {
  stack = await startDurableStack({ MAX_CYCLES: "5", APPROVAL_RULES: GBP_RULES, EVENTS_POLL_MS: "50" });
});
afterAll(async () => {
  await stack?.stop();
});
beforeEach(() => {
  stack.model.usePlanner();
  stack.faults.beforeStep = undefined;
  stack.faults.afterStep = undefined;
});

const SEED_PROMPT =
  "Calculate tax for two invoices: 1500 GBP for a client in the UK, and 500 EUR for a client in Germany (DE). If tax calculation succeeds, record the invoice for the UK client.";

/** GET /v1/runs/{runId}/events on the buffered API entry (it answers once the stream ends). */
async function events(tenantId: string, runId: string): Promise<RunEvent[]> {
  const result = await stack.invoke(
    eventForRoute(runEvent({ tenantId, prompt: "x" }), "GET", `/v1/runs/${runId}/events`),
  );
  expect(result.statusCode, result.body).toBe(200);
  const body = result.isBase64Encoded
    ? Buffer.from(result.body ?? "", "base64").toString("utf8")
    : result.body;
  return runEventsOf(parseSse(body ?? ""));
}

/** The sequences of each stored batch of a run's log, in key order. */
async function storedBatches(tenantId: string, runId: string): Promise<number[][]> {
  const stored = await stack.deps.ddb.send(
    new QueryCommand({
      TableName: stack.config.table.name,
      KeyConditionExpression: "pk = :pk AND begins_with(sk, :sk)",
      ExpressionAttributeValues: { ":pk": `TENANT#${tenantId}`, ":sk": `EVENTS#${runId}#` },
    }),
  );
  return (stored.Items ?? []).map((item) => (item.events as RunEvent[]).map((e) => e.seq));
}

const expectConsecutive = (list: RunEvent[]) =>
  expect(list.map((e) => e.seq)).toEqual(list.map((_, i) => i + 1));

describe("run events of durable runs", () => {
  it("an async seed run (Prefer: respond-async) has the synchronous run's events, in order", async () => {
    const tenantId = "tenant_ev_async";
    // A small invoice needs no approval: 150 GBP is under the 1000.00 threshold.
    const prompt = SEED_PROMPT.replace("1500 GBP", "150 GBP");
    const post = runEvent({ tenantId, prompt });
    post.headers = { ...post.headers, prefer: "respond-async" };
    const started = await stack.invoke(post);
    expect(started.statusCode, started.body).toBe(202);
    const { runId } = RunRecordSchema.parse(json(started));
    const list = await events(tenantId, runId);
    expectConsecutive(list);
    expect(list.map((e) => e.type)).toEqual(SEED_RUN_EVENT_TYPES);
    expect(list.at(-1)).toMatchObject({ status: "completed", cycles: 3 });
  });

  it("a synchronous run handed over for approval: one log, the request, the decision, the rest, no event twice", async () => {
    const tenantId = "tenant_ev_handover";
    const paused = await stack.invoke(runEvent({ tenantId, prompt: SEED_PROMPT }));
    expect(paused.statusCode, paused.body).toBe(202);
    const run = RunRecordSchema.parse(json(paused));
    // While it waits, the log already says so.
    const waiting = await stack.deps.runEvents.store.read(tenantId, run.runId, 0);
    expect(waiting.events.map((e) => e.type).at(-1)).toBe("approval.requested");
    const approvalId = run.pendingApprovals?.[0]?.approvalId ?? "";
    expect(waiting.events.at(-1)).toMatchObject({ approvalId, toolName: "recordInvoice" });
    expect((await decide(stack, { runId: run.runId, approvalId, tenantId }, "approve")).statusCode).toBe(200);
    await pollUntil(stack, run.runId, tenantId);
    const list = await events(tenantId, run.runId);
    expectConsecutive(list);
    expect(list.map((e) => e.type)).toEqual([
      "run.started",
      "model.call.finished",
      "tool.call.started",
      "tool.call.started",
      "tool.call.finished",
      "tool.call.finished",
      "model.call.finished",
      "tool.call.started",
      "approval.requested",
      "approval.decided",
      "tool.call.finished",
      "model.call.finished",
      "run.finished",
    ]);
    expect(list.find((e) => e.type === "approval.decided")).toMatchObject({
      approvalId,
      decision: "approved",
      decidedBy: "usr_approver",
    });
    expect(list.at(-1)).toMatchObject({ status: "completed" });
    expect(await stack.deps.ledger.list(tenantId)).toHaveLength(1);
    // The synchronous path wrote cycle 1 and the pause; the execution, replaying those, only the rest.
    expect(await storedBatches(tenantId, run.runId)).toEqual([
      [1, 2, 3, 4, 5, 6],
      [7, 8, 9],
      [10, 11],
      [12, 13],
    ]);
  });

  it("a run replayed after a crash: a reader following it from the table gets every event once, and no batch is written twice", async () => {
    const tenantId = "tenant_ev_replay";
    const prompt = SEED_PROMPT.replace("1500 GBP", "150 GBP");
    const clock = new ManualClock();
    const seen: RunEvent[] = [];
    let runId = "";
    let reader: Promise<void> | undefined;
    const readerHasCycleTwo = new Promise<void>((resolve) => {
      stack.faults.beforeStep = async (name) => {
        if (name !== "cycle-3:model" || reader) return;
        // A reader elsewhere (its own hub: only the table reaches it) follows the run from its start.
        const feed = followRunEvents({
          deps: {
            runEvents: { store: stack.deps.runEvents.store, hub: new RunEventHub() },
            runs: stack.deps.runs,
          },
          tenantId,
          runId,
          after: 0,
          pollMs: 50,
          clock,
          signal: new AbortController().signal,
        });
        reader = (async () => {
          for await (const item of feed) {
            if (item.kind === "event") seen.push(item.event);
            if (seen.length === 9) resolve();
          }
        })();
      };
    });
    let cut = 0;
    stack.faults.afterStep = async (name) => {
      // The invocation dies after the last model call, before its checkpoint: a new one replays the run
      // and writes the last cycle's batch once the reader has read the first two cycles' batches.
      if (name === "cycle-3:model" && cut++ === 0) {
        await readerHasCycleTwo;
        throw new Error("invocation lost after the model call");
      }
    };
    const post = runEvent({ tenantId, prompt });
    post.headers = { ...post.headers, prefer: "respond-async" };
    const started = await stack.invoke(post);
    expect(started.statusCode, started.body).toBe(202);
    runId = RunRecordSchema.parse(json(started)).runId;
    await pollUntil(stack, runId, tenantId);
    expect(cut).toBe(2);
    // The reader polls on the test's clock until it has read the final event.
    let read = false;
    const done = reader?.then(() => {
      read = true;
    });
    while (!read) {
      await Promise.race([clock.untilSleeping(), done]);
      clock.advance(50);
    }
    expectConsecutive(seen);
    expect(seen.map((e) => e.type)).toEqual(await events(tenantId, runId).then((l) => l.map((e) => e.type)));
    expect(seen).toHaveLength(11);
    expect(seen[9]).toMatchObject({ type: "model.call.finished", cycle: 3 });
    expect(seen[10]).toMatchObject({ type: "run.finished", status: "completed", cycles: 3 });
    // The stored batches partition the log: the replay wrote only what was not there yet.
    expect(await storedBatches(tenantId, runId)).toEqual([
      [1, 2, 3, 4, 5, 6],
      [7, 8, 9],
      [10, 11],
    ]);
  });
});
