import type { RunLimits } from "../agent/run-limits.js";
import type { CarriedStep, DurableRunPayload } from "../durable/executions.js";
import type { SecurityContext } from "../identity.js";
import type { CarriedTrace } from "../tracing.js";

/**
 * The start payload of a durable run (shared/durable/executions.ts), the one way the API builds it, for
 * an asynchronous start and a hand-over alike: the deadline is absolute, `startedAt` (epoch ms, the run
 * record's start) plus `limits.runTimeoutMs`; a continuation names the previous run and the
 * HISTORY_MAX_TOKENS (`historyMaxTokens`) it was trimmed to; `carried` are the steps a synchronous run
 * completed before its hand-over; `trace` the run's agent span (shared/run-trace.ts `agentTraceOf`), with
 * tracing on.
 */
export function durableRunPayload(input: {
  runId: string;
  runScope: string;
  security: SecurityContext;
  prompt: string;
  limits: RunLimits;
  startedAt: number;
  previousRunId?: string | null | undefined;
  historyMaxTokens: number;
  carried?: CarriedStep[] | undefined;
  trace?: CarriedTrace | undefined;
}): DurableRunPayload {
  const { security } = input;
  return {
    version: 1,
    runId: input.runId,
    runScope: input.runScope,
    security: {
      userId: security.userId,
      tenantId: security.tenantId,
      permissions: [...security.permissions],
    },
    prompt: input.prompt,
    limits: input.limits,
    startedAt: input.startedAt,
    deadlineAt: input.startedAt + input.limits.runTimeoutMs,
    ...(input.carried ? { carried: input.carried } : {}),
    ...(input.trace ? { trace: input.trace } : {}),
    ...(input.previousRunId
      ? { conversation: { previousRunId: input.previousRunId, historyMaxTokens: input.historyMaxTokens } }
      : {}),
  };
}
