/**
 * docs/run-events.md, a streamed `POST /v1/runs` (Accept: text/event-stream), where it begins and ends:
 * - refused before its run starts, it answers as the JSON request does: problem+json with its status and
 *   headers, not a 200 stream (quota admission, docs/quotas.md, refuses after the Idempotency-Key is
 *   taken, so it is the case that reaches the stream's start);
 * - it carries every event of its run however long the run takes: STREAM_MAX_SECONDS bounds a GET's
 *   stream (resumable), not this one (the HTTP API's function is deployed with 2 s).
 * The real streaming entry and buffered handler, DynamoDB Local, the local model server.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ProblemSchema } from "../functions/api/contract.js";
import type { ScriptedReply } from "../local/model-server.js";
import { seedEvent, startTestStack, type TestStack } from "./support/stack.js";
import {
  functionUrlEvent,
  ManualClock,
  parseSse,
  runEventsOf,
  type StreamEntry,
  startStreamEntry,
} from "./support/streaming.js";

const USER = { sub: "usr_refused", tenant_id: "tenant_stream_refusals", scope: "billing:write" };
const PROMPT = "Tax on 200 BDT for a client in Bangladesh.";

let stack: TestStack;
let entry: StreamEntry;
let token: string;
beforeAll(async () => {
  stack = await startTestStack({
    USER_RUNS_PER_MINUTE: "1",
    STREAM_MAX_SECONDS: "1",
    POWERTOOLS_LOG_LEVEL: "SILENT",
  });
  stack.model.usePlanner();
  entry = await startStreamEntry(stack.deps);
  token = await entry.token(USER);
});
afterAll(async () => {
  await stack?.stop();
});

/** A streamed POST /v1/runs of {@link PROMPT}, read to its end. */
async function streamRun(headers: Record<string, string> = {}) {
  const response = await entry.request(
    functionUrlEvent("POST", "/v1/runs", {
      token,
      headers: { accept: "text/event-stream", ...headers },
      body: { prompt: PROMPT },
    }),
  );
  await response.done;
  return { ...response, text: await response.body };
}

describe("a streamed run that the quotas do not admit", () => {
  it("is 429 RATE_LIMITED as problem+json with Retry-After and the RateLimit fields, not a 200 stream; nothing ran", async () => {
    const admitted = await streamRun();
    expect(admitted.metadata.statusCode).toBe(200);
    expect(runEventsOf(admitted.read).at(-1)?.type).toBe("run.finished");
    const modelCalls = stack.model.requests.length;

    const refused = await streamRun({ "idempotency-key": `"refused-${crypto.randomUUID()}"` });
    expect(refused.metadata.statusCode).toBe(429);
    const headers = refused.metadata.headers ?? {};
    expect(headers["content-type"]).toMatch(/^application\/problem\+json/);
    expect(Number(headers["retry-after"])).toBeGreaterThan(0);
    expect(headers.ratelimit).toMatch(/^"user-minute";r=0;t=\d+/);
    expect(ProblemSchema.parse(JSON.parse(refused.text))).toMatchObject({
      status: 429,
      code: "RATE_LIMITED",
      policy: "user-minute",
    });
    expect(refused.read.messages).toEqual([]);
    expect(stack.model.requests.length).toBe(modelCalls);
  });
});

describe("a streamed run longer than STREAM_MAX_SECONDS", () => {
  it("streams every event of its run, then run.outcome, with no retry: hint (a POST is not resumed)", async () => {
    const clock = new ManualClock();
    const original = stack.deps.clock;
    stack.deps.clock = clock;
    let answer: () => void = () => {};
    const held = new Promise<void>((resolve) => {
      answer = resolve;
    });
    const reply: ScriptedReply = { content: "No tool was needed.", heldUntil: held };
    stack.model.script([reply]);
    try {
      const event = seedEvent({
        prompt: "Say hello.",
        claims: { sub: "usr_long", tenant_id: "tenant_stream_refusals", scope: "billing:write" },
      });
      event.headers = { ...event.headers, accept: "text/event-stream" };
      const calls = stack.model.requests.length;
      // The buffered HTTP API entry, as deployed behind API Gateway.
      const invoked = stack.invoke(event);
      // The model call is in flight, and the stream waits on the clock (the run's deadline sleeps too).
      while (stack.model.requests.length === calls || clock.sleepers < 2)
        await new Promise((resolve) => setImmediate(resolve));
      const { maxMs, pollMs } = stack.config.stream;
      for (let waited = 0; waited <= maxMs; waited += pollMs) {
        clock.advance(pollMs);
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
      answer();
      const result = await invoked;
      expect(result.statusCode).toBe(200);
      const body = result.isBase64Encoded
        ? Buffer.from(result.body ?? "", "base64").toString("utf8")
        : (result.body ?? "");
      const read = parseSse(body);
      expect(runEventsOf(read).map((e) => e.type)).toEqual([
        "run.started",
        "model.call.finished",
        "run.finished",
      ]);
      expect(read.retries).toEqual([]);
      const outcome = read.messages.at(-1);
      expect(outcome?.event).toBe("run.outcome");
      expect(JSON.parse(outcome?.data ?? "{}")).toMatchObject({ status: "completed" });
    } finally {
      stack.deps.clock = original;
      stack.model.usePlanner();
    }
  });
});
