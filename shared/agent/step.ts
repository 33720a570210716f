/**
 * What a step is, typed: one model call of a cycle, one turn of tool calls, the tool-less summary call at
 * the cycle limit, the model's second try at an answer whose numbers were not grounded (ANSWER_GROUNDING
 * reask), one approved call run after its decision, or the load of a continuation's history.
 * Readers (run events, traces) switch on `kind` and read its fields; `name` is the stable name a
 * checkpointing runner stores the result under, built once here and never parsed back.
 */
export type StepDescriptor =
  | { kind: "model"; cycle: number; name: string }
  | { kind: "tools"; cycle: number; name: string; calls?: readonly StepToolCall[] | undefined }
  | { kind: "summary"; name: string }
  | { kind: "grounding"; name: string }
  | {
      kind: "approved";
      cycle: number;
      toolCallId: string;
      name: string;
      calls?: readonly StepToolCall[] | undefined;
    }
  | { kind: "history"; name: string };

/**
 * A call a tools or approved step runs that no model reply of its run asked for (an MCP `tools/call`'s,
 * and its approved repeat's): its id, tool name and arguments as JSON text. Observers announce it before
 * the step as they announce a reply's calls.
 */
export interface StepToolCall {
  id: string;
  name: string;
  arguments: string;
}

/**
 * The descriptors of a run's steps, with their stable names: `cycle-<n>:model`, `cycle-<n>:tools` (with
 * the calls it runs when no model reply asked for them),
 * `summary:model`, `grounding:model`, `cycle-<n>:approved:<toolCallId>` (with its call when no tools
 * step of the run announced it), `history:load` (the names a durable execution's
 * checkpoints have always had).
 */
export const steps = {
  model: (cycle: number): StepDescriptor => ({ kind: "model", cycle, name: `cycle-${cycle}:model` }),
  tools: (cycle: number, calls?: readonly StepToolCall[]): StepDescriptor => ({
    kind: "tools",
    cycle,
    name: `cycle-${cycle}:tools`,
    ...(calls ? { calls } : {}),
  }),
  summary: (): StepDescriptor => ({ kind: "summary", name: "summary:model" }),
  grounding: (): StepDescriptor => ({ kind: "grounding", name: "grounding:model" }),
  approved: (cycle: number, toolCallId: string, calls?: readonly StepToolCall[]): StepDescriptor => ({
    kind: "approved",
    cycle,
    toolCallId,
    name: `cycle-${cycle}:approved:${toolCallId}`,
    ...(calls ? { calls } : {}),
  }),
  history: (): StepDescriptor => ({ kind: "history", name: "history:load" }),
} as const;

/**
 * Runs one unit of a run's work (one model call, or one turn of tool calls, …; see {@link StepDescriptor})
 * and returns its result. The default (`runInline`) just calls `fn`; the durable runner passes the durable
 * context's `ctx.step` under `step.name`, which checkpoints the result and, on replay, returns the
 * checkpoint without calling `fn`.
 * Rules for callers: the descriptor is stable across replays (built from the cycle number); the result is
 * plain JSON (no class instances, no undefined-only semantics, no functions); `fn` changes no run state
 * except through its return value; every clock read that decides a branch (deadline checks) happens
 * inside a step and is reported in its result.
 */
export type StepRunner = <T>(step: StepDescriptor, fn: () => Promise<T>) => Promise<T>;

/** The default {@link StepRunner}: calls `fn` and returns its result (no checkpoint). */
export const runInline: StepRunner = (_step, fn) => fn();
