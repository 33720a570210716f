import * as eventBridgeModule from "@aws-sdk/client-eventbridge";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import {
  APPROVAL_REQUESTED,
  type ApprovalRequestedEvent,
  EVENT_SOURCE,
  eventBridgeApprovalEvents,
} from "../shared/approval-events.js";
import { loadConfig } from "../shared/config.js";
import { lambdaExecutions } from "../shared/deps.js";
import * as lambdaPortModule from "../shared/durable/lambda-executions.js";
import { type AwsStandIn, STAND_IN_CREDENTIALS, startAwsStandIn } from "./support/aws-stand-in.js";

// The EventBridge port through the real @aws-sdk/client-eventbridge (AWS JSON 1.1 serializer, SigV4)
// against a local stand-in of the EventBridge endpoint, and the lazy loaders of the two AWS ports with an
// injected import that fails once.

const REGION = "eu-west-1";

const event: ApprovalRequestedEvent = {
  tenantId: "tenant_uk_01",
  runId: "run_5f0c2e7a9b1d4c3e8f6a7b2c1d0e9f8a",
  approvalId: "apr_1",
  toolName: "recordInvoice",
  preview: { quoteId: "q_1", grossTotal: "3000.00", currency: "GBP", threshold: "2500.00" },
  requestedBy: "usr_1",
  requestedAt: "2026-12-01T20:00:00.000Z",
  expiresAt: "2026-12-02T20:00:00.000Z",
};

const accepted = { status: 200, json: { FailedEntryCount: 0, Entries: [{ EventId: "e-1" }] } };

let standIn: AwsStandIn;
const clientConfig = () => ({
  endpoint: standIn.endpoint,
  credentials: STAND_IN_CREDENTIALS,
  maxAttempts: 1,
});

/** An import of `module` that fails on its first `failures` calls (a transient load error), counting calls. */
function flakyImport<T>(module: () => T, failures = 1) {
  const calls = { count: 0 };
  const load = async () => {
    calls.count += 1;
    if (calls.count <= failures) throw new Error("Cannot find module (EMFILE: too many open files)");
    return module();
  };
  return { calls, load };
}

beforeAll(async () => {
  standIn = await startAwsStandIn();
});
afterAll(() => standIn.close());
beforeEach(() => {
  standIn.requests.length = 0;
});

describe("the EventBridge approval events port", () => {
  it("puts one entry on the default bus: PutEvents, Source boundloop, the event as Detail", async () => {
    standIn.answer(accepted);
    await eventBridgeApprovalEvents(REGION, { clientConfig: clientConfig() }).requested(event);
    const [put] = standIn.requests;
    expect(standIn.requests).toHaveLength(1);
    expect(put?.method).toBe("POST");
    expect(put?.path).toBe("/");
    expect(put?.headers["x-amz-target"]).toBe("AWSEvents.PutEvents");
    expect(put?.headers["content-type"]).toBe("application/x-amz-json-1.1");
    expect(put?.headers.authorization).toContain(`/${REGION}/events/aws4_request`);
    const body = JSON.parse(put?.body.toString("utf8") ?? "");
    expect(body).toEqual({
      Entries: [{ Source: EVENT_SOURCE, DetailType: APPROVAL_REQUESTED, Detail: expect.any(String) }],
    });
    expect(JSON.parse(body.Entries[0].Detail)).toEqual(event);
  });

  it("an entry EventBridge reports failed (200, FailedEntryCount 1) is thrown with its code", async () => {
    standIn.answer({
      status: 200,
      json: { FailedEntryCount: 1, Entries: [{ ErrorCode: "InternalFailure", ErrorMessage: "try again" }] },
    });
    await expect(
      eventBridgeApprovalEvents(REGION, { clientConfig: clientConfig() }).requested(event),
    ).rejects.toThrow("EventBridge refused the event: InternalFailure try again");
  });

  it("a refused request (AccessDeniedException) is thrown as the SDK's error", async () => {
    standIn.answer({
      status: 400,
      json: { __type: "AccessDeniedException", message: "not authorized to perform events:PutEvents" },
    });
    await expect(
      eventBridgeApprovalEvents(REGION, { clientConfig: clientConfig() }).requested(event),
    ).rejects.toMatchObject({ name: "AccessDeniedException", $metadata: { httpStatusCode: 400 } });
  });
});

describe("lazy loaders retry a failed import", () => {
  it("EventBridge: the first event fails with the import error, the next loads the client and is put", async () => {
    standIn.answer(accepted);
    const flaky = flakyImport(() => eventBridgeModule);
    const port = eventBridgeApprovalEvents(REGION, {
      clientConfig: clientConfig(),
      importClient: flaky.load,
    });
    await expect(port.requested(event)).rejects.toThrow("EMFILE");
    expect(standIn.requests).toHaveLength(0);
    await port.requested(event);
    await port.requested(event);
    expect(standIn.requests).toHaveLength(2);
    // Loaded once it succeeded: the third event did not import again.
    expect(flaky.calls.count).toBe(2);
  });

  it("Lambda: the first start fails with the import error, the next loads the port and invokes", async () => {
    standIn.answer({ status: 202 });
    const flaky = flakyImport(() => lambdaPortModule);
    const config = loadConfig({
      RUNNER_FUNCTION_ARN: "arn:aws:lambda:eu-west-1:123456789012:function:boundloop-runner:live",
    });
    const port = lambdaExecutions(config, flaky.load as never, {
      endpoint: standIn.endpoint,
      credentials: STAND_IN_CREDENTIALS,
      maxAttempts: 1,
    });
    if (!port) throw new Error("RUNNER_FUNCTION_ARN is set: the port exists");
    await expect(port.stop("run_a")).rejects.toThrow("EMFILE");
    await expect(port.start("run_a", { runId: "run_a" } as never)).resolves.toBeUndefined();
    expect(flaky.calls.count).toBe(2);
    expect(standIn.requests.map((request) => request.headers["x-amz-durable-execution-name"])).toEqual([
      "run_a",
    ]);
  });
});
