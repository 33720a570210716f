import { randomUUID } from "node:crypto";
import type { Context } from "aws-lambda";

/**
 * Variables the Lambda runtime sets in every execution environment that the handler's libraries read,
 * for the local commands that run the handler in their own process (`npm run invoke`, `npm run dev`,
 * `npm start`), set before the handler is built. AWS_LAMBDA_INITIALIZATION_TYPE=on-demand: Powertools
 * reports a cold start only in an on-demand environment (its Utility reads this variable when the Logger
 * is made; unset, every invocation logs `cold_start: false`), so with it the process's first invocation
 * logs `cold_start: true` and the later ones false, as a Lambda function does
 * (https://docs.aws.amazon.com/lambda/latest/dg/configuration-envvars.html#configuration-envvars-runtime).
 */
export const LAMBDA_RUNTIME_ENV: Readonly<Record<string, string>> = {
  AWS_LAMBDA_INITIALIZATION_TYPE: "on-demand",
};

/** Sets each of {@link LAMBDA_RUNTIME_ENV} in `env` that is not set already (a value the user gave wins). */
export function setLambdaRuntimeEnv(env: NodeJS.ProcessEnv = process.env): void {
  for (const [name, value] of Object.entries(LAMBDA_RUNTIME_ENV)) env[name] ??= value;
}

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
