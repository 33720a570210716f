import { TaskState } from "@a2a-js/sdk";
import { describe, expect, it } from "vitest";
import { isTerminal, TASK_STATES, taskStateOf } from "../shared/a2a/states.js";
import { RUN_STATUSES } from "../shared/agent/run-status.js";
import { RECORD_STATUSES } from "../shared/store/run-record-schema.js";

const run = (status: string, extra: Partial<Parameters<typeof taskStateOf>[0]> = {}) => ({
  status,
  answer: null,
  reason: "the run's own reason",
  cycles: 2,
  cyclesRecorded: 2,
  limits: { maxCycles: 5, timeoutMs: 25_000 },
  ...extra,
});

describe("A2A task states of run statuses (docs/a2a.md)", () => {
  it("maps every run status to one state, with the run's reason in the message, never a generic failure", () => {
    const expected: Record<string, TaskState> = {
      running: TaskState.TASK_STATE_WORKING,
      awaiting_approval: TaskState.TASK_STATE_INPUT_REQUIRED,
      completed: TaskState.TASK_STATE_COMPLETED,
      max_cycles_exceeded: TaskState.TASK_STATE_FAILED,
      deadline_exceeded: TaskState.TASK_STATE_FAILED,
      budget_exceeded: TaskState.TASK_STATE_FAILED,
      permission_denied: TaskState.TASK_STATE_REJECTED,
      loop_detected: TaskState.TASK_STATE_FAILED,
      model_refused: TaskState.TASK_STATE_REJECTED,
      model_output_truncated: TaskState.TASK_STATE_FAILED,
      model_error: TaskState.TASK_STATE_FAILED,
      context_length_exceeded: TaskState.TASK_STATE_FAILED,
      answer_ungrounded: TaskState.TASK_STATE_FAILED,
      quota_exceeded: TaskState.TASK_STATE_FAILED,
      awaiting_quota: TaskState.TASK_STATE_WORKING,
      failed: TaskState.TASK_STATE_FAILED,
      cancelled: TaskState.TASK_STATE_CANCELED,
      abandoned: TaskState.TASK_STATE_FAILED,
    };
    // Over the whole status list the runs layer has: a status added there fails here until it is mapped.
    const every = [...RECORD_STATUSES, ...RUN_STATUSES];
    expect(Object.keys(expected).sort()).toEqual([...every].sort());
    expect(Object.keys(TASK_STATES).sort()).toEqual([...every].sort());
    for (const [status, state] of Object.entries(expected)) {
      const mapped = taskStateOf(run(status));
      expect(mapped.state, status).toBe(state);
      if (isTerminal(state) && status !== "completed")
        expect(mapped.why, status).toContain("the run's own reason");
    }
  });

  it("says which approvals a paused task waits for and who decides; a completed task's message is its answer", () => {
    const paused = taskStateOf(
      run("awaiting_approval", {
        pendingApprovals: [{ approvalId: "apr_1", toolName: "recordInvoice", preview: {} }],
      }),
    );
    expect(paused.why).toContain("recordInvoice (apr_1)");
    expect(paused.why).toContain("billing:approve");
    expect(taskStateOf(run("completed", { answer: "Tax is 300.00 GBP." })).why).toBe("Tax is 300.00 GBP.");
    expect(taskStateOf(run("running", { cyclesRecorded: 1 })).why).toBe("Working: cycle 2 of at most 5.");
    expect(taskStateOf(run("awaiting_quota")).why).toContain("Waiting for budget");
    expect(taskStateOf(run("some_new_status")).state).toBe(TaskState.TASK_STATE_FAILED);
  });
});
