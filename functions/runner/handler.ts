import { eventBridgeApprovalEvents } from "../../shared/approval-events.js";
import { loadConfig } from "../../shared/config.js";
import { createRunnerDeps } from "../../shared/deps.js";
import { createDurableRunHandler } from "../../shared/durable/runner.js";
import { withTracing } from "../../shared/telemetry/entry.js";

/** The runner's configuration, parsed at cold start (an invalid environment fails the init). */
const config = loadConfig(process.env);

/**
 * The durable runner the stack deploys (infra/stack.ts, invoked only through its alias by the API
 * function): `withDurableExecution` around the same `runAgent` as the synchronous path, each model call
 * and tool turn a `ctx.step` (shared/durable/runner.ts, docs/durable-runs.md). The clients are built on
 * the first invocation. Approvals are announced on EventBridge's default bus (shared/approval-events.ts).
 * With TRACING on, each invocation's spans are flushed before it returns (shared/telemetry/entry.ts).
 */
export const handler = withTracing(
  createDurableRunHandler(() =>
    createRunnerDeps(config, { approvalEvents: eventBridgeApprovalEvents(config.table.region) }),
  ),
  config,
);
