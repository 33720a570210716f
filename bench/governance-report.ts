/**
 * The governance section of `npm run bench` (`--only governance` runs it alone and writes
 * bench/results/governance.json and governance.md): a Cedar decision's cost, DynamoDB requests with
 * policies and quotas (bench/governance.ts), cold start with policies (bench/governance-cold.ts) and the
 * cost of a run by length (bench/run-cost.ts), with the goals docs/policies.md and docs/quotas.md set.
 */
import { type LocalModelServer, startModelServer } from "../local/model-server.js";
import type { ColdStartEnv } from "./cold-start.js";
import {
  benchDecision,
  benchGovernanceRequests,
  type DecisionCost,
  type RequestCount,
} from "./governance.js";
import { benchPolicyColdStart, type PolicyColdStart } from "./governance-cold.js";
import {
  benchPolicyLoop,
  benchQuotaLoop,
  type PolicyLoopOptions,
  type PolicyLoopResult,
  type QuotaLoopResult,
} from "./governance-loop.js";
import { AWS_PRICES, benchRunCost, type RunCostRow } from "./run-cost.js";
import { round } from "./stats.js";

/** Everything the section measured. */
export interface GovernanceResult {
  decision: DecisionCost;
  requests: Record<string, RequestCount>;
  coldStart: PolicyColdStart;
  /** The same cold starts against a planner that answers each call in {@link MODEL_LATENCY_MS}. */
  coldStartSlowModel: PolicyColdStart;
  loop: PolicyLoopResult;
  quotaLoop: QuotaLoopResult;
  runCost: RunCostRow[];
}

/**
 * Runs the section: `coldPairs` cold starts with and without policies; `decisions` timed decisions;
 * `loop`, P1 with the five-policy set on and off, and with every quota limit on and quotas off
 * (bench/governance-loop.ts).
 */
export async function benchGovernance(
  env: ColdStartEnv,
  model: LocalModelServer,
  settings: { coldPairs: number; decisions: number; loop: PolicyLoopOptions },
): Promise<GovernanceResult> {
  process.env.POWERTOOLS_METRICS_DISABLED ??= "true";
  const decision = await benchDecision(settings.decisions);
  console.log(`   Cedar decision, five policies: p50 ${decision.p50Us} µs, p99 ${decision.p99Us} µs`);
  const requests = await benchGovernanceRequests(env.dynamoEndpoint, model);
  for (const [name, count] of Object.entries(requests)) console.log(`   ${name}: ${count.total} requests`);
  const coldStart = await benchPolicyColdStart(env, settings.coldPairs);
  console.log(
    `   cold /healthz with ÷ without policies ${coldStart.healthzMs.ratio}, seed run ${coldStart.seedRunMs.ratio}`,
  );
  const slow = await startModelServer({ plannerDelayMs: MODEL_LATENCY_MS });
  let coldStartSlowModel: PolicyColdStart;
  try {
    coldStartSlowModel = await benchPolicyColdStart(
      { ...env, modelBaseURL: slow.baseURL },
      Math.ceil(settings.coldPairs / 2),
    );
  } finally {
    await slow.stop();
  }
  console.log(
    `   seed run cold, model answering in ${MODEL_LATENCY_MS} ms, with ÷ without policies ${coldStartSlowModel.seedRunMs.ratio}`,
  );
  const loop = await benchPolicyLoop(env.dynamoEndpoint, env.table, settings.loop);
  console.log(
    `   P1 overhead per cycle, five policies on ÷ off ${loop.ratio} (${loop.onUs} vs ${loop.offUs} µs)`,
  );
  const quotaLoop = await benchQuotaLoop(env.dynamoEndpoint, env.table, settings.loop);
  console.log(
    `   P1 overhead per cycle, quotas on ÷ off ${quotaLoop.ratio} (${quotaLoop.onUs} vs ${quotaLoop.offUs} µs); with the run's start and end ${quotaLoop.doorRatio} (${quotaLoop.doorMsPerRun} ms a run with quotas)`,
  );
  const runCost = await benchRunCost(env.dynamoEndpoint, model);
  return { decision, requests, coldStart, coldStartSlowModel, loop, quotaLoop, runCost };
}

/**
 * The model latency of the second cold-start comparison (ms per call): of the order of a hosted small
 * model's time to answer a short tool-calling turn, where the local planner answers at once.
 */
export const MODEL_LATENCY_MS = 300;

/** A yes/no against a goal. */
const met = (ok: boolean) => (ok ? "yes" : "**no**");

/** The section as markdown. */
export function renderGovernance(result: GovernanceResult): string {
  const { decision, requests, coldStart, coldStartSlowModel, loop, quotaLoop, runCost } = result;
  const total = (name: string) => requests[name]?.total ?? Number.NaN;
  const off = total("quotas off (no policies)");
  const quotas = total("every quota limit");
  const noPolicies = total("no policies, no quota limits");
  const withTotals = total("five policies (running totals)");
  const lines = [
    "## Governance: Cedar policies and quotas",
    "",
    "| figure | goal | measured | met |",
    "| --- | --- | --- | --- |",
    `| Cedar decision, five policies, warm (µs p50; p99) | ≤ 100 µs | ${decision.p50Us} µs (p99 ${decision.p99Us}) | ${met(decision.p50Us <= 100)} |`,
    `| DynamoDB requests per keyed run, quotas on ÷ off | ≤ 1.3 | ${round(quotas / off, 2)}: ${quotas} vs ${off} | ${met(quotas / off <= 1.3)} |`,
    `| DynamoDB requests per recorded invoice, five policies with running totals − none | +1 | +${withTotals - noPolicies}: ${withTotals} vs ${noPolicies} (the running totals' reservation) | ${met(withTotals - noPolicies <= 1)} |`,
    `| cold /healthz, POLICIES configured ÷ without | ≤ 1.05 | ${coldStart.healthzMs.ratio}: ${coldStart.healthzMs.withPolicies} vs ${coldStart.healthzMs.without} ms | ${met(coldStart.healthzMs.ratio <= 1.05)} |`,
    `| seed run's cold wall time, POLICIES ÷ without | ≤ 1.1 | ${coldStart.seedRunMs.ratio}: ${coldStart.seedRunMs.withPolicies} vs ${coldStart.seedRunMs.without} ms | ${met(coldStart.seedRunMs.ratio <= 1.1)} |`,
    `| seed run's cold wall time, POLICIES ÷ without, the model answering each call in ${MODEL_LATENCY_MS} ms | – | ${coldStartSlowModel.seedRunMs.ratio}: ${coldStartSlowModel.seedRunMs.withPolicies} vs ${coldStartSlowModel.seedRunMs.without} ms (${coldStartSlowModel.pairs} pairs; the engine loads while the first call is in flight) | – |`,
    `| P1 loop overhead per cycle, five-policy set on ÷ off | ≤ 1.15 | ${loop.ratio}: ${loop.onUs} vs ${loop.offUs} µs | ${met(loop.ratio <= 1.15)} |`,
    `| P1 with quotas on ÷ off | ≤ 1.15 | ${quotaLoop.ratio}: ${quotaLoop.onUs} vs ${quotaLoop.offUs} µs | ${met(quotaLoop.ratio <= 1.15)} |`,
    `| P1 with quotas on ÷ off, the run's start and end included | – | ${quotaLoop.doorRatio}: ${quotaLoop.doorOnUs} vs ${quotaLoop.doorOffUs} µs (the record's writes, and with quotas admission and finish: ${quotaLoop.doorMsPerRun} ms a run) | – |`,
    "",
    `P1 with quotas: the same runs with every quota limit set (bench/governance.ts QUOTA_LIMITS: runs per minute, runs in flight, tokens and cost per day) and quotas off, both with the policy service and no set, on DynamoDB Local: each run admitted at the door (one write, holding the run's first hold), budgeted around every model call, its budget finished after (one write), as shared/runs/sync.ts wires them. Both write each run's record at its start and end, as every deployed run does (a process making no DynamoDB request between runs runs the loop faster: measured, two reads at the door with quotas off cost the loop as much as quotas on). The first row leaves the run's start and end out; the second puts them in.`,
    "",
    `Decision: \`authorize\` of a recordInvoice call (facts, totals) against the five-policy set of bench/governance.ts, ${decision.decisions} timed after as many warm-up decisions. Cold start: ${coldStart.pairs} pairs, alternating. P1 with policies: bench P1's boundloop runs (two turns of two instant tool calls, 3 cycles) with every call decided by the policy decision service on DynamoDB Local, POLICIES the five-policy set or none (the same service and head reads both ways), a child process each, ${loop.warmupRuns} warm-up runs, then ${loop.rounds} rounds of ${loop.runsPerRound} runs alternating; the ratio is the median of the rounds' ratios. Requests: bench P3's keyed run (one recordInvoice, 2 cycles) in a warm container of its own per variant:`,
    "",
    "| variant | requests | by operation |",
    "| --- | --- | --- |",
    ...Object.entries(requests).map(
      ([name, count]) =>
        `| ${name} | ${count.total} | ${Object.entries(count.byOperation)
          .map(([op, n]) => `${n} ${op}`)
          .join(", ")} |`,
    ),
    "",
    "### Cost of a run by length",
    "",
    `A synchronous run of n cycles (n − 1 calculateTax calls, then the answer), quotas on, through the real handler on DynamoDB Local. Lambda at FUNCTION_MEMORY_MB for the handler's wall time here; DynamoDB units as DynamoDB Local reports them; priced at Lambda $${AWS_PRICES.lambdaGbSecond}/GB-s + $0.20/M requests, DynamoDB on-demand $0.625/M WRU, $0.125/M RRU, HTTP API $1.00/M. Model: gpt-4o-mini at $0.15/$0.60 per M tokens (MODEL_PRICES), tokens as the local model server estimates them (4 characters a token). A synchronous run makes no durable operations (bench/durable.ts counts a durable seed run's checkpoints).`,
    "",
    "| cycles | handler ms | Lambda GB-s | DynamoDB requests | WRU | RRU | API requests | durable ops | infrastructure USD | model USD |",
    "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ...runCost.map(
      (row) =>
        `| ${row.cycles} | ${row.wallMs} | ${row.lambdaGbSeconds} | ${row.dynamoRequests} | ${row.writeUnits} | ${row.readUnits} | ${row.apiRequests} | ${row.durableOperations} | ${row.infrastructureUsd.toFixed(8)} | ${row.modelUsd ?? "–"} |`,
    ),
    "",
    "Bytes written per cycle after the first (the run's start and finish excluded), by kind: flat when the 10- and 50-cycle rows agree.",
    "",
    ...bytesTable(runCost),
  ];
  return `${lines.join("\n")}\n`;
}

/** The bytes-per-cycle table: one row per run length, one column per kind of item. */
function bytesTable(rows: readonly RunCostRow[]): string[] {
  const kinds = [...new Set(rows.flatMap((row) => Object.keys(row.bytesPerCycle)))].sort();
  const longer = rows.filter((row) => row.cycles > 1);
  return [
    `| cycles | ${kinds.join(" | ")} |`,
    `| --- | ${kinds.map(() => "---").join(" | ")} |`,
    ...longer.map(
      (row) => `| ${row.cycles} | ${kinds.map((kind) => row.bytesPerCycle[kind] ?? 0).join(" | ")} |`,
    ),
  ];
}
