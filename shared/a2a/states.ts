/**
 * Every status a run can have as the A2A task state it is, with the sentence that says why
 * (docs/protocols.md, "Task states"). One line per status: the table is typed by the record's status
 * union, so a status added to the runs layer (a quota's, a policy's) does not compile until it has its line
 * here. The sentence comes from the run itself (its `reason`, its answer, its limits), never a generic
 * "failed".
 */
import { TaskState } from "@a2a-js/sdk";
import type { AgentRunShapes } from "../runs/run-shapes.js";
import type { RunRecordStatus } from "../store/runs.js";

/** What a task's state is read from: the run record, and the approvals it waits for. */
export interface StateInput {
  status: string;
  answer: string | null;
  reason: string | null;
  cycles: number | null;
  cyclesRecorded: number;
  limits: { maxCycles: number; timeoutMs: number };
  pendingApprovals?: ReadonlyArray<{ approvalId: string; toolName: string; preview: unknown }> | undefined;
}

/** One line of the table: the A2A state and the sentence saying why. */
interface StateLine {
  state: TaskState;
  why(run: StateInput): string;
}

/** A status whose run is still going: the cycle it is in. */
const working = (run: StateInput) =>
  `Working: cycle ${Math.min(run.cyclesRecorded + 1, run.limits.maxCycles)} of at most ${run.limits.maxCycles}.`;

/** The run's own sentence on why it stopped, after what kind of stop it was. */
const stopped = (what: string) => (run: StateInput) =>
  `${what}: ${run.reason ?? "no reason was recorded"}${run.answer ? ` The model's last answer: ${run.answer}` : ""}`;

/**
 * The table: every run record status (the loop's typed outcomes, and `running`, `awaiting_approval`,
 * `awaiting_quota`, `failed`, `cancelled`, `abandoned`) to one A2A state. An abandoned run (a synchronous
 * run killed mid-run, shared/runs/abandoned.ts) is `failed`, never `working` again. A run stopped by a quota mid-way is `failed`
 * (A2A's `rejected` is for a task the agent declined to do; this one started and has a partial
 * transcript); a durable run waiting for budget is `working` (no client input can end the wait, so
 * not `input-required`), its message saying it waits.
 */
export const TASK_STATES = {
  running: { state: TaskState.TASK_STATE_WORKING, why: working },
  awaiting_approval: {
    state: TaskState.TASK_STATE_INPUT_REQUIRED,
    why: (run) => {
      const waiting = (run.pendingApprovals ?? []).map(
        (approval) => `${approval.toolName} (${approval.approvalId})`,
      );
      return `Waiting for a person's approval${waiting.length > 0 ? ` of ${waiting.join(", ")}` : ""}: an approver of the tenant (billing:approve, not the requester) decides with POST /v1/runs/{runId}/approvals/{approvalId}; the task goes on by itself after the decision.`;
    },
  },
  completed: { state: TaskState.TASK_STATE_COMPLETED, why: (run) => run.answer ?? "Completed." },
  max_cycles_exceeded: { state: TaskState.TASK_STATE_FAILED, why: stopped("Stopped at its cycle limit") },
  deadline_exceeded: { state: TaskState.TASK_STATE_FAILED, why: stopped("Stopped at its deadline") },
  budget_exceeded: { state: TaskState.TASK_STATE_FAILED, why: stopped("Stopped at its budget") },
  permission_denied: {
    state: TaskState.TASK_STATE_REJECTED,
    why: stopped("Refused, a permission is missing"),
  },
  loop_detected: {
    state: TaskState.TASK_STATE_FAILED,
    why: stopped("Stopped, the model repeated a failing call"),
  },
  model_refused: { state: TaskState.TASK_STATE_REJECTED, why: stopped("Refused by the model") },
  model_output_truncated: {
    state: TaskState.TASK_STATE_FAILED,
    why: stopped("Stopped, the model's output was cut"),
  },
  model_error: {
    state: TaskState.TASK_STATE_FAILED,
    why: stopped("Stopped, the model provider kept failing"),
  },
  context_length_exceeded: {
    state: TaskState.TASK_STATE_FAILED,
    why: stopped("Stopped, the conversation no longer fits the model's context; start a new context"),
  },
  answer_ungrounded: {
    state: TaskState.TASK_STATE_FAILED,
    why: stopped("The answer was withheld, it held numbers no tool result gave"),
  },
  quota_exceeded: {
    state: TaskState.TASK_STATE_FAILED,
    why: stopped("Stopped, a quota could not cover the next model call"),
  },
  awaiting_quota: {
    state: TaskState.TASK_STATE_WORKING,
    why: () =>
      "Waiting for budget: a quota cannot cover the next model call yet; the task goes on by itself when budget frees up or the quota's window turns, and stops (failed, quota_exceeded) after the deploy's longest wait (docs/quotas.md).",
  },
  failed: { state: TaskState.TASK_STATE_FAILED, why: stopped("The server failed") },
  cancelled: { state: TaskState.TASK_STATE_CANCELED, why: stopped("Cancelled") },
  abandoned: { state: TaskState.TASK_STATE_FAILED, why: stopped("Abandoned") },
} satisfies Record<RunRecordStatus<AgentRunShapes>, StateLine>;

/** The A2A state of a run and why, from {@link TASK_STATES} (a status it does not know is `failed`, said so). */
export function taskStateOf(run: StateInput): { state: TaskState; why: string } {
  const line = (TASK_STATES as Record<string, StateLine>)[run.status];
  if (!line) return { state: TaskState.TASK_STATE_FAILED, why: `The run ended with status ${run.status}.` };
  return { state: line.state, why: line.why(run) };
}

/** Whether a state ends the task (A2A: completed, failed, canceled, rejected). */
export function isTerminal(state: TaskState): boolean {
  return (
    state === TaskState.TASK_STATE_COMPLETED ||
    state === TaskState.TASK_STATE_FAILED ||
    state === TaskState.TASK_STATE_CANCELED ||
    state === TaskState.TASK_STATE_REJECTED
  );
}
