/**
 * `npm run bench`: every benchmark in one run, side by side, on this machine. Starts one DynamoDB Local
 * and the local model servers, then runs P1 loop overhead and P2 parallel tools (bench/loop-overhead.ts),
 * P3 DynamoDB per recorded invoice (bench/idempotency.ts), P4 bundle and cold start (bench/cold-start.ts),
 * P5 memory (bench/memory.ts), the load test (bench/load.ts) and durable runs on the local runner
 * (bench/durable.ts: checkpoints per seed run, ms per cycle as a ratio to synchronous runs) and MCP
 * (bench/mcp.ts: a tools/call ÷ the same dispatcher call in process, cold start of /mcp ÷ /healthz) and run
 * events (bench/events.ts: P7 first event ÷ first model response, P8 DynamoDB requests per keyed run, own + events ÷ own,
 * streamed ÷ JSON per cycle) and the console's size (bench/console-size.ts: its first view, gzip, against
 * the 150 kB goal); writes
 * bench/results/latest.json,
 * bench/results/latest.md (and P3's bench/results/idempotency.json). `--quick` uses fewer repetitions
 * (for trying the harness; not for published figures). `--only p1` runs P1 alone (no DynamoDB, no load
 * test) and prints its figures without writing any result file, for comparing changes to the loop.
 * `--only tracing` runs P1 and P4 with fewer repetitions and writes the tracing on ÷ off figures side by
 * side to bench/results/tracing.json and bench/results/tracing.md (the full run has them at the end of
 * latest.md too). `--only console` measures the console alone and writes bench/results/console.md.
 * `--only governance` runs the governance section alone (bench/governance-report.ts: Cedar decision,
 * DynamoDB requests with policies and quotas, cold start with policies, a run's cost by length) and
 * writes bench/results/governance.json and governance.md; the full run has it at the end of latest.md.
 */

import { mkdir, readFile, writeFile } from "node:fs/promises";
import { cpus, loadavg, totalmem } from "node:os";
import { startLocalDynamo } from "../local/dynamo.js";
import { startModelServer } from "../local/model-server.js";
import { createDocumentClient } from "../shared/store/dynamo.js";
import { ensureTable } from "../shared/store/table.js";
import { BUILD_DIR } from "./bundle.js";
import { benchColdStart } from "./cold-start.js";
import { benchConsoleSize, renderConsoleSize } from "./console-size.js";
import { benchDurable, renderDurable } from "./durable.js";
import { benchEvents, renderEvents } from "./events.js";
import { benchGovernance, type GovernanceResult, renderGovernance } from "./governance-report.js";
import { benchIdempotency, printIdempotency, writeIdempotencyReport } from "./idempotency.js";
import { recommendMemory } from "./lambda-memory.js";
import { benchLoad } from "./load.js";
import { benchLoopOverhead, benchParallelTools } from "./loop-overhead.js";
import { benchMcp, renderMcp } from "./mcp.js";
import { benchMemory } from "./memory.js";
import { type BenchReport, goalsTable, type MachineInfo, renderMarkdown } from "./report.js";
import { renderTracing, type TracingBenchReport } from "./tracing-report.js";

process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= "true";

const quick = process.argv.includes("--quick");
const onlyIndex = process.argv.indexOf("--only");
const only = onlyIndex === -1 ? undefined : process.argv[onlyIndex + 1];
if (only !== undefined && !["p1", "tracing", "console", "governance"].includes(only)) {
  console.error(
    `--only: unknown section ${JSON.stringify(only)} (supported: p1, tracing, console, governance)`,
  );
  process.exit(2);
}
/** Repetitions: sized so the whole run stays well under 10 minutes on 2 shared cores. */
const SETTINGS = quick
  ? {
      p1: { warmupRuns: 10, warmupBatch: 5, rounds: 3, runsPerRound: 5 },
      p2Runs: 2,
      coldStarts: 3,
      memoryRuns: 1,
      loadSeconds: 3,
      durableRuns: 2,
      mcp: { calls: 10, coldStarts: 2 },
      tracing: { p1: { warmupRuns: 10, warmupBatch: 5, rounds: 3, runsPerRound: 5 }, coldStarts: 2 },
      eventRuns: 2,
      governance: { coldPairs: 2, decisions: 1_000, loop: { warmupRuns: 20, rounds: 3, runsPerRound: 10 } },
    }
  : {
      p1: { warmupRuns: 2000, warmupBatch: 500, rounds: 30, runsPerRound: 50 },
      p2Runs: 7,
      coldStarts: 15,
      memoryRuns: 3,
      loadSeconds: 10,
      durableRuns: 15,
      mcp: { calls: 100, coldStarts: 9 },
      // P1 warm enough for a ratio of two runs of the same loop (both processes warm up alike).
      tracing: { p1: { warmupRuns: 600, warmupBatch: 200, rounds: 12, runsPerRound: 30 }, coldStarts: 5 },
      eventRuns: 7,
      governance: {
        coldPairs: 9,
        decisions: 5_000,
        loop: { warmupRuns: 1500, rounds: 16, runsPerRound: 40 },
      },
    };

/** The packages P1, P2 and P5 compare with. */
const PEER_PACKAGES = ["@openai/agents", "ai", "@ai-sdk/openai-compatible"];

/** The installed version of each peer package (its package.json under node_modules). */
async function peerVersions(): Promise<Record<string, string>> {
  const entries = await Promise.all(
    PEER_PACKAGES.map(async (name) => {
      const url = new URL(`../node_modules/${name}/package.json`, import.meta.url);
      const { version } = JSON.parse(await readFile(url, "utf8")) as { version: string };
      return [name, version] as const;
    }),
  );
  return Object.fromEntries(entries);
}

const round2 = (values: number[]) => values.map((value) => Math.round(value * 100) / 100);

async function main(): Promise<void> {
  const machine: MachineInfo = {
    node: process.version,
    platform: process.platform,
    arch: process.arch,
    cpus: cpus().length,
    cpuModel: cpus()[0]?.model.trim() ?? "unknown",
    memoryMb: Math.round(totalmem() / 1_048_576),
    loadavgAtStart: round2(loadavg()),
    loadavgAtEnd: [],
    loadavgBySection: {},
    peerVersions: await peerVersions(),
  };
  console.log(
    `bench: Node ${machine.node}, ${machine.cpus} CPUs, load average ${machine.loadavgAtStart.join(" ")}`,
  );
  if (only === "p1") return onlyP1();
  if (only === "tracing") return onlyTracing(machine);
  if (only === "console") return onlyConsole();
  if (only === "governance") return onlyGovernance(machine);
  const sectionSeconds: Record<string, number> = {};
  const section = async <T>(name: string, fn: () => Promise<T>): Promise<T> => {
    machine.loadavgBySection[name] = round2(loadavg())[0] as number;
    const started = performance.now();
    console.log(`\n== ${name} (load ${machine.loadavgBySection[name]})`);
    const result = await fn();
    sectionSeconds[name] = Math.round((performance.now() - started) / 100) / 10;
    console.log(`   ${name}: ${sectionSeconds[name]} s`);
    return result;
  };

  const { dynamo, scripted, env, stop } = await startServices();
  try {
    const p1 = await section("P1", () => benchLoopOverhead(SETTINGS.p1));
    for (const [name, f] of Object.entries(p1.frameworks)) {
      console.log(`   ${name}: ${f.overheadPerCycleUs.median} µs/cycle`);
    }
    const p2 = await section("P2", () =>
      benchParallelTools(scripted, { runs: SETTINGS.p2Runs, delayMs: 200 }),
    );
    const p3 = await section("P3", () => benchIdempotency(dynamo));
    printIdempotency(p3);
    await writeIdempotencyReport(p3);
    const p4 = await section("P4", () => benchColdStart(env, SETTINGS.coldStarts));
    const handlerBundle = `${BUILD_DIR}boundloop/index.mjs`;
    const p5 = await section("P5", () => benchMemory(scripted, env, handlerBundle, SETTINGS.memoryRuns));
    const load = await section("load", () =>
      benchLoad(handlerBundle, env, {
        connections: 8,
        durationSeconds: SETTINGS.loadSeconds,
        warmupSeconds: 2,
      }),
    );
    const durable = await section("durable", () => benchDurable(env, SETTINGS.durableRuns));
    console.log(
      `   checkpoints per seed run: ${durable.checkpointsPerRun}; ms per cycle sync ${durable.syncMsPerCycle.median}, durable ${durable.asyncMsPerCycle.median} (${durable.ratio}×)`,
    );
    const mcp = await section("mcp", () =>
      benchMcp({ dynamoEndpoint: dynamo.endpoint, table: "bench-mcp" }, SETTINGS.mcp),
    );
    console.log(
      `   tools/call ${mcp.mcpCallMs.median} ms vs dispatcher ${mcp.dispatcherCallMs.median} ms (${mcp.callRatio}×); cold /mcp ${mcp.mcpColdMs.median} ms vs /healthz ${mcp.healthzColdMs.median} ms (${mcp.coldRatio}×)`,
    );
    const events = await section("events", () => benchEvents(dynamo.endpoint, SETTINGS.eventRuns));
    console.log(
      `   P7 ${events.p7.map((row) => `${row.ratio} (model ${row.modelDelayMs} ms)`).join(", ")}; P8 ${events.p8.json.ratio} (streamed ${events.p8.streamed.ratio}); streamed ÷ JSON per cycle ${events.overhead.ratio}×`,
    );
    const governance = await section("governance", () => benchGovernance(env, scripted, SETTINGS.governance));
    const consoleSize = await section("console", () => benchConsoleSize());
    console.log(
      `   console first view ${consoleSize.firstViewGzipBytes} B gzip (${consoleSize.ratioToGoal} of the goal)`,
    );
    machine.loadavgAtEnd = round2(loadavg());
    const report: BenchReport = {
      generatedAt: new Date().toISOString(),
      command: quick ? "npm run bench -- --quick" : "npm run bench",
      machine,
      sectionSeconds,
      p1LoopOverhead: p1,
      p2ParallelTools: p2,
      p3DynamoDb: p3,
      p4BundleColdStart: p4,
      p5Memory: p5,
      load,
      durable,
      mcp,
      events,
      console: consoleSize,
      governance,
      lambdaMemory: recommendMemory(p4, p5, load, governance.coldStart.seedRunCpuMs.withPolicies),
    };
    await mkdir(new URL("./results/", import.meta.url), { recursive: true });
    await writeFile(
      new URL("./results/latest.json", import.meta.url),
      `${JSON.stringify(report, null, 2)}\n`,
    );
    await writeFile(
      new URL("./results/latest.md", import.meta.url),
      `${renderMarkdown(report)}\n${renderDurable(durable)}\n${renderMcp(mcp)}\n${renderTracing(p1, p4)}\n${renderEvents(events)}\n${renderConsoleSize(consoleSize)}\n${renderGovernance(governance)}`,
    );
    console.log(`\n${goalsTable(report)}\n\nLambda memory: ${report.lambdaMemory.reason}`);
    console.log("\nWrote bench/results/latest.json, bench/results/latest.md, bench/results/idempotency.json");
  } finally {
    await stop();
  }
}

/**
 * One DynamoDB Local with the table `bench-runs`, a scripted model server and a planner one; `env` is what
 * the cold-start children and the load test need; `stop()` stops all of them.
 */
async function startServices() {
  const dynamo = await startLocalDynamo();
  const scripted = await startModelServer({ script: [] });
  const planner = await startModelServer();
  const table = "bench-runs";
  const ddb = createDocumentClient({
    name: table,
    endpoint: dynamo.endpoint,
    region: "eu-west-2",
    requestTimeoutMs: 3_000,
  });
  await ensureTable(ddb, table);
  const env = { dynamoEndpoint: dynamo.endpoint, table, modelBaseURL: planner.baseURL };
  const stop = async () => {
    ddb.destroy();
    await scripted.stop();
    await planner.stop();
    await dynamo.stop();
  };
  return { dynamo, scripted, env, stop };
}

/**
 * `--only governance`: the governance section alone (its own DynamoDB Local and model servers); writes
 * bench/results/governance.json and governance.md.
 */
async function onlyGovernance(machine: MachineInfo): Promise<void> {
  const { scripted, env, stop } = await startServices();
  try {
    const result: GovernanceResult = await benchGovernance(env, scripted, SETTINGS.governance);
    machine.loadavgAtEnd = round2(loadavg());
    const command = quick
      ? "npm run bench -- --only governance --quick"
      : "npm run bench -- --only governance";
    const markdown = `# Benchmarks: governance\n\n\`${command}\` on ${new Date().toISOString()}: Node ${machine.node}, ${machine.cpus} × ${machine.cpuModel}; load average ${machine.loadavgAtStart.join(" / ")} at the start, ${machine.loadavgAtEnd.join(" / ")} at the end (shared machine).\n\n${renderGovernance(result)}`;
    await mkdir(new URL("./results/", import.meta.url), { recursive: true });
    await writeFile(
      new URL("./results/governance.json", import.meta.url),
      `${JSON.stringify({ command, machine, ...result }, null, 2)}\n`,
    );
    await writeFile(new URL("./results/governance.md", import.meta.url), markdown);
    console.log(`\n${markdown}\nWrote bench/results/governance.json, bench/results/governance.md`);
  } finally {
    await stop();
  }
}

/** `--only console`: the console's size alone, printed and written to bench/results/console.md. */
async function onlyConsole(): Promise<void> {
  const size = await benchConsoleSize();
  const markdown = renderConsoleSize(size);
  console.log(markdown);
  await mkdir(new URL("./results/", import.meta.url), { recursive: true });
  await writeFile(new URL("./results/console.md", import.meta.url), markdown);
}

/** `--only p1`: P1 alone (its children start their own model servers); prints per-framework figures and the ratios. */
async function onlyP1(): Promise<void> {
  const started = performance.now();
  const p1 = await benchLoopOverhead(SETTINGS.p1);
  for (const [name, f] of Object.entries(p1.frameworks)) {
    const { median, min, max } = f.overheadPerCycleUs;
    console.log(
      `   ${name.padEnd(14)} ${String(median).padStart(6)} µs/cycle (${min}–${max}), wall ${f.wallPerRunMs} ms/run, model ${f.modelServerPerRunMs} ms/run; warm-up ${f.warmupCurveUs.join(" → ")}`,
    );
  }
  console.log(`   ratio to peer: ${JSON.stringify(p1.ratioToPeer)}`);
  console.log(`   net of transport: ${JSON.stringify(p1.ratioToPeerNetOfTransport)}`);
  console.log(
    `   tracing on ÷ off: ${p1.tracing.ratio} (goal ≤ ${p1.tracing.goal}: ${p1.tracing.met ? "met" : "not met"})`,
  );
  console.log(`   ours above the openai SDK alone on our client: ${p1.aboveSdkUs} µs/cycle`);
  console.log(
    `   goal (${p1.goal.text}): ${p1.goal.ratio} net vs ${p1.fastestPeer}, ${p1.goal.overFloor} ÷ floor (gross ${p1.grossRatio}) → ${p1.goal.met ? "met" : "not met"}`,
  );
  console.log(
    `   P1: ${Math.round((performance.now() - started) / 100) / 10} s, load ${round2(loadavg()).join(" ")}`,
  );
}

/**
 * `--only tracing`: P1 (all its processes, ours traced among them) and P4 (every variant, the traced
 * bundle among them) with {@link SETTINGS}.tracing, against one DynamoDB Local and the planner model
 * server; writes bench/results/tracing.json and tracing.md and prints the tracing table.
 */
async function onlyTracing(machine: MachineInfo): Promise<void> {
  const { env, stop } = await startServices();
  try {
    machine.loadavgBySection.P1 = round2(loadavg())[0] as number;
    const p1 = await benchLoopOverhead(SETTINGS.tracing.p1);
    machine.loadavgBySection.P4 = round2(loadavg())[0] as number;
    const p4 = await benchColdStart(env, SETTINGS.tracing.coldStarts);
    machine.loadavgAtEnd = round2(loadavg());
    const report: TracingBenchReport = {
      generatedAt: new Date().toISOString(),
      command: quick ? "npm run bench -- --only tracing --quick" : "npm run bench -- --only tracing",
      machine,
      p1LoopOverhead: p1,
      p4BundleColdStart: p4,
    };
    const section = renderTracing(p1, p4);
    await mkdir(new URL("./results/", import.meta.url), { recursive: true });
    await writeFile(
      new URL("./results/tracing.json", import.meta.url),
      `${JSON.stringify(report, null, 2)}\n`,
    );
    await writeFile(
      new URL("./results/tracing.md", import.meta.url),
      `# Benchmarks: tracing on ÷ off\n\n\`${report.command}\` on ${report.generatedAt}: Node ${machine.node}, ${machine.cpus} × ${machine.cpuModel}; load average ${machine.loadavgAtStart.join(" / ")} at the start, ${machine.loadavgAtEnd.join(" / ")} at the end (shared machine).\n\n${section}`,
    );
    console.log(`\n${section}\nWrote bench/results/tracing.json, bench/results/tracing.md`);
  } finally {
    await stop();
  }
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? (error.stack ?? error.message) : String(error));
  process.exit(1);
});
