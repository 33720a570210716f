/**
 * A run's events as an A2A stream (SendStreamingMessage, SubscribeToTask): the task first, then one
 * `statusUpdate` per run event (state `working`, or `input-required` when a call waits for approval; the
 * event itself in `metadata.event`, its sequence in `metadata.seq`, which serve.ts writes as the SSE
 * `id` so a client resumes with Last-Event-ID), and at the run's end its artifacts (tool results, the
 * answer) and the final status. The stream ends there, or when its time is up (STREAM_MAX_SECONDS, the
 * Lambda's remaining time): the client then resubscribes.
 */
import { type StreamResponse, type Task, TaskState } from "@a2a-js/sdk";
import type { RunEvent } from "../runs/events.js";
import { type FollowTarget, followTurn } from "../runs/protocol-port.js";
import { readRun } from "../runs/queries.js";
import type { A2ACall } from "./call.js";
import { agentMessage, taskOf, taskStatusOf } from "./tasks.js";

/**
 * The stream of one task (see the module comment). A refusal of a turn before its run started is thrown
 * before anything is yielded, so the client gets it as the JSON-RPC error of its request. With no event
 * after `target.after`, the stream is the task alone.
 * @throws DomainError NOT_FOUND when the run never came to be; the turn's refusal (a DomainError, both
 *   mapped by the caller)
 */
export async function* streamTask(
  call: A2ACall,
  target: Omit<FollowTarget, "endsAt">,
): AsyncGenerator<StreamResponse> {
  let contextId: string | undefined;
  for await (const event of followTurn(call.deps, call.security, { ...target, endsAt: call.stream.endsAt })) {
    if (contextId === undefined) {
      const task = await firstTask(call, target.runId);
      contextId = task.contextId;
      yield { payload: { $case: "task", value: task } };
    }
    if (event.type === "run.finished") {
      yield* finalUpdates(call, target.runId, event);
      return;
    }
    yield statusUpdate(event, contextId);
  }
  // No event after `after`: the client saw the last one (a resubscribe with its Last-Event-ID) or the
  // stream's time ran out first. The task as it stands says where it is; a run that never came to be
  // is the caller's NOT_FOUND (readRun).
  if (contextId === undefined)
    yield { payload: { $case: "task", value: await firstTask(call, target.runId) } };
}

/** The task as it is when its first event comes. */
async function firstTask(call: A2ACall, runId: string): Promise<Task> {
  return taskOf(await readRun(call.deps, call.security, runId));
}

/** One run event as a `working` (or `input-required`) status update carrying the event. */
function statusUpdate(event: RunEvent, contextId: string): StreamResponse {
  const state =
    event.type === "approval.requested" ? TaskState.TASK_STATE_INPUT_REQUIRED : TaskState.TASK_STATE_WORKING;
  return {
    payload: {
      $case: "statusUpdate",
      value: {
        taskId: event.runId,
        contextId,
        status: {
          state,
          message: agentMessage(event.runId, contextId, describe(event), `${event.runId}:event:${event.seq}`),
          timestamp: event.at,
        },
        metadata: { seq: event.seq, event },
      },
    },
  };
}

/** The run's artifacts, then its final status (the state table's), both tagged with the last sequence. */
async function* finalUpdates(call: A2ACall, runId: string, last: RunEvent): AsyncGenerator<StreamResponse> {
  const found = await readRun(call.deps, call.security, runId);
  const task = taskOf(found);
  for (const artifact of task.artifacts) {
    yield {
      payload: {
        $case: "artifactUpdate",
        value: {
          taskId: runId,
          contextId: task.contextId,
          artifact,
          append: false,
          lastChunk: true,
          metadata: { seq: last.seq },
        },
      },
    };
  }
  yield {
    payload: {
      $case: "statusUpdate",
      value: {
        taskId: runId,
        contextId: task.contextId,
        status: taskStatusOf(found),
        metadata: { seq: last.seq, event: last, final: true },
      },
    },
  };
}

/** A sentence for a run event (the status message of its update). */
function describe(event: RunEvent): string {
  switch (event.type) {
    case "run.started":
      return `Started: at most ${event.limits.maxCycles} cycles.`;
    case "model.call.finished":
      return `Cycle ${event.cycle}: the model answered (${event.finishReason ?? "failed"}).`;
    case "tool.call.started":
      return `Cycle ${event.cycle}: calling ${event.name}.`;
    case "tool.call.finished":
      return `Cycle ${event.cycle}: ${event.name} ${event.status}${event.errorCode ? ` (${event.errorCode})` : ""}.`;
    case "approval.requested":
      return `Waiting for a person's approval of ${event.toolName} (${event.approvalId}).`;
    case "approval.decided":
      return `Approval ${event.approvalId} ${event.decision}.`;
    case "approval.expired":
      return `Approval ${event.approvalId} expired.`;
    case "answer.ungrounded":
      return "The answer held numbers no tool result gave.";
    default:
      return `Finished: ${event.status}.`;
  }
}
