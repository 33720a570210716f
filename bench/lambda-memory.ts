/**
 * The Lambda memory `npm run bench` recommends from its figures (bench/results/latest.md "Lambda memory";
 * infra/stack.ts FUNCTION_MEMORY_MB follows it).
 */
import type { ColdStartResult } from "./cold-start.js";
import type { LoadResult } from "./load.js";
import type { MemoryResult } from "./memory.js";

/** Lambda memory from the figures, with the arithmetic that chose it. */
export interface MemoryRecommendation {
  functionMemoryMb: number;
  peakRssMb: number;
  /** CPU ms a fresh process spends until /healthz is answered (least of the cold starts). */
  coldInitCpuMs: number;
  /**
   * CPU ms a fresh process spends until its first run is answered (least of the cold starts), with
   * POLICIES configured when that is more (see {@link recommendMemory}).
   */
  coldRunCpuMs: number;
  /** CPU ms per run of a warm process (load test, model latency 0). */
  warmRunCpuMs: number | null;
  reason: string;
}

/** Lambda gives a function one full vCPU at 1,769 MB and CPU in proportion below that (AWS Lambda docs). */
export const MB_PER_VCPU = 1769;

/** The memory sizes considered (MB), smallest first. */
const MEMORY_SIZES_MB = [256, 512, 1024, 1769, 3008];

/** How long the CPU-bound part of a cold start that serves a run may take on Lambda (ms). */
const COLD_RUN_BUDGET_MS = 1500;

/**
 * The function's memory: the smallest of 256, 512, 1024, 1769, 3008 MB that (1) holds twice the deployed
 * handler's peak RSS over a 5-cycle run (P5; headroom for transcripts and tool results up to their
 * caps, and GC), and (2) gives a cold start that serves a run (P4: CPU ms from process start until the
 * first run is answered, least of the cold starts: init plus the lazily loaded clients) at most 1.5 s of
 * CPU-bound time, a function getting memory / 1,769 MB of a vCPU. `policiesRunCpuMs`, the same with
 * POLICIES configured (the governance section's cold starts), counts when it is more: a deployment or a
 * tenant with policies compiles the Cedar engine in its first run, and the size must serve it too. Warm
 * runs are I/O-bound (the load test's CPU per run is reported alongside).
 */
export function recommendMemory(
  p4: ColdStartResult,
  p5: MemoryResult,
  load: LoadResult,
  policiesRunCpuMs?: number,
): MemoryRecommendation {
  const peakRssMb = p5.deployedHandler.maxRssMb.median;
  // The least contended of the cold starts: the machine is shared, and contention inflates CPU time too.
  const coldInitCpuMs = p4.variants.boundloop.cpuMsAtHealthz.min;
  const plainRunCpuMs = p4.variants.boundloop.cpuMsAtRun?.min ?? coldInitCpuMs;
  const coldRunCpuMs = Math.max(plainRunCpuMs, policiesRunCpuMs ?? 0);
  const warmRunCpuMs = load.runs.find((run) => run.modelLatencyMs === 0)?.serverCpuMsPerRun ?? null;
  const fits = (mb: number) => mb >= 2 * peakRssMb && coldRunCpuMs / (mb / MB_PER_VCPU) <= COLD_RUN_BUDGET_MS;
  const functionMemoryMb = MEMORY_SIZES_MB.find(fits) ?? (MEMORY_SIZES_MB.at(-1) as number);
  const at = (mb: number) => Math.round(coldRunCpuMs / (mb / MB_PER_VCPU));
  return {
    functionMemoryMb,
    peakRssMb,
    coldInitCpuMs,
    coldRunCpuMs,
    warmRunCpuMs,
    reason:
      `Peak RSS ${peakRssMb} MB (×2 = ${Math.round(2 * peakRssMb)} MB). A cold start that serves a run spends ` +
      `${plainRunCpuMs} ms of CPU here (${coldInitCpuMs} ms to /healthz)` +
      (policiesRunCpuMs === undefined
        ? ""
        : `, ${policiesRunCpuMs} ms with POLICIES (the Cedar engine's first run)`) +
      `; at memory/${MB_PER_VCPU} of a vCPU the more of those is ` +
      `≈ ${at(512)} ms at 512 MB, ${at(1024)} ms at 1024 MB, ${at(1769)} ms at 1769 MB. The smallest size within ` +
      `2× RSS and ${COLD_RUN_BUDGET_MS} ms is ${functionMemoryMb} MB. Warm runs are I/O-bound: ` +
      `${warmRunCpuMs ?? "?"} ms CPU per run (load test), ≈ ${
        warmRunCpuMs === null ? "?" : Math.round(warmRunCpuMs / (functionMemoryMb / MB_PER_VCPU))
      } ms at ${functionMemoryMb} MB.`,
  };
}
