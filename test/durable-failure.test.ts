/**
 * A durable run whose execution fails (shared/durable/runner.ts): a step still failing after its
 * retries ends the run `failed` on every surface (GET, the listing's status filter, A2A, the stored
 * events, the tenant's runs in flight), whatever the record's status was when it failed (also
 * `awaiting_approval`) and whichever step failed (also `run:finish`). The real API handler, the runner on
 * the testing SDK's local runner, DynamoDB Local and the local model server; store faults are injected
 * into the runner's own DynamoDB client by an SDK middleware, so the API's requests reach DynamoDB Local
 * unchanged.
 */
import { randomUUID } from "node:crypto";
import { ProvisionedThroughputExceededException } from "@aws-sdk/client-dynamodb";
import type { DynamoDBDocumentClient } from "@aws-sdk/lib-dynamodb";
import { describe, expect, it } from "vitest";
import { ProblemSchema, RunRecordSchema } from "../functions/api/contract.js";
import { eventForRoute } from "../local/durable-runner.js";
import { RUN_FAILED_REASON } from "../shared/runs/lifecycle.js";
import { approvalRuns, decide, GBP_RULES, json } from "./support/approvals.js";
import { type DurableStack, durableStackForFile, runPathEvent, startAsyncRun } from "./support/durable.js";
import { heldReply } from "./support/held.js";
import { runEvent } from "./support/idempotency.js";

const stack = durableStackForFile({ MAX_CYCLES: "5", APPROVAL_RULES: GBP_RULES }, { planner: true });
const { pausedRun } = approvalRuns(stack);

/** A runner store request that keeps failing: how many times it was refused, and how to stop it. */
type Fault = ReturnType<typeof throttle>;

/** Throws a throttling error before every request of `client` that `match` picks; removed by the returned function. */
function throttle(
  client: DynamoDBDocumentClient,
  match: (command: string, input: string) => boolean,
): { remove: () => void; count: () => number } {
  const name = `fault_${randomUUID()}`;
  let count = 0;
  client.middlewareStack.add(
    (next, context) => async (args) => {
      if (match(String(context.commandName), JSON.stringify(args.input))) {
        count += 1;
        throw new ProvisionedThroughputExceededException({ message: "Rate exceeded", $metadata: {} });
      }
      return next(args);
    },
    { step: "initialize", name },
  );
  return { remove: () => client.middlewareStack.remove(name), count: () => count };
}

/** What every surface of the API says of `runId` (as its user usr_idem of `tenantId`). */
async function surfaces(s: DurableStack, runId: string, tenantId: string) {
  const run = RunRecordSchema.parse(json(await s.invoke(runPathEvent(runId, tenantId))));
  const listed = async (status: string) => {
    const event = eventForRoute(runEvent({ tenantId, prompt: "x" }), "GET", "/v1/runs");
    event.rawQueryString = `status=${status}`;
    event.queryStringParameters = { status };
    const page = json(await s.invoke(event)) as { items: Array<{ runId: string }> };
    return page.items.map((item) => item.runId).includes(runId);
  };
  const getTask = eventForRoute(runEvent({ tenantId, prompt: "x" }), "POST", "/v1/a2a");
  getTask.headers = { ...getTask.headers, "content-type": "application/json", "a2a-version": "1.0" };
  getTask.body = JSON.stringify({ jsonrpc: "2.0", id: 1, method: "GetTask", params: { id: runId } });
  const task = json(await s.invoke(getTask)) as { result?: { status: { state: string } } };
  const { events } = await s.deps.runEvents.store.read(tenantId, runId, 0);
  const usage = await s.deps.quotas?.usage({ tenantId, userId: "usr_idem" }, true);
  return {
    run,
    inRunning: await listed("running"),
    inFailed: await listed("failed"),
    a2aState: task.result?.status.state,
    finished: events.filter((event) => event.type === "run.finished"),
    inFlight: usage?.tenant?.inFlight.runs,
  };
}

/** What {@link surfaces} says, in one object (a failing test shows every surface at once). */
const summary = (seen: Awaited<ReturnType<typeof surfaces>>) => ({
  status: seen.run.status,
  reason: seen.run.reason,
  cyclesRecorded: seen.run.cyclesRecorded,
  steps: seen.run.steps.length,
  listedAsRunning: seen.inRunning,
  listedAsFailed: seen.inFailed,
  a2aState: seen.a2aState,
  finishedEvents: seen.finished.map((event) => ("status" in event ? event.status : undefined)),
  inFlight: seen.inFlight,
});

/** Every surface of a run that failed after its first cycle was recorded. */
const FAILED_EVERYWHERE = {
  status: "failed",
  reason: RUN_FAILED_REASON,
  cyclesRecorded: 1,
  steps: 1,
  listedAsRunning: false,
  listedAsFailed: true,
  a2aState: "TASK_STATE_FAILED",
  finishedEvents: ["failed"],
  inFlight: 0,
};

/**
 * Runs `start` (it starts or resumes a run and gives its id) while `fault` refuses the runner's requests,
 * and waits until the execution ended FAILED after the failing step's retries; the fault is then removed.
 */
async function failedUnder(fault: Fault, start: () => Promise<string>): Promise<string> {
  try {
    const runId = await start();
    const execution = stack.executions.get(runId);
    await execution?.done;
    expect(execution?.status).toBe("FAILED");
    expect(fault.count()).toBeGreaterThanOrEqual(3);
    return runId;
  } finally {
    fault.remove();
  }
}

/** A runner update request (UpdateItem) whose input holds every one of `parts`. */
const update = (...parts: string[]) =>
  throttle(
    stack.runnerDeps.ddb,
    (command, input) => command === "UpdateItemCommand" && parts.every((part) => input.includes(part)),
  );

describe("a durable run whose execution fails", () => {
  it("run:finish still failing after its retries: the run ends failed, its steps kept, its slot freed, one run.finished", async () => {
    const tenantId = "tenant_fail_finish";
    stack.model.script([{ content: "Nothing to calculate." }]);
    // The outcome write (the only run update carrying durationMs) is throttled on every attempt.
    const runId = await failedUnder(update("durationMs"), async () => {
      return (await startAsyncRun(stack, tenantId, "hello")).runId;
    });
    const seen = await surfaces(stack, runId, tenantId);
    expect(summary(seen)).toEqual(FAILED_EVERYWHERE);
    // Ended for good: a late outcome write is refused, a cancel is 409 with the final status.
    const late = await stack.runnerDeps.runs.finish(tenantId, runId, {
      status: "completed",
      cycles: 1,
      answer: "late",
      reason: null,
      usage: seen.run.usage,
      durationMs: 1,
      grounding: null,
    });
    expect(late).toBe(false);
    const cancel = await stack.invoke(runPathEvent(runId, tenantId, "cancel"));
    expect(cancel.statusCode).toBe(409);
    expect(ProblemSchema.parse(json(cancel))).toMatchObject({ code: "RUN_NOT_RUNNING", runStatus: "failed" });
  });

  it("run:finish failing after it wrote the outcome: the run keeps it, with one run.finished", async () => {
    const tenantId = "tenant_fail_settle";
    // The reply waits until this test listens to the run's live events (the runner's own hub).
    const { heldUntil, release } = heldReply();
    stack.model.script([{ heldUntil, content: "Nothing to calculate." }]);
    const live: string[] = [];
    let stopListening = () => {};
    // The quota settle (the write removing the run's marker) keeps failing; the outcome write does not.
    const runId = await failedUnder(update("COUNTER#quota", "REMOVE"), async () => {
      const started = await startAsyncRun(stack, tenantId, "hello");
      stopListening = stack.runnerDeps.runEvents.hub.subscribe(started.runId, (event) => {
        if (event?.type === "run.finished") live.push(event.status);
      });
      release();
      return started.runId;
    }).finally(() => {
      release();
      stopListening();
    });
    // Told once, live and stored: the failure after the outcome was written changes nothing.
    expect(live).toEqual(["completed"]);
    const seen = await surfaces(stack, runId, tenantId);
    expect(seen.run).toMatchObject({ status: "completed", answer: "Nothing to calculate.", cycles: 1 });
    expect(seen.finished.map((event) => ("status" in event ? event.status : undefined))).toEqual([
      "completed",
    ]);
  });

  it("a step failing after an approval, while the record is awaiting_approval: the run ends failed, not awaiting", async () => {
    const tenantId = "tenant_fail_waiting";
    const { target } = await pausedRun(tenantId);
    // The move back to `running` after the decision (setWaiting, from awaiting_approval) keeps failing.
    const runId = await failedUnder(update('":from0":"awaiting_approval"'), async () => {
      expect((await decide(stack, target, "approve")).statusCode).toBe(200);
      return target.runId;
    });
    const seen = await surfaces(stack, runId, tenantId);
    // Its record counts cycle 2's model call, the one that asked for the approval (written as it paused).
    expect(summary(seen)).toEqual({ ...FAILED_EVERYWHERE, cyclesRecorded: 2 });
    expect(seen.run.pendingApprovals ?? []).toEqual([]);
  });
});
