/**
 * A run as an A2A task (docs/a2a.md): the task id is the run id, the context id the run's conversation,
 * the status the run status's line of the state table (states.ts), and the artifacts the backend's own
 * results: one `data` artifact per tool call (its structured tool result, exactly as GET /v1/runs/{runId}
 * gives it) and the final answer as a `text` artifact. The prompt is never stored, so the history holds
 * the agent's status messages only.
 */
import { type Artifact, type Message, type Part, Role, type Task, type TaskStatus } from "@a2a-js/sdk";
import type { RunView } from "../runs/queries.js";
import { taskStateOf } from "./states.js";

/** A text part (media type text/plain). */
export function textPart(text: string): Part {
  return {
    content: { $case: "text", value: text },
    metadata: undefined,
    filename: "",
    mediaType: "text/plain",
  };
}

/** A structured data part (media type application/json). */
export function dataPart(value: unknown): Part {
  return {
    content: { $case: "data", value },
    metadata: undefined,
    filename: "",
    mediaType: "application/json",
  };
}

/** A message of the agent about a task: one text part. */
export function agentMessage(taskId: string, contextId: string, text: string, messageId: string): Message {
  return {
    messageId,
    contextId,
    taskId,
    role: Role.ROLE_AGENT,
    parts: [textPart(text)],
    metadata: undefined,
    extensions: [],
    referenceTaskIds: [],
  };
}

/** The task's status now: its state, the sentence saying why as the agent's message, and when (ISO 8601). */
export function taskStatusOf(found: RunView): TaskStatus {
  const { run } = found;
  const { state, why } = taskStateOf({ ...run, pendingApprovals: found.pendingApprovals ?? [] });
  const messageId = `${run.runId}:status:${run.status}:${run.cyclesRecorded}`;
  return {
    state,
    message: agentMessage(run.runId, run.conversationId, why, messageId),
    timestamp: run.finishedAt ?? run.updatedAt,
  };
}

/**
 * The task's artifacts: each tool call's result (`tool-result:<toolCallId>`, named by the tool, the
 * result as a data part) in the order the run made them, then the answer (`answer`, a text part) once
 * the run has one.
 */
export function artifactsOf(found: RunView): Artifact[] {
  const artifacts: Artifact[] = [];
  for (const step of found.steps) {
    for (const call of step.toolCalls) {
      artifacts.push({
        artifactId: `tool-result:${call.id}`,
        name: call.name,
        description: `The backend's result of ${call.name} (cycle ${step.cycle}): ${call.result.status}.`,
        parts: [dataPart(call.result)],
        metadata: { cycle: step.cycle, toolCallId: call.id, status: call.result.status },
        extensions: [],
      });
    }
  }
  if (found.run.answer !== null) {
    artifacts.push({
      artifactId: "answer",
      name: "answer",
      description: `The run's answer (status ${found.run.status}).`,
      parts: [textPart(found.run.answer)],
      metadata: { grounding: found.run.grounding ?? null },
      extensions: [],
    });
  }
  return artifacts;
}

/**
 * The run as a task: status, artifacts (unless `withArtifacts` is false), and `metadata.boundloop`: the
 * run's own status, cycles, tokens and the run it continued, so a client can tell the bounded outcomes
 * apart beyond the A2A state.
 */
export function taskOf(found: RunView, withArtifacts = true): Task {
  const { run } = found;
  const status = taskStatusOf(found);
  return {
    id: run.runId,
    contextId: run.conversationId,
    status,
    artifacts: withArtifacts ? artifactsOf(found) : [],
    history: status.message ? [status.message] : [],
    metadata: {
      boundloop: {
        status: run.status,
        cycles: run.cycles ?? run.cyclesRecorded,
        usage: run.usage,
        previousRunId: run.previousRunId,
        pendingApprovals: (found.pendingApprovals ?? []).map((approval) => ({
          approvalId: approval.approvalId,
          toolName: approval.toolName,
          preview: approval.preview,
        })),
      },
    },
  };
}
