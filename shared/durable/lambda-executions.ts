import {
  DurableExecutionAlreadyStartedException,
  GetDurableExecutionCommand,
  InvokeCommand,
  LambdaClient,
  type LambdaClientConfig,
  ListDurableExecutionsByFunctionCommand,
  ResourceNotFoundException,
  SendDurableExecutionCallbackSuccessCommand,
  StopDurableExecutionCommand,
} from "@aws-sdk/client-lambda";
import {
  type CallbackRef,
  type DurableExecutions,
  type DurableRunPayload,
  ExecutionConflictError,
} from "./executions.js";

/**
 * {@link DurableExecutions} on AWS Lambda durable functions.
 * - start: `Invoke` with InvocationType `Event` on the runner's alias ARN (durable functions must be
 *   invoked by a qualified ARN) and `DurableExecutionName`; Lambda starts nothing for a name already
 *   started with the same payload, and answers DurableExecutionAlreadyStartedException for another payload
 * - stop: the execution's ARN is found by name with `ListDurableExecutionsByFunction` (the
 *   API never stores it), then `GetDurableExecution` and `StopDurableExecution` while it runs
 * - completeCallback: `SendDurableExecutionCallbackSuccess` with the callback id; a callback that is no
 *   longer waiting (ResourceNotFoundException, CallbackTimeoutException, or InvalidParameterValueException for one already
 *   completed) is "not_waiting"
 * IAM (infra/stack.ts): lambda:InvokeFunction on the alias; lambda:ListDurableExecutionsByFunction on the
 * function; lambda:StopDurableExecution, lambda:GetDurableExecution and
 * lambda:SendDurableExecutionCallbackSuccess on its executions.
 */
export class LambdaDurableExecutions implements DurableExecutions {
  /** The runner function's unqualified ARN (the alias ARN without its alias). */
  private readonly functionArn: string;

  /**
   * @param client a Lambda client (region of the runner)
   * @param aliasArn config RUNNER_FUNCTION_ARN, `arn:aws:lambda:<region>:<account>:function:<name>:<alias>`
   */
  constructor(
    private readonly client: LambdaClient,
    private readonly aliasArn: string,
  ) {
    this.functionArn = aliasArn.split(":").slice(0, 7).join(":");
  }

  async start(name: string, payload: DurableRunPayload): Promise<void> {
    try {
      await this.client.send(
        new InvokeCommand({
          FunctionName: this.aliasArn,
          InvocationType: "Event",
          DurableExecutionName: name,
          Payload: new TextEncoder().encode(JSON.stringify(payload)),
        }),
      );
    } catch (error) {
      if (error instanceof DurableExecutionAlreadyStartedException) {
        throw new ExecutionConflictError(name, { cause: error });
      }
      throw error;
    }
  }

  async stop(name: string): Promise<"stopped" | "not_running"> {
    const arn = await this.arnOf(name);
    if (!arn) return "not_running";
    const current = await this.client.send(new GetDurableExecutionCommand({ DurableExecutionArn: arn }));
    if (current.Status !== "RUNNING") return "not_running";
    try {
      await this.client.send(new StopDurableExecutionCommand({ DurableExecutionArn: arn }));
      return "stopped";
    } catch (error) {
      if (error instanceof ResourceNotFoundException) return "not_running";
      throw error;
    }
  }

  async completeCallback(callback: CallbackRef, result: string): Promise<"completed" | "not_waiting"> {
    try {
      await this.client.send(
        new SendDurableExecutionCallbackSuccessCommand({
          CallbackId: callback.callbackId,
          Result: new TextEncoder().encode(result),
        }),
      );
      return "completed";
    } catch (error) {
      const name = (error as Error).name;
      if (
        error instanceof ResourceNotFoundException ||
        name === "CallbackTimeoutException" ||
        name === "InvalidParameterValueException"
      ) {
        return "not_waiting";
      }
      throw error;
    }
  }

  /** The ARN of the execution named `name` (the newest, if the name was reused after its retention). */
  private async arnOf(name: string): Promise<string | undefined> {
    const listed = await this.client.send(
      new ListDurableExecutionsByFunctionCommand({
        FunctionName: this.functionArn,
        DurableExecutionName: name,
        MaxItems: 1,
      }),
    );
    return listed.DurableExecutions?.[0]?.DurableExecutionArn;
  }
}

/**
 * The port on the runner's alias ARN with its own Lambda client in the alias's region. The API loads
 * this module with a dynamic `import()` (shared/deps.ts lambdaExecutions): the client is built here, from
 * named imports, so the bundle keeps only the commands above (a dynamically imported SDK namespace would
 * keep all of them, their schemas and error classes: ~100 kB).
 * @param aliasArn config RUNNER_FUNCTION_ARN
 * @param clientConfig extra client settings (tests: a stand-in endpoint and credentials)
 */
export function createLambdaDurableExecutions(
  aliasArn: string,
  clientConfig: Omit<LambdaClientConfig, "region"> = {},
): LambdaDurableExecutions {
  return new LambdaDurableExecutions(
    new LambdaClient({ ...clientConfig, region: aliasArn.split(":")[3] }),
    aliasArn,
  );
}
