import type { StreamifyHandler } from "aws-lambda";
import type { TokenVerifier } from "../shared/auth/token-verifier.js";
import type { Config } from "../shared/config.js";
import type { ApiDeps } from "../shared/deps.js";
import type { DurableExecutions } from "../shared/durable/executions.js";
import { printedApprovalEvents } from "./approval-events.js";
import { installLambdaStreaming } from "./lambda-streaming.js";

/**
 * The streaming function's entry (functions/stream/entry.ts) as the stack deploys it, for local runs:
 * the same app, the configuration the streaming function has (a synchronous run bounded by
 * STREAM_RUN_TIMEOUT_MS), its own dependencies (durable runs on `executions` when given), and bearer
 * tokens checked by `verifier` (the one token verifier of `config.auth`, or of a local issuer:
 * local/dev-auth.ts `devAuthSettings`), CORS for the console's origins (`config.console.origins`). Installs the runtime stand-in
 * (local/lambda-streaming.ts) first; invoke the result with `invokeStreaming`. Used by `npm run dev`
 * (what the function URL serves) and `npm start -- --watch`.
 */
export async function localStreamHandler(
  config: Config,
  verifier: TokenVerifier,
  executions?: DurableExecutions,
): Promise<StreamifyHandler> {
  installLambdaStreaming();
  const [{ createStreamHandler }, { createApp }, { createApiDeps }] = await Promise.all([
    import("../functions/stream/entry.js"),
    import("../functions/api/app.js"),
    import("../shared/deps.js"),
  ]);
  const streamConfig = { ...config, limits: { ...config.limits, runTimeoutMs: config.stream.runTimeoutMs } };
  let deps: ApiDeps | undefined;
  const app = createApp({
    config: streamConfig,
    load: () => {
      deps ??= createApiDeps(streamConfig, {
        ...(executions ? { executions } : {}),
        approvalEvents: printedApprovalEvents(),
      });
      return deps;
    },
  });
  return createStreamHandler(
    (request, env, executionCtx) => app.fetch(request, env, executionCtx as never),
    () => verifier,
    { corsOrigins: config.console.origins, tracing: config },
  );
}
