import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { type LocalModelServer, startModelServer } from "../local/model-server.js";
import { runScript } from "./support/scripts.js";

// `npm run invoke` with two events in one process is one execution environment invoked twice: the
// handler's log lines say `cold_start: true` on the first invocation only, as on Lambda.

let model: LocalModelServer;
beforeAll(async () => {
  model = await startModelServer();
});
afterAll(async () => {
  await model?.stop();
});

/** The handler's structured log lines on stderr. */
function jsonLines(stderr: string): Array<Record<string, unknown>> {
  return stderr
    .split("\n")
    .filter((line) => line.startsWith("{"))
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

describe("npm run invoke's log lines", () => {
  it("say cold_start true on the process's first invocation and false on the next, with the request id", {
    timeout: 120_000,
  }, async () => {
    const { code, stderr } = await runScript(
      "tsx",
      ["local/invoke.ts", "events/malformed-body.json", "events/malformed-body.json"],
      {
        DYNAMODB_ENDPOINT: inject("dynamoEndpoint"),
        OPENAI_BASE_URL: model.baseURL,
        TABLE_NAME: `test-cold-start-${randomUUID()}`,
      },
    );
    expect(code, stderr).toBe(1);
    const requestIds = [...stderr.matchAll(/^START RequestId: (\S+)/gm)].map((match) => match[1]);
    const requests = jsonLines(stderr).filter((line) => line.message === "request");
    expect(requests.map((line) => [line.cold_start, line.function_request_id, line.httpStatus])).toEqual([
      [true, requestIds[0], 400],
      [false, requestIds[1], 400],
    ]);
  });
});
