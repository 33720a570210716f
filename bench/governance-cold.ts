/**
 * Cold start with POLICIES configured ÷ without (docs/policies.md): the deployed bundle
 * (infra/bundle.ts, as P4 builds it) started cold in a fresh process (bench/cold-start.ts coldStart),
 * GET /healthz, then the seed run against the planner model server; the same bundle with the five-policy
 * set of bench/governance.ts in POLICIES and without, alternating, ratios of back-to-back pairs.
 */
import { API_ENTRY } from "../infra/bundle.js";
import { bundle } from "./bundle.js";
import { type ColdSample, type ColdStartEnv, coldStart } from "./cold-start.js";
import { FIVE_POLICIES, seedEventOf } from "./governance.js";
import { median, round } from "./stats.js";

/**
 * Cold start with policies ÷ without: medians (ms since process start) and the pairs' median ratios;
 * `seedRunCpuMs`, the CPU ms a fresh process spends until the seed run is answered, least of each side's
 * cold starts (the least contended, as bench/lambda-memory.ts `recommendMemory` reads P4's).
 */
export interface PolicyColdStart {
  pairs: number;
  healthzMs: { withPolicies: number; without: number; ratio: number };
  seedRunMs: { withPolicies: number; without: number; ratio: number };
  seedRunCpuMs: { withPolicies: number; without: number };
}

/**
 * `pairs` cold starts of each (alternating which goes first).
 * @throws Error when /healthz or the seed run does not answer 200
 */
export async function benchPolicyColdStart(env: ColdStartEnv, pairs: number): Promise<PolicyColdStart> {
  const built = await bundle("boundloop", API_ENTRY, "deployed");
  const seed = JSON.stringify(seedEventOf());
  const samples = { with: [] as ColdSample[], without: [] as ColdSample[] };
  const once = async (policies: boolean) => {
    const sample = await coldStart(built.file, env, seed, policies ? { POLICIES: FIVE_POLICIES } : {});
    if (sample.healthzStatus !== 200 || sample.runStatus !== 200)
      throw new Error(`cold start (policies ${policies}): ${JSON.stringify(sample)}`);
    samples[policies ? "with" : "without"].push(sample);
  };
  for (let n = 0; n < pairs; n++) {
    const order = n % 2 === 0 ? [true, false] : [false, true];
    for (const policies of order) await once(policies);
  }
  const figure = (pick: (sample: ColdSample) => number) => {
    const ratios = samples.with.map((sample, n) => pick(sample) / pick(samples.without[n] as ColdSample));
    return {
      withPolicies: round(median(samples.with.map(pick))),
      without: round(median(samples.without.map(pick))),
      ratio: round(median(ratios), 3),
    };
  };
  return {
    pairs,
    healthzMs: figure((sample) => sample.healthzAtMs),
    seedRunMs: figure((sample) => sample.runAtMs ?? Number.NaN),
    seedRunCpuMs: {
      withPolicies: round(Math.min(...samples.with.map((sample) => sample.cpuMsAtRun ?? Number.NaN))),
      without: round(Math.min(...samples.without.map((sample) => sample.cpuMsAtRun ?? Number.NaN))),
    },
  };
}
