import type { APIGatewayProxyStructuredResultV2 } from "aws-lambda";
import { beforeAll, describe, expect, it } from "vitest";
import { ProblemSchema } from "../functions/api/contract.js";
import { OPEN_COMMENT } from "../functions/api/routes/events.js";
import { createLambdaContext } from "../local/lambda-context.js";
import { installLambdaStreaming, invokeStreaming, NO_PRELUDE_STATUS } from "../local/lambda-streaming.js";
import type { RunEvent } from "../shared/runs/events.js";
import { apiEvent } from "./fixtures/events.js";
import { SEED_PROMPT } from "./support/approvals.js";
import {
  functionUrlEvent,
  parseSse,
  runEventsOf,
  SEED_RUN_EVENT_TYPES,
  streamingStack,
} from "./support/streaming.js";

// A resume after a run's final event (Last-Event-ID = the last id: what every EventSource sends when a
// stream closes) is answered 204 No Content on every entry. On the function URL a stream that writes
// nothing is a 502: Lambda sends the response's status and headers only with the function's first write.

const USER = { sub: "usr_resume_01", tenant_id: "tenant_resume_01", scope: "billing:write" };

const env = streamingStack(USER);

/** GET /v1/runs/{runId}/events on the streaming function URL with `Last-Event-ID`, read to its end. */
async function resumeOnFunctionUrl(runId: string, lastEventId: number) {
  const response = await env.entry.request(
    functionUrlEvent("GET", `/v1/runs/${runId}/events`, {
      token: env.token,
      headers: { "last-event-id": String(lastEventId) },
    }),
  );
  await response.done;
  return { status: response.metadata.statusCode, body: await response.body, read: response.read };
}

/** The same request through the HTTP API (the buffered hono/aws-lambda entry). */
async function resumeOnHttpApi(runId: string, lastEventId: number) {
  const result = (await env.stack.invoke(
    apiEvent("http-api-v2", {
      method: "GET",
      path: `/v1/runs/${runId}/events`,
      claims: USER,
      body: null,
      headers: { "last-event-id": String(lastEventId), accept: "text/event-stream" },
    }) as never,
  )) as APIGatewayProxyStructuredResultV2;
  const body = result.isBase64Encoded
    ? Buffer.from(result.body ?? "", "base64").toString("utf8")
    : (result.body ?? "");
  return { status: result.statusCode, body };
}

/** Writes the record of a run of USER that is still going (no event yet), as a run's start does. */
function startRunRecord(runId: string) {
  return env.stack.deps.runs.start({
    tenantId: USER.tenant_id,
    runId,
    userId: USER.sub,
    prompt: "x",
    limits: { maxCycles: 5, timeoutMs: 25_000 },
  });
}

describe("a resume after the final event", () => {
  let events: RunEvent[];
  beforeAll(async () => {
    const streamed = await env.entry.request(
      functionUrlEvent("POST", "/v1/runs", {
        token: env.token,
        headers: { accept: "text/event-stream" },
        body: { prompt: SEED_PROMPT },
      }),
    );
    await streamed.done;
    events = runEventsOf(streamed.read);
    expect(events.map((event) => event.type)).toEqual(SEED_RUN_EVENT_TYPES);
  });

  it("is 204 No Content with no body on the streaming function URL (not a 502 without a status line)", async () => {
    const last = events.length;
    const resumed = await resumeOnFunctionUrl(events[0]?.runId as string, last);
    expect(resumed.status).toBe(204);
    expect(resumed.body).toBe("");
    // One event before the end still streams the final one, then closes.
    const before = await resumeOnFunctionUrl(events[0]?.runId as string, last - 1);
    expect(before.status).toBe(200);
    expect(runEventsOf(before.read).map((event) => event.seq)).toEqual([last]);
  });

  it("is 204 through the HTTP API too", async () => {
    const runId = events[0]?.runId as string;
    const resumed = await resumeOnHttpApi(runId, events.length);
    expect(resumed).toEqual({ status: 204, body: "" });
    const before = await resumeOnHttpApi(runId, events.length - 1);
    expect(before.status).toBe(200);
    expect(runEventsOf(parseSse(before.body)).map((event) => event.type)).toEqual(["run.finished"]);
  });

  it("a cancelled run, closed by the reader with a final event made from its record: 204 after that one", async () => {
    const runId = `run_${crypto.randomUUID()}`;
    await startRunRecord(runId);
    expect(await env.stack.deps.runs.cancel(USER.tenant_id, runId, "cancelled by usr_resume_01")).toBe(true);
    const whole = await resumeOnFunctionUrl(runId, 0);
    expect(whole.status).toBe(200);
    const [final] = runEventsOf(whole.read);
    expect(final).toMatchObject({ type: "run.finished", status: "cancelled", seq: 1 });
    expect((await resumeOnFunctionUrl(runId, 1)).status).toBe(204);
    expect((await resumeOnHttpApi(runId, 1)).status).toBe(204);
  });

  it("a run still going is streamed as before, whatever its resume point", async () => {
    const runId = `run_${crypto.randomUUID()}`;
    await startRunRecord(runId);
    // Its stream waits for events until its time is up (cut short here), then ends with a retry hint.
    const original = env.stack.config.stream.maxMs;
    env.stack.config.stream.maxMs = 50;
    try {
      const resumed = await resumeOnHttpApi(runId, 3);
      expect(resumed.status).toBe(200);
      expect(parseSse(resumed.body).retries).toEqual([env.stack.config.stream.retryMs]);
    } finally {
      env.stack.config.stream.maxMs = original;
    }
  });
});

describe("a table that fails once a stream has begun", () => {
  it("ends the stream with event: error, the STORE_UNAVAILABLE problem and nothing of the error's text; a resume streams the log", async () => {
    const runId = `run_${crypto.randomUUID()}`;
    await startRunRecord(runId);
    const store = env.stack.deps.runEvents.store;
    const read = store.read.bind(store);
    // The record is read before the stream begins; the log's first read fails as an unreachable store.
    store.read = async () => {
      throw Object.assign(new Error("socket hang up at 10.0.0.7:8000"), {
        name: "TimeoutError",
        $metadata: {},
      });
    };
    let failed: Awaited<ReturnType<typeof resumeOnFunctionUrl>>;
    try {
      failed = await resumeOnFunctionUrl(runId, 0);
    } finally {
      store.read = read;
    }
    expect(failed.status).toBe(200);
    expect(failed.read.comments).toEqual([OPEN_COMMENT]);
    expect(failed.read.messages.map((m) => m.event)).toEqual(["error"]);
    expect(ProblemSchema.parse(JSON.parse(failed.read.messages[0]?.data ?? "{}"))).toMatchObject({
      status: 503,
      code: "STORE_UNAVAILABLE",
    });
    expect(failed.body).not.toMatch(/socket|10\.0\.0\.7/);
    // The store is back: the same resume streams the log (a cancel closes it with its final event).
    expect(await env.stack.deps.runs.cancel(USER.tenant_id, runId, "cancelled by usr_resume_01")).toBe(true);
    const resumed = await resumeOnFunctionUrl(runId, 0);
    expect(runEventsOf(resumed.read).map((e) => e.type)).toEqual(["run.finished"]);
  });
});

describe("the local function URL stand-in (local/lambda-streaming.ts)", () => {
  it("answers 502 for a streaming function that wrote nothing, and sends the metadata with the first write, even an empty one", async () => {
    installLambdaStreaming();
    const context = createLambdaContext(10_000, "boundloop-stream");
    const from = (stream: unknown, statusCode: number) =>
      awslambda.HttpResponseStream.from(stream as never, { statusCode, headers: {} });
    const silent = invokeStreaming(
      async (_event, stream) => {
        from(stream, 200).end();
      },
      {},
      context,
    );
    await silent.done;
    expect((await silent.stream.metadata).statusCode).toBe(NO_PRELUDE_STATUS);
    const empty = invokeStreaming(
      async (_event, stream) => {
        const body = from(stream, 204);
        body.write("");
        body.end();
      },
      {},
      context,
    );
    await empty.done;
    expect((await empty.stream.metadata).statusCode).toBe(204);
  });
});
