import type { APIGatewayProxyEventV2 } from "aws-lambda";
import { createLazyHandler } from "../functions/api/handler.js";
import type { LambdaHandler } from "../functions/api/lambda-adapter.js";
import type { ApprovalEvents } from "../shared/approval-events.js";
import type { Clock } from "../shared/clock.js";
import type { Config } from "../shared/config.js";
import { createRunnerDeps } from "../shared/deps.js";
import { createDurableRunHandler, type DurableRunOptions } from "../shared/durable/runner.js";
import { withTracing } from "../shared/telemetry/entry.js";
import { printedApprovalEvents } from "./approval-events.js";
import { LocalDurableExecutions } from "./durable-executions.js";

/**
 * The API handler as deployed (functions/api/handler.ts `createLazyHandler`) with durable runs on the
 * local runner (local/durable-executions.ts): for `npm run dev` and `npm start -- --async`. The runner
 * gets its own dependencies, as the deployed runner function does; `options.faults` reach every step
 * (tests cut steps off with them); `options.approvalEvents` receives the runner's approval events
 * (default: printed to stdout); `options.clock` is the clock of both (default the wall clock): a durable
 * run's start, deadline and duration go by it, so a test moves them; `options.quotas` is the quotas' clock
 * (windows, `Retry-After`, how long a run waits for budget; default Date.now). `stop()` ends running executions,
 * the testing SDK's worker thread and the runner's clients.
 */
export function createLocalDurableApi(
  config: Config,
  options: Pick<DurableRunOptions, "faults"> & {
    approvalEvents?: ApprovalEvents;
    clock?: Clock;
    quotas?: { now: () => number };
  } = {},
): {
  handler: LambdaHandler;
  executions: LocalDurableExecutions;
  /** The runner's own dependencies (tests inject store faults into its DynamoDB client). */
  runnerDeps: ReturnType<typeof createRunnerDeps>;
  stop(): Promise<void>;
} {
  const { approvalEvents = printedApprovalEvents(), clock, quotas, ...runnerOptions } = options;
  const clocks = { ...(clock ? { clock } : {}), ...(quotas ? { quotas } : {}) };
  const runnerDeps = createRunnerDeps(config, { approvalEvents, ...clocks });
  const executions = new LocalDurableExecutions((runOptions) =>
    createDurableRunHandler(runnerDeps, { ...runnerOptions, ...runOptions }),
  );
  return {
    // Traced as the deployed entry is (functions/api/handler.ts): TRACING works in `npm run dev` too. The
    // runner's spans, made in this process, go through the SDK the first API invocation started.
    handler: withTracing(createLazyHandler(config, { executions, approvalEvents, ...clocks }), config),
    executions,
    runnerDeps,
    async stop() {
      await executions.shutdown();
      runnerDeps.ddb.destroy();
    },
  };
}

/**
 * A copy of an API Gateway HTTP API v2 event (same authorizer claims and headers) sent to another route,
 * without a body: e.g. `GET /v1/runs/{runId}` or `POST /v1/runs/{runId}/cancel` after a POST /v1/runs.
 */
export function eventForRoute<T extends APIGatewayProxyEventV2>(event: T, method: string, path: string): T {
  const copy = structuredClone(event);
  Object.assign(copy, {
    rawPath: path,
    routeKey: `${method} ${path}`,
    body: undefined,
    isBase64Encoded: false,
  });
  copy.requestContext.http.method = method;
  copy.requestContext.http.path = path;
  return copy;
}
