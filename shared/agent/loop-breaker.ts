import { canonicalJson } from "./idempotency-key.js";
import type { ToolResult } from "./result.js";
import type { TurnCall } from "./tool-turn.js";
import type { RunOutcomeDetails } from "./types.js";

/** The repeated failure that ends a run `loop_detected` (see {@link LoopBreaker}). */
export type DetectedLoop = NonNullable<RunOutcomeDetails["loop"]>;

/**
 * The loop breaker of one run. Counts each failed call by tool + canonical arguments + error code. At
 * `threshold` (config LOOP_BREAKER_THRESHOLD) identical failures the tool result gets a final hint
 * (message and `details.loopWarning`); the next identical failure is returned as the loop that ends the
 * run. Calls that never started and deadline stops are not counted. It reads only the turn's calls and
 * results, so replayed results take the same branches.
 */
export class LoopBreaker {
  /** Identical failures so far, by tool + canonical arguments + error code. */
  private readonly failures = new Map<string, number>();

  constructor(private readonly threshold: number) {}

  /**
   * Counts the failures of one settled turn. Returns the results (a hinted result is a copy; the inputs
   * are not changed) and the loop that ends the run, if any.
   */
  check(calls: TurnCall[], results: ToolResult[]): { results: ToolResult[]; loop: DetectedLoop | undefined } {
    let loop: DetectedLoop | undefined;
    const checked = results.map((result, index) => {
      const call = calls[index];
      const error = result.error;
      if (!call || !error || result.status === "success" || error.details.started === false) return result;
      if (error.code === "DEADLINE_EXCEEDED") return result;
      const args = canonicalArguments(call.arguments);
      const key = canonicalJson([call.name, args, error.code]);
      const failures = (this.failures.get(key) ?? 0) + 1;
      this.failures.set(key, failures);
      if (failures === this.threshold) {
        return {
          ...result,
          error: {
            ...error,
            message: `${error.message} This exact call has now failed ${failures} times with ${error.code}. Do not repeat it unchanged: the next identical failure ends the run.`,
            details: { ...error.details, loopWarning: { failures, threshold: this.threshold } },
          },
        };
      }
      if (failures > this.threshold) {
        loop ??= { toolName: call.name, arguments: args, errorCode: error.code, failures, hinted: true };
      }
      return result;
    });
    return { results: checked, loop };
  }
}

/** Canonical form of raw tool arguments (JCS when they are JSON, the raw text otherwise). */
function canonicalArguments(raw: string): string {
  try {
    return canonicalJson(JSON.parse(raw));
  } catch {
    return raw;
  }
}
