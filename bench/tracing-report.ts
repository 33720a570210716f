/** The tracing section of the bench report: P1 and P4 with tracing on and off (`npm run bench -- --only tracing`). */

import type { ColdStartResult } from "./cold-start.js";
import type { LoopOverheadResult } from "./loop-overhead.js";
import type { MachineInfo } from "./report.js";
import { kb, range, round2, table, yes } from "./report-format.js";

/** What `npm run bench -- --only tracing` measured: P1 and P4 with tracing on and off, side by side. */
export interface TracingBenchReport {
  generatedAt: string;
  command: string;
  machine: MachineInfo;
  p1LoopOverhead: LoopOverheadResult;
  p4BundleColdStart: ColdStartResult;
}

/**
 * The tracing section (bench/results/tracing.md, and the end of latest.md): P1 overhead per cycle with
 * tracing on ÷ off (goal ≤ 1.3), and the deployed bundle and its cold start with tracing off (the default
 * build, no SDK) and on (the tracing=otlp build, TRACING=otlp to a local receiver, flushed per invocation).
 */
export function renderTracing(p1: LoopOverheadResult, p4: ColdStartResult): string {
  const off = p4.variants.boundloop;
  const on = p4.variants["boundloop-traced"];
  const ratio = (a: number | undefined, b: number | undefined) =>
    a === undefined || b === undefined ? "–" : String(round2(a / b));
  return `## Tracing on ÷ off

P1: ours with tracing off, and again in a process of its own with the SDK started as the entry starts it
(batch span processor, every run one \`invoke_agent\` span with its \`chat\` and \`execute_tool\` spans, flushed
after each run as an invocation is; spans go to an exporter that drops them, so the figure is the cost of
making and batching spans, not of a network). Ratio = median of the per-round ratios (same rounds as P1).
P4: the bundle the stack deploys with tracing off (no SDK in it) and with tracing=otlp (the SDK bundled),
the latter run with TRACING=otlp and a local OTLP/HTTP receiver: the SDK chunk is read on the first
invocation, and every invocation sends its spans before it answers. Medians of ${p4.coldStarts} cold starts each, interleaved.

${table(
  ["figure", "goal", "tracing off", "tracing on", "on ÷ off"],
  [
    [
      "P1 loop overhead per cycle (µs)",
      "≤ 1.3",
      range(p1.frameworks.boundloop.overheadPerCycleUs),
      range(p1.frameworks["boundloop-traced"].overheadPerCycleUs),
      `${p1.tracing.ratio} (${yes(p1.tracing.met)})`,
    ],
    [
      "P1 wall per run (ms)",
      "–",
      p1.frameworks.boundloop.wallPerRunMs,
      p1.frameworks["boundloop-traced"].wallPerRunMs,
      ratio(p1.frameworks["boundloop-traced"].wallPerRunMs, p1.frameworks.boundloop.wallPerRunMs),
    ],
    [
      "P4 bundle, all JavaScript",
      "≤ 1.2 MB",
      kb(off.totalBytes),
      kb(on.totalBytes),
      `+${kb(on.totalBytes - off.totalBytes)}`,
    ],
    [
      "P4 read at cold start (loaded)",
      "–",
      kb(off.loadedBytes),
      kb(on.loadedBytes),
      ratio(on.loadedBytes, off.loadedBytes),
    ],
    [
      "P4 cold init + GET /healthz (ms)",
      "–",
      range(off.healthzAtMs),
      range(on.healthzAtMs),
      ratio(on.healthzAtMs.median, off.healthzAtMs.median),
    ],
    [
      "P4 … then the seed run answered (ms)",
      "–",
      off.runAtMs ? range(off.runAtMs) : "–",
      on.runAtMs ? range(on.runAtMs) : "–",
      ratio(on.runAtMs?.median, off.runAtMs?.median),
    ],
    [
      "P4 CPU by the run's answer (ms)",
      "–",
      off.cpuMsAtRun ? range(off.cpuMsAtRun) : "–",
      on.cpuMsAtRun ? range(on.cpuMsAtRun) : "–",
      ratio(on.cpuMsAtRun?.median, off.cpuMsAtRun?.median),
    ],
  ],
)}
`;
}
