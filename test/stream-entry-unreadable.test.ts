import { describe, expect, it } from "vitest";
import { ProblemSchema } from "../functions/api/contract.js";
import { functionUrlEvent, streamingStack } from "./support/streaming.js";

// Events the streaming entry (functions/stream/entry.ts) cannot turn into a Request as they are: a GET
// with a body, a header value the WHATWG Headers class refuses, a body flagged isBase64Encoded that is
// not base64. Each must be the API function's answer (functions/api/lambda-adapter.ts): 400
// INVALID_REQUEST problem+json after the token check, not the adapter's "Internal Server Error" text
// (a 502 behind the dev server, a 200 of text on a function URL).

const USER = { sub: "usr_unreadable_1", tenant_id: "tenant_unreadable", scope: "billing:read billing:write" };
const started = streamingStack(USER);

/** Sends `event` to the streaming entry; its status, content type and body parsed as JSON (or the text). */
async function send(event: ReturnType<typeof functionUrlEvent>) {
  const response = await started.entry.request(event);
  const text = await response.body;
  await response.done;
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {}
  return { status: response.metadata.statusCode, type: response.metadata.headers?.["content-type"], body };
}

describe("the streaming entry refuses an event it cannot read as the API function does", () => {
  it("a GET with a body is 400 INVALID_REQUEST problem+json", async () => {
    const event = functionUrlEvent("GET", "/v1/runs/run_unreadable1/events", {
      token: started.token,
      body: { a: 1 },
    });
    const answer = await send(event);
    expect(answer).toMatchObject({ status: 400, type: "application/problem+json" });
    expect(ProblemSchema.parse(answer.body)).toMatchObject({
      code: "INVALID_REQUEST",
      detail: "The request could not be read (a body on GET or HEAD, or a malformed header).",
    });
  });

  it("a header with a NUL is 400 naming the header, after the token check", async () => {
    const headers = { "x-note": "a\u0000b" };
    const answer = await send(
      functionUrlEvent("GET", "/v1/runs/run_unreadable1/events", { token: started.token, headers }),
    );
    expect(answer).toMatchObject({ status: 400, type: "application/problem+json" });
    expect(answer.body).toMatchObject({
      code: "INVALID_REQUEST",
      errors: [{ in: "header", path: "x-note" }],
    });
    const anonymous = await send(functionUrlEvent("GET", "/v1/runs/run_unreadable1/events", { headers }));
    expect(anonymous).toMatchObject({ status: 401, body: { code: "UNAUTHENTICATED" } });
  });

  it("a body flagged isBase64Encoded that is not base64 is 400, as before", async () => {
    const event = {
      ...functionUrlEvent("POST", "/v1/runs", { token: started.token, body: { prompt: "hi" } }),
      body: "eyJwcm9tcHQiOiJoaSJ9_-",
      isBase64Encoded: true,
    };
    const answer = await send(event);
    expect(answer).toMatchObject({ status: 400, body: { code: "INVALID_REQUEST" } });
  });
});
