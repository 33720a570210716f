/**
 * Runs the real Lambda handler once in a process of its own, so a test can kill it mid-run (a crash,
 * not a mock). Config comes from the environment like in Lambda; the API Gateway event is the JSON in
 * BOUNDLOOP_CHILD_EVENT. Prints the handler's result as one JSON line on stdout.
 */
import type { ApiEvent } from "../../functions/api/handler.js";
import { createLambdaContext } from "../../local/lambda-context.js";

const { handler } = await import("../../functions/api/handler.js");
const event = JSON.parse(process.env.BOUNDLOOP_CHILD_EVENT ?? "null") as ApiEvent;
const result = await handler(event, createLambdaContext(29_000));
process.stdout.write(`${JSON.stringify(result)}\n`);
