import { z } from "zod";
import { RunLimitsSchema } from "../agent/run-limits.js";
import { CarriedTraceSchema } from "../carried-trace.js";
import { sha256Hex } from "../hash.js";
import type { SecurityContext } from "../identity.js";

/**
 * The most bytes (UTF-8 JSON) a durable execution's input may have: 256 KB, the input payload limit of
 * Lambda durable functions (AWS's durable functions quotas; docs/durable-runs.md, "Checkpoint size
 * limit"). The API measures a {@link DurableRunPayload} that carries steps against it before it starts
 * the execution (shared/runs/handover.ts).
 */
export const MAX_EXECUTION_INPUT_BYTES = 256 * 1024;

/** One completed step of a synchronous run carried into its durable execution: its name and result. */
export const CarriedStepSchema = z.object({ name: z.string().min(1), result: z.unknown() }).strict();
/** See {@link CarriedStepSchema}. */
export type CarriedStep = z.infer<typeof CarriedStepSchema>;

/**
 * The start event of a durable run: everything the runner needs, fixed by the API when it accepted the
 * run, so every invocation that replays the run sees the same input (docs/durable-runs.md).
 * - `runId`: the run (also the execution name, see {@link executionNameFor})
 * - `runScope`: the client's Idempotency-Key, else `runId` (feeds tool idempotency keys)
 * - `security`: the caller's verified security context (only the API can invoke the runner: infra/ grants
 *   `lambda:InvokeFunction` on the runner alias to the API function alone)
 * - `limits`: the run's effective limits (`limits.runTimeoutMs` ≤ config `durable.runTimeoutMs`)
 * - `startedAt`, `deadlineAt`: epoch ms; the run's start and its absolute deadline, read from the run
 *   record, so a retried start sends the same payload
 * - `conversation`: present when the run continues an earlier one (`previousRunId`): its id and the
 *   HISTORY_MAX_TOKENS the API trimmed the history to. Not the transcript itself (a payload is limited to
 *   256 KB): the runner loads it in its `history:load` step (shared/durable/conversation-load.ts)
 * - `carried`: steps a synchronous run completed before it paused for an approval and was handed over
 *   (shared/runs/handover.ts): the runner returns these results for those step names instead
 *   of calling the model or the tools again (docs/approvals.md)
 * - `trace`: with tracing on, the run's agent span (shared/run-trace.ts `agentTraceOf`): every
 *   invocation's spans join its trace under it, and the one that finishes the run emits it
 *
 * The runner parses its event with this schema; {@link DurableRunPayload} is its type.
 */
export const DurableRunPayloadSchema = z
  .object({
    version: z.literal(1),
    runId: z.string().regex(/^run_[A-Za-z0-9_-]{1,60}$/),
    runScope: z.string().min(1).max(255),
    security: z.object({
      userId: z.string().min(1),
      tenantId: z.string().min(1),
      permissions: z.array(z.string()).readonly(),
    }),
    prompt: z.string().min(1),
    limits: RunLimitsSchema,
    startedAt: z.number().int().nonnegative(),
    deadlineAt: z.number().int().nonnegative(),
    conversation: z
      .object({
        previousRunId: z.string().min(1),
        historyMaxTokens: z.number().int().nonnegative(),
      })
      .strict()
      .optional(),
    carried: z.array(CarriedStepSchema).optional(),
    trace: CarriedTraceSchema.optional(),
  })
  .strict();
/** See {@link DurableRunPayloadSchema}. */
export type DurableRunPayload = z.infer<typeof DurableRunPayloadSchema>;

/**
 * Status of a durable execution, as Lambda's GetDurableExecution reports it (`ExecutionStatus` of
 * @aws-sdk/client-lambda): RUNNING until it ends SUCCEEDED, FAILED, TIMED_OUT or STOPPED.
 */
export type ExecutionStatus = "RUNNING" | "SUCCEEDED" | "FAILED" | "TIMED_OUT" | "STOPPED";

/**
 * The port through which the API starts, stops and reads durable runs; the AWS implementation is
 * shared/durable/lambda-executions.ts, the local one (tests, `npm run dev`, `npm start -- --async`) is
 * local/durable-executions.ts.
 * - `start(name, payload)`: starts the execution `name` with `payload`; starting a name again with the
 *   same payload starts nothing (Lambda treats a repeated name as the same execution)
 * - `stop(name)`: stops a running execution: "stopped", or "not_running" when it has already ended
 *   (or never existed)
 * - `completeCallback(callback, result)`: completes a `waitForCallback` of an execution with `result`
 *   (a JSON string): SendDurableExecutionCallbackSuccess on AWS. "completed", or "not_waiting" when the
 *   callback is no longer waiting (already completed, timed out, or its execution ended)
 * @throws ExecutionConflictError from `start` when `name` was started with another payload
 */
export interface DurableExecutions {
  start(name: string, payload: DurableRunPayload): Promise<void>;
  stop(name: string): Promise<"stopped" | "not_running">;
  completeCallback(callback: CallbackRef, result: string): Promise<"completed" | "not_waiting">;
}

/**
 * Which callback to complete: `callbackId` (the durable service's id, given to the waiting execution's
 * submitter; all Lambda needs) and, for the local runner, whose testing SDK sends callbacks through an
 * operation handle, the execution's name and the wait's name.
 */
export interface CallbackRef {
  callbackId: string;
  executionName: string;
  waitName: string;
}

/** Raised by {@link DurableExecutions.start} when the execution name exists with another payload. */
export class ExecutionConflictError extends Error {
  constructor(
    readonly executionName: string,
    options?: { cause?: unknown },
  ) {
    super(`The durable execution ${executionName} was already started with another input.`, options);
    this.name = new.target.name;
  }
}

/**
 * The run id of an asynchronous run started with an Idempotency-Key: `run_` and 32 hex digits of
 * SHA-256 over the caller (tenant, user), the key and the request fingerprint (as one JSON array, so no
 * two tuples meet). A retry of the same request by the same caller (also one that takes over a crashed
 * start) gets the same run, hence the same execution name; another user's equal key and body never do.
 * @example asyncRunId({ tenantId: "tenant_uk_01", userId: "usr_1" }, "order-42", fingerprint) // "run_3f…"
 */
export function asyncRunId(
  caller: Pick<SecurityContext, "tenantId" | "userId">,
  idempotencyKey: string,
  fingerprint: string,
): string {
  return `run_${sha256Hex(JSON.stringify([caller.tenantId, caller.userId, idempotencyKey, fingerprint])).slice(0, 32)}`;
}

/**
 * The durable execution name of a run: its run id. Lambda execution names are unique per account and
 * region, 1 to 64 characters of letters, digits, `-` and `_`; a run id (`run_<uuid>`, or
 * {@link asyncRunId}) is at most 40 such characters.
 */
export function executionNameFor(runId: string): string {
  return runId;
}
