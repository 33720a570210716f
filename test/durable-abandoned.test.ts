/**
 * A durable run whose execution ended where the runner could not record it (here: stopped outside the
 * API, as a StopDurableExecution from the console or the CLI would; also what Lambda's execution timeout
 * or a runner killed for good leaves): the record stays as the execution left it until its execution's
 * latest end (shared/runs/run-bounds.ts `durableEndOf`) plus STALE_RUN_GRACE_MS, then every surface reads
 * it `abandoned` (shared/runs/abandoned.ts). The real API handler, the runner on the testing SDK's local
 * runner, DynamoDB Local and the local model server; time is the stack's injected clock.
 */
import type { APIGatewayProxyStructuredResultV2 } from "aws-lambda";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ProblemSchema, RunRecordSchema } from "../functions/api/contract.js";
import { eventForRoute } from "../local/durable-runner.js";
import { RUN_ABANDONED_REASON, STALE_RUN_GRACE_MS } from "../shared/runs/abandoned.js";
import { durableEndOf } from "../shared/runs/run-bounds.js";
import { type DurableStack, runPathEvent, startAsyncRun, startDurableStack } from "./support/durable.js";
import { heldReply } from "./support/held.js";
import { runEvent } from "./support/idempotency.js";
import { ManualClock, parseSse, runEventsOf } from "./support/streaming.js";

const clock = new ManualClock();
let stack: DurableStack;
beforeAll(async () => {
  stack = await startDurableStack(
    {
      ASYNC_RUN_TIMEOUT_MS: "600000",
      DURABLE_EXECUTION_TIMEOUT_SECONDS: "3600",
      APPROVAL_TIMEOUT_SECONDS: "600",
      QUOTA_WAIT_SECONDS: "60",
    },
    { clock, quotas: { now: () => clock.now() } },
  );
});
afterAll(async () => {
  await stack?.stop();
});

const json = (response: APIGatewayProxyStructuredResultV2) =>
  JSON.parse(response.body ?? "") as Record<string, unknown>;

/** `GET /v1/runs?status=<status>` as usr_idem of `tenantId`: the run ids listed. */
async function listed(tenantId: string, status: string): Promise<string[]> {
  const event = eventForRoute(runEvent({ tenantId, prompt: "x" }), "GET", "/v1/runs");
  event.rawQueryString = `status=${status}`;
  event.queryStringParameters = { status };
  const page = json(await stack.invoke(event)) as { items: Array<{ runId: string }> };
  return page.items.map((item) => item.runId);
}

describe("a durable run whose execution ended without its outcome", () => {
  it("reads running until its execution's latest end plus the grace, then abandoned on every surface", async () => {
    const tenantId = "tenant_durable_lost";
    const { heldUntil, release } = heldReply();
    stack.model.script([{ heldUntil, content: "Nothing to calculate." }]);
    const started = await startAsyncRun(stack, tenantId, "hello");
    const startedAt = Date.parse(started.startedAt);
    expect(startedAt).toBe(clock.now());
    // Stopped behind the API's back: the runner ends without writing anything, the record stays running.
    expect(await stack.executions.stop(started.runId)).toBe("stopped");
    release();
    const execution = stack.executions.get(started.runId);
    await execution?.done;
    expect(execution?.status).toBe("STOPPED");

    // The execution's latest end: the larger of its timeout (3600 s) and the run's deadline (600 s) plus
    // one approval wait (600 s) and one budget wait (60 s).
    const endsAt = durableEndOf(stack.config, startedAt, started.limits.timeoutMs);
    expect(endsAt - startedAt).toBe(3_600_000);
    const read = async () =>
      RunRecordSchema.parse(json(await stack.invoke(runPathEvent(started.runId, tenantId))));
    clock.advance(endsAt + STALE_RUN_GRACE_MS - clock.now());
    expect((await read()).status).toBe("running");
    expect(await listed(tenantId, "running")).toEqual([started.runId]);

    clock.advance(1);
    const run = await read();
    expect(run).toMatchObject({
      status: "abandoned",
      reason: RUN_ABANDONED_REASON,
      finishedAt: new Date(endsAt + STALE_RUN_GRACE_MS).toISOString(),
      cyclesRecorded: 0,
    });
    expect(await listed(tenantId, "running")).toEqual([]);
    expect(await listed(tenantId, "abandoned")).toEqual([started.runId]);
    // A listing of the runs changed since just before it was abandoned (A2A ListTasks'
    // statusTimestampAfter) keeps it, though nothing wrote its record since its start; one from its
    // abandonment on does not.
    const changedAfter = async (instant: number) =>
      (
        await stack.deps.runs.listPage(tenantId, {
          limit: 10,
          filter: { updatedAfter: new Date(instant).toISOString() },
        })
      ).runs.map((listedRun) => [listedRun.runId, listedRun.status, listedRun.updatedAt]);
    const abandonedAt = new Date(endsAt + STALE_RUN_GRACE_MS).toISOString();
    expect(await changedAfter(endsAt + STALE_RUN_GRACE_MS - 1)).toEqual([
      [started.runId, "abandoned", abandonedAt],
    ]);
    expect(await changedAfter(endsAt + STALE_RUN_GRACE_MS)).toEqual([]);
    // The events feed ends with a final event made from the record instead of waiting for ever.
    const feed = eventForRoute(
      runEvent({ tenantId, prompt: "x" }),
      "GET",
      `/v1/runs/${started.runId}/events`,
    );
    feed.headers = { ...feed.headers, accept: "text/event-stream" };
    const stream = await stack.invoke(feed);
    expect(stream.statusCode).toBe(200);
    const text = stream.isBase64Encoded
      ? Buffer.from(stream.body ?? "", "base64").toString("utf8")
      : (stream.body ?? "");
    const events = runEventsOf(parseSse(text));
    expect(events.at(-1)).toMatchObject({ type: "run.finished", status: "abandoned" });
    // Nothing in flight for the tenant, and the run never changes again.
    const usage = await stack.deps.quotas?.usage({ tenantId, userId: "usr_idem" }, true);
    expect(usage?.tenant?.inFlight.runs).toBe(0);
    const cancel = await stack.invoke(runPathEvent(started.runId, tenantId, "cancel"));
    expect(cancel.statusCode).toBe(409);
    expect(ProblemSchema.parse(json(cancel))).toMatchObject({
      code: "RUN_NOT_RUNNING",
      runStatus: "abandoned",
    });
    expect(await stack.runnerDeps.runs.fail(tenantId, started.runId, "late")).toBe(false);
  });
});
