/**
 * An A2A message as a turn of the runs layer (shared/runs/turns.ts): the message id is the turn's key
 * (a repeated message id is the same task, never a second run), the context id the conversation (a
 * context the caller never started is refused: A2A contexts are the server's), and a message naming a
 * task continues that task's context.
 */
import { TaskNotFoundError } from "@a2a-js/sdk/errors";
import { type BegunTurn, beginTurn, findOwnRun } from "../runs/protocol-port.js";
import type { A2ACall } from "./handler.js";

/** What a SendMessage asks, read from its message (handler.ts `turnInputOf`). */
export interface TurnInput {
  prompt: string;
  messageId: string;
  contextId: string | undefined;
  taskId: string | undefined;
  prefersAsync: boolean;
}

/** The operation name of A2A turns: the namespace of their keys in the idempotency records. */
export const A2A_OPERATION = "A2A SendMessage";

/**
 * Begins the turn a message asks for. A durable start (`returnImmediately`) needs durable executions;
 * without them the run is synchronous.
 * @throws TaskNotFoundError for a `taskId` the caller has no task of; the turn's refusals
 */
export async function startTurn(call: A2ACall, input: TurnInput): Promise<BegunTurn> {
  let contextId = input.contextId;
  if (input.taskId) {
    const task = await findOwnRun(call.deps, call.security, input.taskId);
    if (!task) throw new TaskNotFoundError(`There is no task ${input.taskId}.`);
    contextId ??= task.run.conversationId;
  }
  return beginTurn(call.deps, {
    security: call.security,
    prompt: input.prompt,
    operation: A2A_OPERATION,
    scope: "a2a",
    key: input.messageId,
    conversationId: contextId,
    unknownConversation: "refuse",
    prefersAsync: input.prefersAsync && call.deps.executions !== undefined,
    lambdaRemainingMs: call.lambdaRemainingMs,
  });
}
