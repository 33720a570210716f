/**
 * docs/run-events.md: a streamed `POST /v1/runs` (Accept: text/event-stream) that is refused before its
 * run starts answers as the JSON request does: problem+json with its status and headers, not a 200
 * stream. Quota admission (docs/quotas.md) refuses after the Idempotency-Key is taken, so it is the case
 * that reaches the stream's start; the real streaming entry, DynamoDB Local, the local model server.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ProblemSchema } from "../functions/api/contract.js";
import { startTestStack, type TestStack } from "./support/stack.js";
import { functionUrlEvent, runEventsOf, type StreamEntry, startStreamEntry } from "./support/streaming.js";

const USER = { sub: "usr_refused", tenant_id: "tenant_stream_refusals", scope: "billing:write" };
const PROMPT = "Tax on 200 BDT for a client in Bangladesh.";

let stack: TestStack;
let entry: StreamEntry;
let token: string;
beforeAll(async () => {
  stack = await startTestStack({ USER_RUNS_PER_MINUTE: "1", POWERTOOLS_LOG_LEVEL: "SILENT" });
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
