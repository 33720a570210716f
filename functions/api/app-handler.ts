import { handle } from "hono/aws-lambda";
import type { AppDeps } from "../../shared/deps.js";
import { createApp, type LazyDeps } from "./app.js";
import { answerAdapterFailuresAsProblems, type LambdaHandler } from "./lambda-adapter.js";

export type { ApiEvent, LambdaHandler } from "./lambda-adapter.js";

/**
 * Builds a Lambda handler over the whole app (functions/api/app.ts) and the given dependencies (or
 * {@link LazyDeps}, loaded on the first request that needs them). Tests and local scripts use this with
 * their own clients; the deployed entry (functions/api/handler.ts) loads the app lazily instead.
 * Adapter failures are answered as problem+json ({@link answerAdapterFailuresAsProblems}).
 */
export function createHandler(deps: AppDeps | LazyDeps): LambdaHandler {
  return answerAdapterFailuresAsProblems(handle(createApp(deps)));
}
