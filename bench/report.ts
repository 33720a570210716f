/**
 * The bench report: what bench/run.ts writes to bench/results/latest.json, its markdown rendering
 * (bench/results/latest.md), and the Lambda memory size derived from the figures.
 */

import type { ColdStartResult, ColdStartVariant } from "./cold-start.js";
import type { ConsoleSize } from "./console-size.js";
import type { DurableBenchResult } from "./durable.js";
import type { EventsBenchResult } from "./events.js";
import type { GovernanceResult } from "./governance-report.js";
import type { IdempotencyReport, Phase } from "./idempotency.js";
import type { MemoryRecommendation } from "./lambda-memory.js";
import type { LoadResult } from "./load.js";
import {
  type LoopOverheadResult,
  P1_FLOOR_GOAL,
  P1_NET_GOAL,
  type ParallelToolsResult,
} from "./loop-overhead.js";
import type { McpBenchResult } from "./mcp.js";
import type { MemoryResult } from "./memory.js";
import { kb, range, round2, table, yes } from "./report-format.js";
import type { Framework, Reference } from "./scenario/types.js";

/** The machine as the run found it: Node, CPUs, memory, and the load average (1, 5, 15 min) over time. */
export interface MachineInfo {
  node: string;
  platform: string;
  arch: string;
  cpus: number;
  cpuModel: string;
  memoryMb: number;
  loadavgAtStart: number[];
  loadavgAtEnd: number[];
  /** The 1-minute load average when each section started. */
  loadavgBySection: Record<string, number>;
  /** The installed version of each peer package the figures compare with (from its package.json). */
  peerVersions: Record<string, string>;
}

/** Everything one `npm run bench` measured. */
export interface BenchReport {
  generatedAt: string;
  command: string;
  machine: MachineInfo;
  sectionSeconds: Record<string, number>;
  p1LoopOverhead: LoopOverheadResult;
  p2ParallelTools: ParallelToolsResult;
  p3DynamoDb: IdempotencyReport;
  p4BundleColdStart: ColdStartResult;
  p5Memory: MemoryResult;
  load: LoadResult;
  durable: DurableBenchResult;
  mcp: McpBenchResult;
  /** Run events: P7, P8 and the streamed path's overhead per cycle (bench/events.ts). */
  events: EventsBenchResult;
  /** The console's size, gzip (bench/console-size.ts). */
  console: ConsoleSize;
  /** Cedar policies and quotas (bench/governance-report.ts). */
  governance: GovernanceResult;
  lambdaMemory: MemoryRecommendation;
}

const FRAMEWORK_NAMES: Record<Framework | Reference | "boundloop-traced", string> = {
  "boundloop-traced": "boundloop with tracing on (SDK, batch processor, spans dropped)",
  boundloop: "boundloop (ours)",
  "openai-agents": "@openai/agents (chat completions)",
  "ai-sdk": "AI SDK generateText",
  "bare-fetch": "bare fetch, no framework (transport floor)",
  "openai-sdk": "openai SDK on boundloop's client, no loop",
};

/** The P1 row's note on the openai SDK reference: it alone on our client, and ours above it (µs a cycle). */
function sdkNote(p1: LoopOverheadResult): string {
  const sdk = p1.frameworks["openai-sdk"]?.overheadPerCycleUs.median;
  if (sdk === undefined || p1.aboveSdkUs === undefined) return "";
  return `; the openai SDK alone on our client ${sdk} µs, ours ${p1.aboveSdkUs} µs above it`;
}

const SHORT_NAMES: Record<Exclude<Framework, "boundloop">, string> = {
  "openai-agents": "agents",
  "ai-sdk": "AI SDK",
};

const VARIANT_NAMES: Record<ColdStartVariant, string> = {
  boundloop: "boundloop, deployed bundle",
  hello: "bare Hono hello world",
  naive: "naive eager bundle",
  "naive-zod-namespace": "naive eager, `import * as z`",
  "boundloop-one-file": "boundloop in one file (not deployed)",
  "boundloop-traced": "boundloop, deployed bundle, TRACING=otlp",
  "boundloop-bedrock": "boundloop, deployed bundle, MODEL_PROVIDER=bedrock",
};

/**
 * The headline table: each benchmark's key figure side by side with its peer, the goal where the issue
 * sets one, and whether it is met.
 */

export function goalsTable(report: BenchReport): string {
  const { p1LoopOverhead: p1, p2ParallelTools: p2, p3DynamoDb: p3, p4BundleColdStart: p4 } = report;
  const { p5Memory: p5, load } = report;
  const ours = p1.frameworks.boundloop.overheadPerCycleUs.median;
  const peer = p1.frameworks[p1.fastestPeer].overheadPerCycleUs.median;
  const otherPeer = p1.fastestPeer === "ai-sdk" ? "openai-agents" : "ai-sdk";
  const phases = Object.entries(p3.requestsPerRecordedInvoice);
  const tool = phases.find(([name]) => name.startsWith("boundloop recordInvoice"))?.[1];
  const powertools = phases.find(([name]) => name.startsWith("Powertools"))?.[1];
  const loadRow = (latency: number) => {
    const run = load.runs.find((r) => r.modelLatencyMs === latency);
    return run ? `${run.runsPerSecond} runs/s, p99 ${run.latencyMs.p99} ms` : "–";
  };
  return table(
    ["figure", "goal", "measured (peer)", "met"],
    [
      [
        "P1 loop overhead per cycle above the transport floor, ours ÷ fastest peer (net); ours ÷ floor",
        `≤ ${P1_NET_GOAL}; ≤ ${P1_FLOOR_GOAL}`,
        `${p1.goal.ratio}; ${p1.goal.overFloor}: ${ours} µs vs ${SHORT_NAMES[p1.fastestPeer]} ${peer} µs (${SHORT_NAMES[otherPeer]} ${p1.frameworks[otherPeer].overheadPerCycleUs.median} µs), floor ${p1.frameworks["bare-fetch"].overheadPerCycleUs.median} µs; gross ratio ${p1.grossRatio ?? p1.ratioToPeer[p1.fastestPeer]}${sdkNote(p1)}`,
        yes(p1.goal.met),
      ],
      [
        "P2 three 200 ms tools: tool phase ÷ 200 ms",
        "≤ 1.1",
        `${p2.goal.ratio} (agents ${p2.frameworks["openai-agents"].ratio}, AI SDK ${p2.frameworks["ai-sdk"].ratio})`,
        yes(p2.goal.met),
      ],
      [
        "P3 DynamoDB requests / capacity per recorded invoice, first call (replay)",
        "–",
        tool && powertools
          ? `${tool.first.requests} req, ${tool.first.consumedCapacityUnits} CU (${tool.replay.requests} req) vs Powertools ${powertools.first.requests} req, ${powertools.first.consumedCapacityUnits} CU (${powertools.replay.requests} req): ${(tool.first.requests / powertools.first.requests).toFixed(2)}×`
          : "–",
        "–",
      ],
      [
        "P4 deployed bundle",
        "≤ 1.2 MB",
        `${kb(p4.goals.bundle.bytes)} (naive ${kb(p4.variants.naive.bytes)})`,
        yes(p4.goals.bundle.met),
      ],
      [
        "P4 cold init + first request, ÷ naive bundle",
        "≤ 0.7",
        `${p4.goals.coldStart.ratio}: ${p4.variants.boundloop.healthzAtMs.median} ms vs ${p4.variants.naive.healthzAtMs.median} ms (bare Hono ${p4.variants.hello.healthzAtMs.median} ms); in one file ${p4.ratioToNaive["boundloop-one-file"]}`,
        yes(p4.goals.coldStart.met),
      ],
      [
        "P1 with tracing on ÷ off (ours, per cycle)",
        "≤ 1.3",
        `${p1.tracing.ratio}: ${p1.frameworks["boundloop-traced"].overheadPerCycleUs.median} µs vs ${ours} µs`,
        yes(p1.tracing.met),
      ],
      [
        "P4 cold start with TRACING=otlp ÷ off (/healthz; first run)",
        "–",
        `${round2(p4.variants["boundloop-traced"].healthzAtMs.median / p4.variants.boundloop.healthzAtMs.median)}: ${p4.variants["boundloop-traced"].healthzAtMs.median} ms vs ${p4.variants.boundloop.healthzAtMs.median} ms; run at ${p4.variants["boundloop-traced"].runAtMs?.median} ms vs ${p4.variants.boundloop.runAtMs?.median} ms`,
        "–",
      ],
      [
        "P4 MODEL_PROVIDER=bedrock vs openai-compatible (same bundle): cold init + first request, + first run",
        "–",
        `${kb(p4.variants["boundloop-bedrock"].totalBytes)}; ${p4.variants["boundloop-bedrock"].healthzAtMs.median} ms vs ${p4.variants.boundloop.healthzAtMs.median} ms; run answered at ${p4.variants["boundloop-bedrock"].runAtMs?.median ?? "–"} ms vs ${p4.variants.boundloop.runAtMs?.median ?? "–"} ms (CPU ${p4.variants["boundloop-bedrock"].cpuMsAtRun?.median ?? "–"} vs ${p4.variants.boundloop.cpuMsAtRun?.median ?? "–"} ms)`,
        "–",
      ],
      [
        "P5 peak RSS of a 5-cycle run",
        "–",
        `${p5.frameworks.boundloop.maxRssMb.median} MB vs agents ${p5.frameworks["openai-agents"].maxRssMb.median} MB (${p5.ratioToPeer["openai-agents"]}×), AI SDK ${p5.frameworks["ai-sdk"].maxRssMb.median} MB (${p5.ratioToPeer["ai-sdk"]}×); deployed handler ${p5.deployedHandler.maxRssMb.median} MB`,
        "–",
      ],
      [
        `Load, ${load.connections} connections, model 0 ms / 50 ms`,
        "–",
        `${loadRow(0)} / ${loadRow(50)}`,
        "–",
      ],
      ["Lambda memory (FUNCTION_MEMORY_MB)", "–", `${report.lambdaMemory.functionMemoryMb} MB`, "–"],
    ],
  );
}

/** latest.md: the goals table, then one section per benchmark. */
export function renderMarkdown(report: BenchReport): string {
  const { machine, p1LoopOverhead: p1, p2ParallelTools: p2, p3DynamoDb: p3, p4BundleColdStart: p4 } = report;
  const { p5Memory: p5, load } = report;
  const ops = (p: Phase) =>
    Object.entries(p.byOperation)
      .map(([op, count]) => `${count} ${op}`)
      .join(" + ");
  const capacity = (p: Phase) =>
    `${p.consumedCapacityUnits}${p.conditionalFailures ? ` + ${p.conditionalFailures} failed condition (billed ≥ 1 WCU, not reported)` : ""}`;
  const measured = [...Object.keys(p1.frameworks)] as Array<Framework | "bare-fetch">;
  const peerRatio = (framework: string) =>
    framework in p1.ratioToPeer
      ? `${p1.ratioToPeer[framework as "ai-sdk"]} / ${p1.ratioToPeerNetOfTransport[framework as "ai-sdk"]}`
      : "–";
  const memoryRatio = (framework: Framework) =>
    framework === "boundloop" ? "–" : String(p5.ratioToPeer[framework as "ai-sdk"]);
  return `# Benchmarks

\`${report.command}\` on ${report.generatedAt}: Node ${machine.node}, ${machine.platform}/${machine.arch}, ${machine.cpus} × ${machine.cpuModel}, ${Math.round(machine.memoryMb / 1024)} GB.
Peers: ${Object.entries(machine.peerVersions)
    .map(([name, version]) => `${name} ${version}`)
    .join(", ")}.
The machine is shared: load average (1/5/15 min) ${machine.loadavgAtStart.join(" / ")} at the start, ${machine.loadavgAtEnd.join(" / ")} at the end
(1-min load by section: ${Object.entries(machine.loadavgBySection)
    .map(([section, load]) => `${section} ${load}`)
    .join(", ")}). Absolute times move with that load; ratios come from
runs made back to back (interleaved), medians of repeated runs. Took ${Object.values(report.sectionSeconds)
    .reduce((a, b) => a + b, 0)
    .toFixed(0)} s.

${goalsTable(report)}

## P1 loop overhead per cycle

A ${p1.cyclesPerRun}-cycle run (${p1.toolCallsPerRun} tool calls: two turns of 2 parallel calls, then the answer) against the local model
server, scripted, zero latency. Each framework runs in a process of its own, as deployed (bench/loop-child.ts), with the
model server in that process; in one shared process the frameworks' garbage collections and JIT states land in each
other's timings (ours 1.4 → 2.9 ms per run next to the three others, the AI SDK 3.5 → 4.7). ${p1.warmupRuns} warm-up runs each
first, in batches of ${p1.runsPerRound} taken in turn (a process left idle for seconds while the others warm up comes back ~20 % slower for a while:
bench/loop-overhead.ts interleavedWarmUp; every client keeps getting faster over its first ~1500 runs; the curve below gives the median of each ${p1.warmupBatch} warm-up runs);
then ${p1.rounds} rounds, each a batch of ${p1.runsPerRound} back-to-back runs per framework, frameworks in rotating order, so the batches
compared run close together in time (on this shared machine the speed of every process drifts by up to 2× for seconds at a time).
Overhead = wall − model-server time (server side) − tool time, per cycle: median (min–max) of the per-round medians.
Ratio = ours ÷ that peer (median of per-round ratios); net = the same after subtracting the bare-fetch floor from both.

${table(
  [
    "client",
    "overhead µs/cycle",
    "wall ms/run",
    "model server ms/run",
    "ours ÷ peer (gross / net)",
    `warm-up µs/cycle, per ${p1.warmupBatch} runs`,
  ],
  measured.map((framework) => {
    const f = p1.frameworks[framework];
    return [
      FRAMEWORK_NAMES[framework],
      range(f.overheadPerCycleUs),
      f.wallPerRunMs,
      f.modelServerPerRunMs,
      peerRatio(framework),
      f.warmupCurveUs.join(" → "),
    ];
  }),
)}

## P2 parallel tools

One turn with ${p2.toolCalls} tool calls of ${p2.toolDelayMs} ms each; tool phase = end of the model response asking for them → start of
the next model request. Median (min–max) of ${p2.runs} runs.

${table(
  ["framework", "tool phase ms", `÷ ${p2.toolDelayMs} ms`],
  (Object.keys(p2.frameworks) as Framework[]).map((framework) => [
    FRAMEWORK_NAMES[framework],
    range(p2.frameworks[framework].toolPhaseMs),
    p2.frameworks[framework].ratio,
  ]),
)}

## P3 DynamoDB per recorded invoice

${p3.backend}, ${p3.iterations} invoices per approach; requests per HTTP attempt, capacity units as DynamoDB reports them
(\`ReturnConsumedCapacity: TOTAL\`); Powertools ${p3.powertoolsIdempotency} makeIdempotent around the same invoice put.

${table(
  ["approach", "first call", "CU", "replay", "CU", "median ms (first / replay)"],
  Object.entries(p3.requestsPerRecordedInvoice).map(([name, { first, replay }]) => [
    name,
    `${first.requests} (${ops(first)})`,
    capacity(first),
    `${replay.requests} (${ops(replay)})`,
    capacity(replay),
    `${first.medianMs} / ${replay.medianMs}`,
  ]),
)}

Write succeeded, then the function threw, the caller retried once:
${Object.entries(p3.throwAfterWriteThenRetry)
  .map(
    ([name, f]) =>
      `- ${name}: invoice write applied ${f.writesApplied}×, ${f.ledgerRows} ledger row(s), ${f.requests} requests`,
  )
  .join("\n")}

## P4 bundle and cold start

boundloop built by infra/bundle.ts, as the stack's synth builds it (ESM split into chunks along the handler's
dynamic imports, minify, source maps, names kept only where read, zod's locales reduced to English, AWS SDK
bundled); the others with the same esbuild options minus boundloop's own (no plugin, one file, every name kept).
Cold start: fresh \`node ${p4.nodeOptions}\` → import → GET /healthz (→ one POST /v1/runs: boundloop the seed
scenario, 3 model calls, DynamoDB writes; naive one completion and one put). ms since process start, median
(min–max) of ${p4.coldStarts} cold starts per variant, variants interleaved; ratio = /healthz time ÷ the naive bundle's
in the same round. Loaded = JavaScript read and parsed at start (one file is parsed whole).

${table(
  [
    "variant",
    "bundle",
    "loaded",
    "import ms",
    "/healthz at ms",
    "÷ naive",
    "run at ms",
    "CPU ms at /healthz",
    "peak RSS MB",
  ],
  (Object.keys(p4.variants) as ColdStartVariant[]).map((variant) => {
    const v = p4.variants[variant];
    return [
      VARIANT_NAMES[variant],
      v.totalBytes > v.bytes ? `${kb(v.totalBytes)} (index.mjs ${kb(v.bytes)} + chunks)` : kb(v.bytes),
      kb(v.loadedBytes),
      v.importMs.median,
      range(v.healthzAtMs),
      p4.ratioToNaive[variant],
      v.runAtMs ? v.runAtMs.median : "–",
      v.cpuMsAtHealthz.median,
      v.maxRssMb.median,
    ];
  }),
)}

Top contributors to the deployed bundle (${kb(p4.variants.boundloop.totalBytes)}; read at cold start: ${kb(p4.variants.boundloop.loadedBytes)}, of which evaluated: ${kb(p4.variants.boundloop.eagerBytes)}):

${table(
  ["package / folder", "bytes", "evaluated at cold start"],
  p4.topContributors.map((c) => [c.name, c.bytes, c.eagerBytes]),
)}

## P5 memory

Peak RSS (\`process.resourceUsage().maxRSS\`) of a fresh process making one ${p5.cycles}-cycle run (4 turns of 2 parallel tool
calls, then the answer); median (min–max) of ${p5.repetitions}. The deployed bundle serves /healthz then a ${p5.cycles}-cycle
POST /v1/runs with ${p5.deployedHandler.toolCalls} real calculateTax calls against DynamoDB Local.

${table(
  ["process", "peak RSS MB", "RSS before → after loading → after the run", "ours ÷ peer"],
  [
    ...(Object.keys(p5.frameworks) as Framework[]).map((framework) => {
      const f = p5.frameworks[framework];
      return [
        FRAMEWORK_NAMES[framework],
        range(f.maxRssMb),
        `${f.rssMbBefore} → ${f.rssMbAfterLoad} → ${f.rssMbAfterRun}`,
        memoryRatio(framework),
      ];
    }),
    [
      "deployed handler bundle",
      range(p5.deployedHandler.maxRssMb),
      `${p5.deployedHandler.rssMbAtHealthz} at /healthz`,
      "–",
    ],
  ],
)}

Lambda memory: **${report.lambdaMemory.functionMemoryMb} MB** (infra/stack.ts FUNCTION_MEMORY_MB). ${report.lambdaMemory.reason}

## Load

autocannon, ${load.connections} connections, ${load.durationSeconds} s per model latency, loopback, against bench/serve.ts (the deployed
bundle behind a minimal HTTP → v2 event server, fixed claims); the local planner model in its own process; the seed
scenario (3 model calls, 2 quotes and 1 invoice written per run); DynamoDB Local; all on the same ${machine.cpus} cores.

${table(
  ["model latency", "runs/s", "p50 ms", "p99 ms", "max ms", "non-2xx / errors", "server CPU ms/run"],
  load.runs.map((r) => [
    `${r.modelLatencyMs} ms`,
    r.runsPerSecond,
    r.latencyMs.p50,
    r.latencyMs.p99,
    r.latencyMs.max,
    `${r.non2xx} / ${r.errors + r.timeouts}`,
    r.serverCpuMsPerRun ?? "–",
  ]),
)}
`;
}
