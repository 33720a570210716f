/**
 * Durable runs on the local runner: for the seed scenario, how many step checkpoints a
 * durable run writes, and the asynchronous path's wall time per cycle as a ratio to the synchronous
 * path's. Both go through the same API handler (local/durable-runner.ts) on the same DynamoDB Local and
 * model server, interleaved (sync, async, sync, async, …) so load on the machine hits both alike.
 * - synchronous: `POST /v1/runs` until its 200
 * - asynchronous: `POST /v1/runs` with `Prefer: respond-async` until the execution has ended (the local
 *   runner's checkpoints, replay bookkeeping and the run:finish step included; polling is not)
 */
import { readFile } from "node:fs/promises";
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2 } from "aws-lambda";
import { createLocalDurableApi } from "../local/durable-runner.js";
import { createLambdaContext } from "../local/lambda-context.js";
import { loadConfig } from "../shared/config.js";
import { round, type Summary, summarize } from "./stats.js";

/**
 * The pause (ms) the testing SDK's LocalDurableTestRunner makes before `run()` resolves
 * (TestExecutionOrchestrator.executeHandler stops its checkpoint polling after a 100 ms timer).
 */
const LOCAL_RUNNER_END_PAUSE_MS = 100;

/** What {@link benchDurable} measured; times in ms, per model cycle. */
export interface DurableBenchResult {
  runs: number;
  /** Step checkpoints of one seed run (model calls, tool turns, run:finish), and their names. */
  checkpointsPerRun: number;
  checkpointNames: string[];
  /** Handler invocations per durable run (1 when nothing interrupted it). */
  invocationsPerRun: number;
  cycles: number;
  syncMsPerCycle: Summary;
  asyncMsPerCycle: Summary;
  /** median async / median sync (per cycle). */
  ratio: number;
  /** median async − median sync, ms per cycle. */
  overheadMsPerCycle: number;
}

/**
 * Runs the seed scenario `runs` times each way on `env` (DynamoDB Local endpoint and table, the local
 * planner's base URL).
 * @throws Error when a run does not complete as the seed scenario does (3 cycles)
 */
export async function benchDurable(
  env: { dynamoEndpoint: string; table: string; modelBaseURL: string },
  runs: number,
): Promise<DurableBenchResult> {
  const config = loadConfig({
    DYNAMODB_ENDPOINT: env.dynamoEndpoint,
    TABLE_NAME: env.table,
    OPENAI_BASE_URL: env.modelBaseURL,
    POWERTOOLS_LOG_LEVEL: "SILENT",
  });
  const api = createLocalDurableApi(config);
  const seed = JSON.parse(
    await readFile(new URL("../events/seed-scenario.json", import.meta.url), "utf8"),
  ) as APIGatewayProxyEventV2;
  const invoke = async (event: APIGatewayProxyEventV2) =>
    (await api.handler(event as never, createLambdaContext(29_000))) as APIGatewayProxyStructuredResultV2;
  const sync: number[] = [];
  const async: number[] = [];
  let last: { names: string[]; invocations: number; cycles: number } | undefined;
  try {
    for (let run = 0; run < runs; run++) {
      let started = performance.now();
      const response = await invoke(seed);
      const body = JSON.parse(response.body ?? "{}") as { status?: string; cycles?: number };
      if (response.statusCode !== 200 || body.cycles !== 3) throw new Error(`sync run: ${response.body}`);
      sync.push((performance.now() - started) / body.cycles);

      started = performance.now();
      const accepted = await invoke({ ...seed, headers: { ...seed.headers, prefer: "respond-async" } });
      const { runId } = JSON.parse(accepted.body ?? "{}") as { runId: string };
      const execution = api.executions.get(runId);
      await execution?.done;
      const elapsed = performance.now() - started;
      const result = execution?.result?.getResult() as { status?: string; cycles?: number } | undefined;
      if (execution?.status !== "SUCCEEDED" || result?.cycles !== 3) {
        throw new Error(`async run ${runId}: ${execution?.status} ${JSON.stringify(result)}`);
      }
      async.push(elapsed / result.cycles);
      last = {
        names: execution.result?.getOperations().map((op) => String(op.getName())) ?? [],
        invocations: execution.result?.getInvocations().length ?? 0,
        cycles: result.cycles,
      };
    }
  } finally {
    await api.stop();
  }
  const syncMsPerCycle = summarize(sync);
  const asyncMsPerCycle = summarize(async);
  return {
    runs,
    checkpointsPerRun: last?.names.length ?? 0,
    checkpointNames: last?.names ?? [],
    invocationsPerRun: last?.invocations ?? 0,
    cycles: last?.cycles ?? 0,
    syncMsPerCycle,
    asyncMsPerCycle,
    ratio: round(asyncMsPerCycle.median / syncMsPerCycle.median, 2),
    overheadMsPerCycle: round(asyncMsPerCycle.median - syncMsPerCycle.median),
  };
}

/** The Markdown section of bench/results/latest.md. */
export function renderDurable(result: DurableBenchResult): string {
  return `## Durable runs (local runner)

The seed scenario, ${result.runs} runs each way, interleaved, through the same handler
(bench/durable.ts). A durable run writes ${result.checkpointsPerRun} step checkpoints
(${result.checkpointNames.join(", ")}) in ${result.invocationsPerRun} invocation(s) for ${result.cycles} cycles.

| path | ms per cycle, median (min–max) |
| --- | --- |
| synchronous (200) | ${result.syncMsPerCycle.median} (${result.syncMsPerCycle.min}–${result.syncMsPerCycle.max}) |
| durable (202 → execution ended) | ${result.asyncMsPerCycle.median} (${result.asyncMsPerCycle.min}–${result.asyncMsPerCycle.max}) |

Durable / synchronous: **${result.ratio}×** per cycle (+${result.overheadMsPerCycle} ms per cycle). The durable time
includes a fixed ${LOCAL_RUNNER_END_PAUSE_MS} ms the local runner waits when an execution ends (its checkpoint polling
stops on a timer): ${round(LOCAL_RUNNER_END_PAUSE_MS / Math.max(1, result.cycles))} ms per cycle here. On Lambda each
checkpoint is a CheckpointDurableExecution call instead of the local runner's in-process worker thread.
`;
}
