import { LambdaClient } from "@aws-sdk/client-lambda";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { type DurableRunPayload, ExecutionConflictError } from "../shared/durable/executions.js";
import { LambdaDurableExecutions } from "../shared/durable/lambda-executions.js";
import {
  type AwsStandIn,
  type ReceivedRequest,
  restJsonError,
  STAND_IN_CREDENTIALS,
  startAwsStandIn,
} from "./support/aws-stand-in.js";

// The Lambda port through the real @aws-sdk/client-lambda (its REST-JSON serializer, SigV4 signer and
// error parser) against a local stand-in of the Lambda endpoint answering Lambda's documented shapes.

const REGION = "eu-west-1";
const FUNCTION_ARN = "arn:aws:lambda:eu-west-1:123456789012:function:boundloop-runner";
const ALIAS_ARN = `${FUNCTION_ARN}:live`;
const NAME = "run_5f0c2e7a9b1d4c3e8f6a7b2c1d0e9f8a";
const EXECUTION_ARN = `${ALIAS_ARN}/durable-execution/${NAME}/7d1c6a2e-1111-4b2b-9c3c-000000000001`;

const payload: DurableRunPayload = {
  version: 1,
  runId: NAME,
  runScope: "order-42",
  security: { userId: "usr_1", tenantId: "tenant_uk_01", permissions: ["billing:write"] },
  prompt: "Record an invoice of 100.00 GBP for ACME.",
  limits: {
    maxCycles: 8,
    runTimeoutMs: 600_000,
    maxTotalTokens: 50_000,
    maxToolCallsPerTurn: 8,
    maxToolCallsPerRun: 32,
    maxConcurrentToolCalls: 4,
    maxToolResultBytes: 16_384,
    loopBreakerThreshold: 3,
    summarizeOnMaxCycles: true,
  },
  startedAt: 1_764_633_600_000,
  deadlineAt: 1_764_634_200_000,
};

/** ListDurableExecutionsByFunction's answer listing `status` executions (none for an empty list). */
const listed = (...statuses: string[]) => ({
  status: 200,
  json: {
    DurableExecutions: statuses.map((status) => ({
      DurableExecutionArn: EXECUTION_ARN,
      DurableExecutionName: NAME,
      FunctionArn: ALIAS_ARN,
      Status: status,
      StartTimestamp: 1_764_633_600,
    })),
  },
});
const execution = (status: string) => ({
  status: 200,
  json: {
    DurableExecutionArn: EXECUTION_ARN,
    DurableExecutionName: NAME,
    FunctionArn: ALIAS_ARN,
    StartTimestamp: 1_764_633_600,
    Status: status,
  },
});

/** The request line as Lambda sees it: method and percent-decoded path. */
const line = (request: ReceivedRequest | undefined) =>
  request && `${request.method} ${decodeURIComponent(request.path)}`;

let standIn: AwsStandIn;
let port: LambdaDurableExecutions;

beforeAll(async () => {
  standIn = await startAwsStandIn();
  const client = new LambdaClient({
    region: REGION,
    endpoint: standIn.endpoint,
    credentials: STAND_IN_CREDENTIALS,
    maxAttempts: 1,
  });
  port = new LambdaDurableExecutions(client, ALIAS_ARN);
});
afterAll(() => standIn.close());
beforeEach(() => {
  standIn.requests.length = 0;
});

describe("LambdaDurableExecutions against the Lambda API", () => {
  it("start: an asynchronous Invoke of the alias, named, with the payload as JSON, signed for lambda", async () => {
    standIn.answer({ status: 202 });
    await port.start(NAME, payload);
    const [invoke] = standIn.requests;
    expect(standIn.requests).toHaveLength(1);
    expect(line(invoke)).toBe(`POST /2015-03-31/functions/${ALIAS_ARN}/invocations`);
    expect(invoke?.headers["x-amz-invocation-type"]).toBe("Event");
    expect(invoke?.headers["x-amz-durable-execution-name"]).toBe(NAME);
    expect(JSON.parse(invoke?.body.toString("utf8") ?? "")).toEqual(payload);
    expect(invoke?.headers.authorization).toMatch(
      new RegExp(`^AWS4-HMAC-SHA256 Credential=AKIDSTANDIN/\\d{8}/${REGION}/lambda/aws4_request`),
    );
  });

  it("start: Lambda's DurableExecutionAlreadyStartedException becomes ExecutionConflictError", async () => {
    standIn.answer(
      restJsonError(
        409,
        "DurableExecutionAlreadyStartedException",
        "Execution already started with a different input",
      ),
    );
    const error = await port.start(NAME, payload).catch((thrown: unknown) => thrown);
    expect(error).toBeInstanceOf(ExecutionConflictError);
    expect(error).toMatchObject({
      executionName: NAME,
      cause: { name: "DurableExecutionAlreadyStartedException" },
    });
  });

  it("start: any other Lambda error is thrown as the SDK's error, not as a conflict", async () => {
    standIn.answer(restJsonError(429, "TooManyRequestsException", "Rate exceeded"));
    const error = await port.start(NAME, payload).catch((thrown: unknown) => thrown);
    expect(error).not.toBeInstanceOf(ExecutionConflictError);
    expect(error).toMatchObject({ name: "TooManyRequestsException", $metadata: { httpStatusCode: 429 } });
  });

  it("stop: finds the execution by name on the unqualified function, reads it, stops it", async () => {
    standIn.answer(listed("RUNNING"), execution("RUNNING"), {
      status: 200,
      json: { StopTimestamp: 1_764_633_700 },
    });
    expect(await port.stop(NAME)).toBe("stopped");
    const [list, get, stop] = standIn.requests;
    expect(standIn.requests.map(line)).toEqual([
      `GET /2025-12-01/functions/${FUNCTION_ARN}/durable-executions`,
      `GET /2025-12-01/durable-executions/${EXECUTION_ARN}`,
      `POST /2025-12-01/durable-executions/${EXECUTION_ARN}/stop`,
    ]);
    expect(Object.fromEntries(list?.query ?? [])).toEqual({ DurableExecutionName: NAME, MaxItems: "1" });
    expect(get?.body.length).toBe(0);
    expect(stop?.headers.authorization).toContain(`/${REGION}/lambda/aws4_request`);
  });

  it("stop: no execution of that name, or one that already ended, is not_running and nothing is stopped", async () => {
    standIn.answer(listed());
    expect(await port.stop(NAME)).toBe("not_running");
    expect(standIn.requests).toHaveLength(1);
    standIn.requests.length = 0;
    standIn.answer(listed("SUCCEEDED"), execution("SUCCEEDED"));
    expect(await port.stop(NAME)).toBe("not_running");
    expect(standIn.requests.map((request) => request.method)).toEqual(["GET", "GET"]);
  });

  it("stop: an execution that ends between the read and the stop (ResourceNotFoundException) is not_running", async () => {
    standIn.answer(
      listed("RUNNING"),
      execution("RUNNING"),
      restJsonError(404, "ResourceNotFoundException", "The execution is not running"),
    );
    expect(await port.stop(NAME)).toBe("not_running");
  });

  it("stop: a throttled list is thrown, never read as not_running", async () => {
    standIn.answer(restJsonError(429, "TooManyRequestsException", "Rate exceeded"));
    await expect(port.stop(NAME)).rejects.toMatchObject({ name: "TooManyRequestsException" });
  });

  it("completeCallback: SendDurableExecutionCallbackSuccess with the result as the raw body", async () => {
    standIn.answer({ status: 200, json: {} });
    const result = JSON.stringify({ decision: "approved", decidedBy: "usr_2" });
    const callback = { callbackId: "cb/1+2=", executionName: NAME, waitName: "approval:1" };
    expect(await port.completeCallback(callback, result)).toBe("completed");
    const [send] = standIn.requests;
    expect(line(send)).toBe("POST /2025-12-01/durable-execution-callbacks/cb/1+2=/succeed");
    expect(send?.path).toBe("/2025-12-01/durable-execution-callbacks/cb%2F1%2B2%3D/succeed");
    expect(send?.body.toString("utf8")).toBe(result);
  });

  it("completeCallback: a callback no longer waiting is not_waiting; a service failure is thrown", async () => {
    const callback = { callbackId: "cb-1", executionName: NAME, waitName: "approval:1" };
    for (const [status, type] of [
      [404, "ResourceNotFoundException"],
      [400, "CallbackTimeoutException"],
      [400, "InvalidParameterValueException"],
    ] as const) {
      standIn.answer(restJsonError(status, type, "The callback is not waiting"));
      expect(await port.completeCallback(callback, "{}"), type).toBe("not_waiting");
    }
    standIn.answer(restJsonError(500, "ServiceException", "Internal failure"));
    await expect(port.completeCallback(callback, "{}")).rejects.toMatchObject({ name: "ServiceException" });
  });
});
