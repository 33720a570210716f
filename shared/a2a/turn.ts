/**
 * An A2A message as a turn of the runs layer (shared/runs/turns.ts): the message id is the turn's key
 * (a repeated message id is the same task, never a second run), the context id the conversation (a
 * context the caller never started is refused: A2A contexts are the server's), and a message naming a
 * task continues that task's context.
 */
import { UnsupportedOperationError } from "@a2a-js/sdk/errors";
import { DomainError } from "../domain-errors.js";
import { PROTOCOL_KEY_SCOPES } from "../runs/exactly-once.js";
import { type BegunTurn, beginTurn } from "../runs/protocol-port.js";
import { readRun } from "../runs/queries.js";
import { UNFINISHED_STATUSES } from "../store/run-records.js";
import type { A2ACall } from "./call.js";

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
 * @throws DomainError NOT_FOUND for a `taskId` the caller may not see (a task of a conversation that is
 *   not the caller's is refused by the turn: its context is unknown to the caller); INVALID_REQUEST
 *   (-32602) for a `contextId` that is not that task's; UnsupportedOperationError (-32004, `code:
 *   RUN_NOT_RUNNING`) for a task that has ended; the turn's refusals
 */
export async function startTurn(call: A2ACall, input: TurnInput): Promise<BegunTurn> {
  let contextId = input.contextId;
  if (input.taskId) {
    const task = await readRun(call.deps, call.security, input.taskId);
    // A2A 1.0 §3.4.3: agents MUST reject a contextId other than the referenced task's; going on in either
    // would continue a conversation the client did not mean.
    if (contextId !== undefined && contextId !== task.run.conversationId) {
      throw new DomainError(
        "INVALID_REQUEST",
        `The message's contextId is not the context of its task ${input.taskId}; send the task's own contextId, or none.`,
        { facts: { field: "message.contextId", taskId: input.taskId } },
      );
    }
    // A2A 1.0 §3.1.1: a task in a terminal state accepts no further message (UnsupportedOperationError);
    // the client goes on in its context, without the task id. One still going refuses a turn anyway.
    if (isEnded(task.run.status)) {
      throw new UnsupportedOperationError({
        message: `The task ${input.taskId} has ended (${task.run.status}) and takes no more messages; send the message with its contextId and no taskId.`,
        metadata: { code: "RUN_NOT_RUNNING", runId: input.taskId, runStatus: task.run.status },
      });
    }
    contextId ??= task.run.conversationId;
  }
  return beginTurn(call.deps, {
    security: call.security,
    prompt: input.prompt,
    operation: A2A_OPERATION,
    scope: PROTOCOL_KEY_SCOPES.a2a,
    key: input.messageId,
    keyName: "message id",
    conversationId: contextId,
    unknownConversation: "refuse",
    prefersAsync: input.prefersAsync && call.deps.executions !== undefined,
    lambdaRemainingMs: call.lambdaRemainingMs,
  });
}

/** Whether a run status is final (nothing more will happen to it: none of a going run's statuses). */
export function isEnded(status: string): boolean {
  return !UNFINISHED_STATUSES.includes(status);
}
