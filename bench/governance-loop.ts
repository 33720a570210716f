/**
 * P1 with policies (docs/policies.md): the loop's overhead per cycle (bench/loop-overhead.ts's
 * method: wall − model-server time − tool time, per cycle) of boundloop deciding every tool call through
 * the policy decision service on DynamoDB Local, with the five-policy set of bench/governance.ts as
 * POLICIES ("on") and with no set at all ("off"): the same decision service, the same tenant-head reads
 * through the sets' per-container cache, so the ratio is what evaluating the set costs a cycle. A child
 * process each (bench/loop-child.ts), warmed up, then batches alternating, ratio of each round's medians.
 */

import { FIVE_POLICIES } from "./governance.js";
import { loopScript } from "./loop-child.js";
import { type LoopChild, startLoopChild } from "./loop-overhead.js";
import { FINAL_ANSWER } from "./scenario/tools.js";
import { median, round } from "./stats.js";

/** How many runs: warm-up per child, rounds, runs per batch. */
export interface PolicyLoopOptions {
  warmupRuns: number;
  rounds: number;
  runsPerRound: number;
}

/** Overhead per cycle (µs, median of the rounds' medians) on and off, and on ÷ off (median of the rounds' ratios). */
export interface PolicyLoopResult {
  onUs: number;
  offUs: number;
  ratio: number;
  rounds: number;
  runsPerRound: number;
  warmupRuns: number;
}

/**
 * Measures P1 with the five-policy set on ÷ off.
 * @throws Error when a run does not answer as scripted (3 model requests, 4 tool calls)
 */
export async function benchPolicyLoop(
  dynamoEndpoint: string,
  table: string,
  options: PolicyLoopOptions,
): Promise<PolicyLoopResult> {
  const script = loopScript();
  const cycles = script.length;
  const toolCalls = script.reduce((sum, reply) => sum + (reply.toolCalls?.length ?? 0), 0);
  const base = { BENCH_DYNAMO_ENDPOINT: dynamoEndpoint, BENCH_TABLE: table };
  const children: Record<"on" | "off", LoopChild> = {
    on: await startLoopChild("boundloop", { ...base, BENCH_POLICIES: FIVE_POLICIES }),
    off: await startLoopChild("boundloop", base),
  };
  const batch = async (child: LoopChild, runs: number): Promise<number> => {
    const samples = (await child.run(runs)).map((run) => {
      if (run.answer.trim() !== FINAL_ANSWER || run.modelRequests !== cycles || run.toolCalls !== toolCalls)
        throw new Error(`P1 with policies: ${JSON.stringify(run)}`);
      return ((run.wallMs - run.modelMs - run.toolMs) / cycles) * 1000;
    });
    return median(samples);
  };
  try {
    for (const child of Object.values(children)) await batch(child, options.warmupRuns);
    const on: number[] = [];
    const off: number[] = [];
    for (let n = 0; n < options.rounds; n++) {
      const order = n % 2 === 0 ? (["on", "off"] as const) : (["off", "on"] as const);
      for (const which of order) {
        const value = await batch(children[which], options.runsPerRound);
        (which === "on" ? on : off).push(value);
      }
    }
    return {
      onUs: round(median(on)),
      offUs: round(median(off)),
      ratio: round(median(on.map((value, n) => value / (off[n] as number))), 3),
      rounds: options.rounds,
      runsPerRound: options.runsPerRound,
      warmupRuns: options.warmupRuns,
    };
  } finally {
    for (const child of Object.values(children)) child.stop();
  }
}
