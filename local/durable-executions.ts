import type { DurableLambdaHandler } from "@aws/durable-execution-sdk-js";
import { LocalDurableTestRunner, type TestResult } from "@aws/durable-execution-sdk-js-testing";
import { canonicalJson } from "../shared/agent/idempotency-key.js";
import {
  type CallbackRef,
  type DurableExecutions,
  type DurableRunPayload,
  ExecutionConflictError,
  type ExecutionStatus,
} from "../shared/durable/executions.js";
import { type DurableRunOptions, RunStoppedError } from "../shared/durable/runner.js";

/** One execution the local runner started: its name, input, status and (once ended) the SDK's result. */
export interface LocalExecution {
  name: string;
  payload: DurableRunPayload;
  status: ExecutionStatus;
  /** Settles when the execution has ended (never rejects). */
  done: Promise<void>;
  /** The testing SDK's result (operations, invocations), once the execution ended; undefined if stopped early. */
  result: TestResult<unknown> | undefined;
}

/**
 * The testing SDK's checkpoint server is one worker thread per process
 * (`LocalDurableTestRunner.setupTestEnvironment`); this guards starting it once.
 */
let environment: Promise<void> | undefined;

/**
 * {@link DurableExecutions} on the durable execution SDK's own offline runner
 * (`LocalDurableTestRunner` of @aws/durable-execution-sdk-js-testing, in-process, no network): the real
 * `withDurableExecution` runner with real checkpoints, replay and step retries, for tests, `npm run dev`
 * and `npm start -- --async`. Real timers (no time skipping), so retries wait their real delays.
 * - start: a repeated name with the same payload (RFC 8785 canonical JSON) starts nothing, another payload
 *   throws {@link ExecutionConflictError}, as Lambda does
 * - stop: the testing SDK has no StopDurableExecution, so the execution's `stopSignal` is aborted: its
 *   step in flight rejects, and the runner ends without writing anything more (shared/durable/runner.ts).
 *   An execution suspended in `waitForCallback` (a run awaiting approval) has no invocation to abort:
 *   its waiting callbacks are failed, so the SDK invokes it again, and that invocation, its stop signal
 *   aborted, ends at once (see {@link failWaitingCallbacks})
 * - completeCallback: the testing SDK sends callbacks through an operation handle
 *   (`runner.getOperation(waitName).sendCallbackSuccess`, its SendDurableExecutionCallbackSuccess); the
 *   handle's callback id must be the one given, and a callback no longer waiting is "not_waiting"
 * @param handlerFor builds the runner for one execution from its options (the stop signal), e.g.
 *   `(options) => createDurableRunHandler(runnerDeps, options)`
 */
export class LocalDurableExecutions implements DurableExecutions {
  private readonly executions = new Map<
    string,
    LocalExecution & { controller: AbortController; runner: LocalDurableTestRunner }
  >();

  constructor(private readonly handlerFor: (options: DurableRunOptions) => DurableLambdaHandler) {}

  async start(name: string, payload: DurableRunPayload): Promise<void> {
    const existing = this.executions.get(name);
    if (existing) {
      if (canonicalJson(existing.payload) !== canonicalJson(payload)) throw new ExecutionConflictError(name);
      return;
    }
    environment ??= LocalDurableTestRunner.setupTestEnvironment({ skipTime: false });
    await environment;
    const controller = new AbortController();
    const runner = new LocalDurableTestRunner({
      handlerFunction: this.handlerFor({ stopSignal: controller.signal }),
    });
    const execution: LocalExecution & { controller: AbortController; runner: LocalDurableTestRunner } = {
      name,
      payload,
      status: "RUNNING",
      result: undefined,
      controller,
      runner,
      done: Promise.resolve(),
    };
    execution.done = runner.run({ payload }).then(
      (result) => {
        execution.result = result;
        if (execution.status === "RUNNING") {
          execution.status = result.getStatus() === "SUCCEEDED" ? "SUCCEEDED" : "FAILED";
        }
      },
      () => {
        if (execution.status === "RUNNING") execution.status = "FAILED";
      },
    );
    this.executions.set(name, execution);
  }

  async stop(name: string): Promise<"stopped" | "not_running"> {
    const execution = this.executions.get(name);
    if (execution?.status !== "RUNNING") return "not_running";
    execution.status = "STOPPED";
    execution.controller.abort(new RunStoppedError());
    await failWaitingCallbacks(execution.runner);
    return "stopped";
  }

  async completeCallback(callback: CallbackRef, result: string): Promise<"completed" | "not_waiting"> {
    const execution = this.executions.get(callback.executionName);
    if (execution?.status !== "RUNNING") return "not_waiting";
    const operation = execution.runner.getOperation(callback.waitName);
    if (operation.getStatus() !== "STARTED") return "not_waiting";
    if (operation.getCallbackDetails()?.callbackId !== callback.callbackId) {
      throw new Error(`The wait ${callback.waitName} of ${callback.executionName} has another callback id.`);
    }
    try {
      await operation.sendCallbackSuccess(result);
      return "completed";
    } catch {
      return "not_waiting";
    }
  }

  /** The execution named `name`, for tests and scripts (how it ended, its operations). */
  get(name: string): LocalExecution | undefined {
    return this.executions.get(name);
  }

  /** Names of every execution started, in start order. */
  names(): string[] {
    return [...this.executions.keys()];
  }

  /** Resolves when every execution started so far has ended. */
  async settled(): Promise<void> {
    await Promise.all([...this.executions.values()].map((execution) => execution.done));
  }

  /**
   * Stops the testing SDK's checkpoint server (its worker thread) so the process can exit; running
   * executions are stopped first. Safe to call when nothing was started.
   */
  async shutdown(): Promise<void> {
    for (const name of this.names()) await this.stop(name);
    await this.settled();
    if (environment) {
      environment = undefined;
      await LocalDurableTestRunner.teardownTestEnvironment();
    }
  }
}

/**
 * Fails every `waitForCallback` of `runner`'s execution that is still waiting (status STARTED), through
 * the testing SDK's operation handles (`sendCallbackFailure`, its SendDurableExecutionCallbackFailure).
 * The SDK then invokes the suspended execution again; the runner, its stop signal aborted, rethrows at
 * the wait and ends the run as stopped (shared/durable/runner.ts), so the execution ends instead of
 * waiting out the callback's timeout (APPROVAL_TIMEOUT_SECONDS, 24 h by default). Operations are read by
 * execution-order index until there is none.
 */
async function failWaitingCallbacks(runner: LocalDurableTestRunner): Promise<void> {
  for (let index = 0; ; index += 1) {
    const operation = runner.getOperationByIndex(index);
    if (operation.getOperationData() === undefined) return;
    if (!operation.isWaitForCallback() || operation.getStatus() !== "STARTED") continue;
    await operation
      .sendCallbackFailure({ ErrorType: "RunStoppedError", ErrorMessage: "The durable run was stopped." })
      .catch(() => undefined); // completed or timed out meanwhile: nothing waits any more
  }
}
