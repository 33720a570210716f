import type { RawConfig } from "../shared/config.js";

/**
 * Time (s) the runner's execution gets beyond the run's own wall-time cap: the last writes after the
 * deadline, and one invocation's worth (RUNNER.invocationTimeoutSeconds) for a step cut off and retried.
 */
export const EXECUTION_TIMEOUT_MARGIN_SECONDS = 300;

/** How the stack derives DURABLE_EXECUTION_TIMEOUT_SECONDS, in the deploy settings' names (for messages). */
export const EXECUTION_TIMEOUT_SOURCE = `DURABLE_EXECUTION_TIMEOUT_SECONDS is the stack's: asyncRunTimeoutMs + ${EXECUTION_TIMEOUT_MARGIN_SECONDS} s + approvalTimeoutSeconds + quotaWaitSeconds`;

/** Lambda durable executions last at most one year (s). */
export const MAX_EXECUTION_TIMEOUT_SECONDS = 31_536_000;

/**
 * The durable execution timeout (s) for the configuration deployed: the durable run's cap
 * (ASYNC_RUN_TIMEOUT_MS, rounded up to s) plus {@link EXECUTION_TIMEOUT_MARGIN_SECONDS}, plus one approval
 * wait of the APPROVAL_TIMEOUT_SECONDS configured and the QUOTA_WAIT_SECONDS a run may wait for budget in
 * all (neither wait counts against the run's deadline: docs/approvals.md, docs/quotas.md), at most a year.
 * With the defaults: 600 + 300 + 86 400 + 86 400 = 173 700 s. The stack gives both functions this value
 * as DURABLE_EXECUTION_TIMEOUT_SECONDS.
 */
export function runnerExecutionTimeoutSeconds(
  config: Pick<RawConfig, "ASYNC_RUN_TIMEOUT_MS" | "APPROVAL_TIMEOUT_SECONDS" | "QUOTA_WAIT_SECONDS">,
): number {
  return Math.min(
    MAX_EXECUTION_TIMEOUT_SECONDS,
    Math.ceil(config.ASYNC_RUN_TIMEOUT_MS / 1000) +
      EXECUTION_TIMEOUT_MARGIN_SECONDS +
      config.APPROVAL_TIMEOUT_SECONDS +
      config.QUOTA_WAIT_SECONDS,
  );
}
