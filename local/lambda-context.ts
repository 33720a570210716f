import { randomUUID } from "node:crypto";
import type { Context } from "aws-lambda";

/**
 * A Lambda context like the one the runtime passes: requestId, function name, and a
 * getRemainingTimeInMillis that counts down from `timeoutMs` (ms) from the moment it is made.
 */
export function createLambdaContext(timeoutMs: number, functionName = "boundloop-api"): Context {
  const deadline = Date.now() + timeoutMs;
  return {
    callbackWaitsForEmptyEventLoop: false,
    functionName,
    functionVersion: "$LATEST",
    invokedFunctionArn: `arn:aws:lambda:eu-west-2:123456789012:function:${functionName}`,
    memoryLimitInMB: "1024",
    awsRequestId: randomUUID(),
    logGroupName: `/aws/lambda/${functionName}`,
    logStreamName: `local/${new Date().toISOString().slice(0, 10)}/[$LATEST]local`,
    getRemainingTimeInMillis: () => Math.max(0, deadline - Date.now()),
    done: () => undefined,
    fail: () => undefined,
    succeed: () => undefined,
  };
}
