import { randomUUID } from "node:crypto";
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2 } from "aws-lambda";
import { expect, inject } from "vitest";
import { RunRecordSchema } from "../../functions/api/contract.js";
import { printedApprovalEvents } from "../../local/approval-events.js";
import type { LocalDurableExecutions } from "../../local/durable-executions.js";
import { createLocalDurableApi, eventForRoute } from "../../local/durable-runner.js";
import { createLambdaContext } from "../../local/lambda-context.js";
import { type LocalModelServer, startModelServer } from "../../local/model-server.js";
import type { ApprovalRequestedEvent } from "../../shared/approval-events.js";
import type { Clock } from "../../shared/clock.js";
import { type Config, loadConfig } from "../../shared/config.js";
import { type ApiDeps, createApiDeps, type RunnerDeps } from "../../shared/deps.js";
import type { DurableRunOptions } from "../../shared/durable/runner.js";
import { ensureTable } from "../../shared/store/table.js";
import { startedForFile } from "./file-hooks.js";
import { runEvent } from "./idempotency.js";

/**
 * The API handler (functions/api/handler.ts `createLazyHandler`, the deployed entry's factory) and a
 * durable runner on the testing SDK's local runner (local/durable-executions.ts), over a fresh table on
 * the suite's DynamoDB Local and a local model server spoken to over HTTP. The runner has its own
 * dependencies, as the deployed runner function does.
 * - `faults`: set by a test to cut steps off (see DurableRunOptions.faults); read at each step
 */
export interface DurableStack {
  config: Config;
  deps: ApiDeps;
  /** The runner's dependencies (its own clients, as the deployed runner function has). */
  runnerDeps: RunnerDeps;
  model: LocalModelServer;
  executions: LocalDurableExecutions;
  faults: NonNullable<DurableRunOptions["faults"]>;
  /** The approval events the runner sent (docs/approvals.md). */
  approvalEvents: ApprovalRequestedEvent[];
  invoke(event: APIGatewayProxyEventV2): Promise<APIGatewayProxyStructuredResultV2>;
  stop(): Promise<void>;
}

/**
 * Starts a {@link DurableStack}; `env` overrides configuration variables; `options.clock` is the clock of
 * the API and the runner (a durable run's start, deadline and duration; default the wall clock);
 * `options.quotas` their quotas' clock (windows, `Retry-After`, a budget wait's timeout; default
 * `options.clock`).
 */
export async function startDurableStack(
  env: Record<string, string> = {},
  options: { clock?: Clock; quotas?: { now: () => number } } = {},
): Promise<DurableStack> {
  const model = await startModelServer();
  const config = loadConfig({
    DYNAMODB_ENDPOINT: inject("dynamoEndpoint"),
    OPENAI_BASE_URL: model.baseURL,
    TABLE_NAME: `test-${randomUUID()}`,
    POWERTOOLS_LOG_LEVEL: "SILENT",
    ...env,
  });
  const faults: DurableStack["faults"] = {};
  const events = printedApprovalEvents(() => {});
  const api = createLocalDurableApi(config, {
    ...options,
    approvalEvents: events,
    faults: {
      beforeStep: (name) => faults.beforeStep?.(name),
      afterStep: (name) => faults.afterStep?.(name),
    },
  });
  const { executions, handler } = api;
  const deps = createApiDeps(config, { executions, ...options });
  await ensureTable(deps.ddb, config.table.name);
  return {
    config,
    deps: { ...deps, executions },
    runnerDeps: api.runnerDeps,
    model,
    executions,
    faults,
    approvalEvents: events.sent,
    async invoke(event) {
      return (await handler(
        event as never,
        createLambdaContext(29_000),
      )) as APIGatewayProxyStructuredResultV2;
    },
    async stop() {
      await api.stop();
      deps.ddb.destroy();
      await model.stop();
    },
  };
}

/**
 * The calling file's {@link DurableStack} (`env` as for startDurableStack), started before its tests and
 * stopped after them; `planner`: see {@link startedForFile}.
 * @returns the stack, whose fields are set once the file's `beforeAll` has run
 */
export const durableStackForFile = (env: Record<string, string> = {}, options: { planner?: boolean } = {}) =>
  startedForFile(() => startDurableStack(env), options);

/**
 * The seed event turned into `GET /v1/runs/{runId}` (or `POST /v1/runs/{runId}/cancel`) for `tenantId`'s
 * user usr_idem (scope billing:write), as API Gateway HTTP API v2 delivers it.
 */
export function runPathEvent(runId: string, tenantId: string, action: "get" | "cancel" = "get") {
  return action === "get"
    ? eventForRoute(runEvent({ tenantId, prompt: "x" }), "GET", `/v1/runs/${runId}`)
    : eventForRoute(runEvent({ tenantId, prompt: "x" }), "POST", `/v1/runs/${runId}/cancel`);
}

/**
 * Starts a durable run (`Prefer: respond-async`) of `userId` (default usr_idem) in `tenantId` with
 * `prompt`; expects 202 and returns the run's record as answered.
 */
export async function startAsyncRun(stack: DurableStack, tenantId: string, prompt: string, userId?: string) {
  const event = runEvent({ tenantId, userId, prompt });
  event.headers = { ...event.headers, prefer: "respond-async" };
  const response = await stack.invoke(event);
  expect(response.statusCode).toBe(202);
  return RunRecordSchema.parse(JSON.parse(response.body ?? ""));
}
