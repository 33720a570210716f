/**
 * P1 with governance (docs/policies.md, docs/quotas.md): the loop's overhead per cycle (bench/loop-overhead.ts's
 * method: wall − model-server time − tool time, per cycle) of boundloop on DynamoDB Local, a child process
 * per variant (bench/loop-child.ts), warmed up, then batches alternating, ratio of each round's medians.
 * - policies: every tool call decided by the policy decision service, the five-policy set of
 *   bench/governance.ts as POLICIES ("on") or no set ("off"): the same service and tenant-head reads
 *   through the sets' per-container cache, so the ratio is what evaluating the set costs a cycle.
 * - quotas: every quota limit of bench/governance.ts set ("on": admitted at the door holding the run's
 *   first hold, budgeted around every model call, finished after) or quotas off, both with the policy
 *   service and no set. The loop's figure leaves out the run's start and end (its record's first write
 *   and its outcome's, and with quotas the admission before the loop and the budget's finish after it, as
 *   in the API); the run's figure with them is reported beside it.
 * Both variants of both pairs write each run's record at its start and end (bench/scenario/boundloop.ts),
 * as every deployed run does.
 */

import { FIVE_POLICIES, QUOTA_LIMITS } from "./governance.js";
import { type LoopChildRun, loopScript } from "./loop-child.js";
import { interleavedWarmUp, type LoopChild, startLoopChild } from "./loop-overhead.js";
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
 * P1 with quotas: the loop's figures ({@link PolicyLoopResult}) and the whole run's with its start and end
 * (`door*`: the record's writes, with quotas admission and finish), and their median ms per run with
 * quotas on.
 */
export interface QuotaLoopResult extends PolicyLoopResult {
  doorOnUs: number;
  doorOffUs: number;
  doorRatio: number;
  doorMsPerRun: number;
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
  const base = { BENCH_DYNAMO_ENDPOINT: dynamoEndpoint, BENCH_TABLE: table };
  const { loop } = await benchPair({ ...base, BENCH_POLICIES: FIVE_POLICIES }, base, options);
  return loop;
}

/**
 * Measures P1 with every quota limit on ÷ quotas off (both with the policy service, no set).
 * @throws Error when a run does not answer as scripted (3 model requests, 4 tool calls)
 */
export async function benchQuotaLoop(
  dynamoEndpoint: string,
  table: string,
  options: PolicyLoopOptions,
): Promise<QuotaLoopResult> {
  const base = {
    BENCH_DYNAMO_ENDPOINT: dynamoEndpoint,
    BENCH_TABLE: table,
    AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: "true",
  };
  const on = { ...base, BENCH_QUOTA_LIMITS: JSON.stringify(QUOTA_LIMITS) };
  const { loop, door, doorMsPerRun } = await benchPair(on, base, options);
  return { ...loop, doorOnUs: door.onUs, doorOffUs: door.offUs, doorRatio: door.ratio, doorMsPerRun };
}

/** One batch's medians: the loop's overhead per cycle, with the door, and the door's ms per run. */
interface BatchFigures {
  loop: number;
  withDoor: number;
  doorMs: number;
}

/** Runs the two children alternating; the loop's figures, the run's with its door, and "on"'s door ms. */
async function benchPair(
  onEnv: Record<string, string>,
  offEnv: Record<string, string>,
  options: PolicyLoopOptions,
): Promise<{ loop: PolicyLoopResult; door: PolicyLoopResult; doorMsPerRun: number }> {
  const script = loopScript();
  const cycles = script.length;
  const toolCalls = script.reduce((sum, reply) => sum + (reply.toolCalls?.length ?? 0), 0);
  const children: Record<"on" | "off", LoopChild> = {
    on: await startLoopChild("boundloop", onEnv),
    off: await startLoopChild("boundloop", offEnv),
  };
  const perCycle = (run: LoopChildRun, door: boolean) =>
    ((run.wallMs - run.modelMs - run.toolMs - (door ? 0 : (run.doorMs ?? 0))) / cycles) * 1000;
  const batch = async (child: LoopChild, runs: number): Promise<BatchFigures> => {
    const done = await child.run(runs);
    for (const run of done) {
      if (run.answer.trim() !== FINAL_ANSWER || run.modelRequests !== cycles || run.toolCalls !== toolCalls)
        throw new Error(`P1 with governance: ${JSON.stringify(run)}`);
    }
    return {
      loop: median(done.map((run) => perCycle(run, false))),
      withDoor: median(done.map((run) => perCycle(run, true))),
      doorMs: median(done.map((run) => run.doorMs ?? 0)),
    };
  };
  try {
    // In turn, in short batches (a child left idle while the other warms up would come back slower).
    await interleavedWarmUp(
      new Map(Object.entries(children)),
      { ...options, warmupBatch: options.warmupRuns },
      async (_which, child, runs) => {
        await batch(child, runs);
        return [];
      },
    );
    const on: BatchFigures[] = [];
    const off: BatchFigures[] = [];
    for (let n = 0; n < options.rounds; n++) {
      const order = n % 2 === 0 ? (["on", "off"] as const) : (["off", "on"] as const);
      for (const which of order)
        (which === "on" ? on : off).push(await batch(children[which], options.runsPerRound));
    }
    const figures = (key: "loop" | "withDoor"): PolicyLoopResult => ({
      onUs: round(median(on.map((b) => b[key]))),
      offUs: round(median(off.map((b) => b[key]))),
      ratio: round(median(on.map((b, n) => b[key] / (off[n] as BatchFigures)[key])), 3),
      rounds: options.rounds,
      runsPerRound: options.runsPerRound,
      warmupRuns: options.warmupRuns,
    });
    return {
      loop: figures("loop"),
      door: figures("withDoor"),
      doorMsPerRun: round(median(on.map((b) => b.doorMs)), 2),
    };
  } finally {
    for (const child of Object.values(children)) child.stop();
  }
}
