/**
 * Runs one named unit of a run's work (one model call, or one turn of tool calls) and returns its result.
 * The default (`runInline`) just calls `fn`; the durable runner passes the durable context's `ctx.step`,
 * which checkpoints the result and, on replay, returns the checkpoint without calling `fn`.
 * Rules for callers: `name` is stable across replays (built from the cycle number, e.g. `cycle-3:model`,
 * `cycle-3:tools`, `summary:model`); the result is plain JSON (no class instances, no undefined-only
 * semantics, no functions); `fn` changes no run state except through its return value; every clock read
 * that decides a branch (deadline checks) happens inside a step and is reported in its result.
 */
export type StepRunner = <T>(name: string, fn: () => Promise<T>) => Promise<T>;

/** The default {@link StepRunner}: calls `fn` and returns its result (no checkpoint). */
export const runInline: StepRunner = (_name, fn) => fn();
