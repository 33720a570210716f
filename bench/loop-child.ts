/**
 * P1 child: one framework (argv[2]) in a process of its own, as it would be deployed, so no other
 * framework's garbage collection or JIT state lands in its timings, with its own local model server
 * (local/model-server.ts, scripted, zero latency) in the same process, as P1 had it before the
 * frameworks were separated. Prints `{"ready":true}`, then for every line "run <n>" on stdin makes n
 * runs back to back (each with the model scripted by {@link loopScript}) and prints them as one JSON
 * array line of {@link LoopChildRun}. Exits when stdin closes.
 */
import { createInterface } from "node:readline";
import { pathToFileURL } from "node:url";
import { startModelServer } from "../local/model-server.js";
import { IntervalLog, portOf, ServerClock, unionMs } from "./clock.js";
import { createScenarioRunner } from "./scenario/index.js";
import { instantTools, instantTurn, scriptRun } from "./scenario/tools.js";
import type { Framework, Reference } from "./scenario/types.js";

/** The prompt of every P1 run. */
export const LOOP_PROMPT = "Look up the rates and convert 100.00 GBP to EUR.";

/** P1's scripted run: two turns of 2 parallel instant tool calls, then the final answer (3 model calls). */
export const loopScript = () => scriptRun([instantTurn(0), instantTurn(1)]);

/**
 * One run as the child measured it, ms on its `performance.now()` clock: run wall time, the union of the
 * model server's request times (server side) and of the tool executions; counts to check the run;
 * `doorMs`, on DynamoDB Local (the governance variants), the time of the run's start and end: its
 * record's writes and, with quotas, its admission and its budget's finish (in `wallMs`).
 */
export interface LoopChildRun {
  doorMs?: number;
  answer: string;
  wallMs: number;
  modelMs: number;
  toolMs: number;
  modelRequests: number;
  toolCalls: number;
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const framework = process.argv[2] as Framework | Reference;
  const model = await startModelServer({ script: [] });
  const clock = new ServerClock(portOf(model.baseURL));
  const toolLog = new IntervalLog();
  const script = loopScript();
  // boundloop-traced (bench/loop-overhead.ts): the SDK as the entry wires it, spans batched and dropped.
  const traced = process.env.BENCH_TRACING === "1" ? await startBenchTracing() : undefined;
  // The governance section's P1 variants (bench/governance-loop.ts): boundloop with the policy decision
  // service on DynamoDB Local, with the five-policy set as POLICIES or with none; and with
  // BENCH_QUOTA_LIMITS (JSON: quota variables), admitted and budgeted by the quotas on the same table.
  const quotaLimits = process.env.BENCH_QUOTA_LIMITS;
  const policies = process.env.BENCH_DYNAMO_ENDPOINT
    ? {
        dynamoEndpoint: process.env.BENCH_DYNAMO_ENDPOINT,
        table: process.env.BENCH_TABLE ?? "bench-runs",
        text: process.env.BENCH_POLICIES ?? null,
        quotaLimits: quotaLimits ? (JSON.parse(quotaLimits) as Record<string, string>) : undefined,
      }
    : undefined;
  const runner = await createScenarioRunner(framework, {
    baseURL: model.baseURL,
    model: "bench-scripted",
    tools: instantTools(toolLog),
    maxCycles: 5,
    ...(policies ? { policies } : {}),
  });
  process.stdout.write(`${JSON.stringify({ ready: true })}\n`);
  const runOnce = async (): Promise<LoopChildRun> => {
    model.script(script);
    model.requests.length = 0;
    clock.log.take();
    toolLog.take();
    const started = performance.now();
    const answer = traced ? await traced.run(() => runner.run(LOOP_PROMPT)) : await runner.run(LOOP_PROMPT);
    const wallMs = performance.now() - started;
    const modelIntervals = clock.log.take();
    const tools = toolLog.take();
    const doorMs = runner.lastDoorMs?.();
    return {
      ...(doorMs === undefined ? {} : { doorMs }),
      answer,
      wallMs,
      modelMs: unionMs(modelIntervals),
      toolMs: unionMs(tools),
      modelRequests: modelIntervals.length,
      toolCalls: tools.length,
    };
  };
  for await (const line of createInterface({ input: process.stdin })) {
    const match = /^run (\d+)$/.exec(line.trim());
    if (!match) continue;
    const runs: LoopChildRun[] = [];
    for (let n = 0; n < Number(match[1]); n++) runs.push(await runOnce());
    process.stdout.write(`${JSON.stringify(runs)}\n`);
  }
  clock.stop();
  await model.stop();
}

/**
 * Tracing for the P1 child: the SDK (shared/telemetry/sdk.ts) with a batch processor over an exporter
 * that drops what it gets; each run runs in one agent span (shared/run-trace.ts, the run tracer's
 * `within`; no lifecycle here ends it) with its chat and execute_tool spans, and is flushed after it, as
 * the entry flushes each invocation.
 */
async function startBenchTracing() {
  const { startTracing } = await import("../shared/telemetry/sdk.js");
  const { createRunTracer } = await import("../shared/run-trace.js");
  const tracer = createRunTracer(Date.now);
  const sdk = startTracing(
    {
      kind: "exporter",
      batch: true,
      exporter: { export: (_spans, done) => done({ code: 0 }), shutdown: async () => undefined },
    },
    "boundloop-bench",
    false,
  );
  let n = 0;
  return {
    async run<T>(fn: () => Promise<T>): Promise<T> {
      n += 1;
      const run = { tenantId: "bench", runId: `run_bench_${n}`, userId: "usr_bench" };
      const scope = { durable: false as const, conversationId: run.runId };
      try {
        return await (tracer.within?.(run, scope, fn) ?? fn());
      } finally {
        await sdk.flush();
      }
    },
  };
}
