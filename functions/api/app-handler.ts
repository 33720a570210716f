import { handle } from "hono/aws-lambda";
import type { ApiDeps } from "../../shared/deps.js";
import { createApp, type LazyDeps } from "./app.js";
import { guardLambdaEdge, type LambdaHandler } from "./lambda-adapter.js";

export type { ApiEvent, LambdaHandler } from "./lambda-adapter.js";

/**
 * Builds a Lambda handler over the whole app (functions/api/app.ts) and the given dependencies (or
 * {@link LazyDeps}, loaded on the first request that needs them). Tests and local scripts use this with
 * their own clients; the deployed entry (functions/api/handler.ts) loads the app lazily instead.
 * The raw event first passes the edge rules ({@link guardLambdaEdge}: named-stage paths, base64 bodies,
 * adapter failures as problem+json).
 */
export function createHandler(deps: ApiDeps | LazyDeps): LambdaHandler {
  return guardLambdaEdge(handle(createApp(deps)));
}
