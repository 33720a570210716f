/**
 * P1 (loop overhead per cycle) and P2 (parallel tool calls), our loop side by side with @openai/agents
 * (chat-completions model) and the Vercel AI SDK (generateText + @ai-sdk/openai-compatible), all in this
 * process against one local model server in scripted mode (zero latency).
 *
 * P1: a 3-cycle run (two turns of 2 parallel tool calls, then the answer). Overhead = run wall time −
 * model-server time (Node's HTTP diagnostics channels, server side) − tool time (union of the tools'
 * executions), divided by the cycles. Runs alternate between the frameworks (order rotated) so they meet
 * the same machine load; each round gives a median per framework and the ratio ours/peer, the report
 * quotes medians over rounds. A bare `fetch` client (no framework) gives the transport floor.
 * P2: one turn of three 200 ms tool calls: the tool phase is the time from the end of the model response
 * asking for them to the start of the next model request; reported as that time / 200 ms.
 */
import { IntervalLog, portOf, ServerClock, unionMs } from "./clock.js";
import { createScenarioRunner } from "./scenario/index.js";
import { FINAL_ANSWER, instantTools, instantTurn, scriptRun, slowTools } from "./scenario/tools.js";
import { FRAMEWORKS, type Framework, type Reference, type ScenarioRunner } from "./scenario/types.js";

/** What P1 measures: the three frameworks and the bare transport (fetch + JSON.parse, no framework). */
const MEASURED: ReadonlyArray<Framework | Reference> = [...FRAMEWORKS, "bare-fetch"];
type Measured = Framework | Reference;

import type { LocalModelServer } from "../local/model-server.js";
import { median, round, type Summary, summarize } from "./stats.js";

const MODEL = "bench-scripted";
const PROMPT = "Look up the rates and convert 100.00 GBP to EUR.";

/** P1 settings: warm-up runs per framework, rounds, runs per framework per round. */
export interface LoopOverheadOptions {
  warmupRuns: number;
  rounds: number;
  runsPerRound: number;
}

/** P1 figures of one framework: overhead per cycle (µs), and per run the wall, model and tool time (ms). */
export interface FrameworkOverhead {
  overheadPerCycleUs: Summary;
  wallPerRunMs: number;
  modelServerPerRunMs: number;
  toolPerRunMs: number;
}

/**
 * P1 result: per framework (and the bare-fetch transport floor), the ratios ours/peer (median of the
 * per-round ratios), and the same ratios net of the transport floor ((ours − floor) / (peer − floor)).
 */
export interface LoopOverheadResult {
  cyclesPerRun: number;
  toolCallsPerRun: number;
  rounds: number;
  runsPerRound: number;
  frameworks: Record<Measured, FrameworkOverhead>;
  ratioToPeer: Record<Exclude<Framework, "boundloop">, number>;
  ratioToPeerNetOfTransport: Record<Exclude<Framework, "boundloop">, number>;
  fastestPeer: Exclude<Framework, "boundloop">;
  goal: { text: string; ratio: number; met: boolean };
}

/** One measured run: overhead per cycle in µs, and its parts in ms. */
interface Sample {
  overheadPerCycleUs: number;
  wallMs: number;
  modelMs: number;
  toolMs: number;
}

/**
 * Runs P1 on `model` (a started local model server; its script is replaced). Every run is checked: the
 * final answer, 4 tool executions and 3 model requests, else it throws.
 */
export async function benchLoopOverhead(
  model: LocalModelServer,
  options: LoopOverheadOptions,
): Promise<LoopOverheadResult> {
  const turns = [instantTurn(0), instantTurn(1)];
  const script = scriptRun(turns);
  const toolCalls = turns.flat().length;
  const cycles = script.length;
  const clock = new ServerClock(portOf(model.baseURL));
  const toolLog = new IntervalLog();
  const tools = instantTools(toolLog);
  const runners = new Map<Measured, ScenarioRunner>();
  for (const framework of MEASURED) {
    runners.set(
      framework,
      await createScenarioRunner(framework, { baseURL: model.baseURL, model: MODEL, tools, maxCycles: 5 }),
    );
  }
  const runOnce = async (runner: ScenarioRunner): Promise<Sample> => {
    model.script(script);
    model.requests.length = 0;
    clock.log.take();
    toolLog.take();
    const started = performance.now();
    const answer = await runner.run(PROMPT);
    const wallMs = performance.now() - started;
    const modelIntervals = clock.log.take();
    const toolIntervals = toolLog.take();
    if (
      answer.trim() !== FINAL_ANSWER ||
      modelIntervals.length !== cycles ||
      toolIntervals.length !== toolCalls
    ) {
      throw new Error(
        `${runner.framework}: answer ${JSON.stringify(answer)}, ${modelIntervals.length} model requests, ${toolIntervals.length} tool calls`,
      );
    }
    const modelMs = unionMs(modelIntervals);
    const toolMs = unionMs(toolIntervals);
    return { overheadPerCycleUs: ((wallMs - modelMs - toolMs) / cycles) * 1000, wallMs, modelMs, toolMs };
  };

  try {
    for (const runner of runners.values()) {
      for (let n = 0; n < options.warmupRuns; n++) await runOnce(runner);
    }
    const perRound = new Map<Measured, number[]>(MEASURED.map((f) => [f, []]));
    const all = new Map<Measured, Sample[]>(MEASURED.map((f) => [f, []]));
    for (let round = 0; round < options.rounds; round++) {
      // Run by run, in rotating order, so every framework meets the same machine load.
      const samples = new Map<Measured, Sample[]>(MEASURED.map((f) => [f, []]));
      for (let n = 0; n < options.runsPerRound; n++) {
        for (let i = 0; i < MEASURED.length; i++) {
          const framework = MEASURED[(i + n + round) % MEASURED.length] as Measured;
          samples.get(framework)?.push(await runOnce(runners.get(framework) as ScenarioRunner));
        }
      }
      for (const [framework, values] of samples) {
        perRound.get(framework)?.push(median(values.map((s) => s.overheadPerCycleUs)));
        all.get(framework)?.push(...values);
      }
    }
    const frameworks = Object.fromEntries(
      MEASURED.map((framework) => {
        const samples = all.get(framework) as Sample[];
        return [
          framework,
          {
            overheadPerCycleUs: summarize(perRound.get(framework) as number[], 0),
            wallPerRunMs: round(median(samples.map((s) => s.wallMs)), 2),
            modelServerPerRunMs: round(median(samples.map((s) => s.modelMs)), 2),
            toolPerRunMs: round(median(samples.map((s) => s.toolMs)), 3),
          },
        ];
      }),
    ) as Record<Measured, FrameworkOverhead>;
    const ours = perRound.get("boundloop") as number[];
    const floor = perRound.get("bare-fetch") as number[];
    const ratio = (peer: Framework, net: boolean) =>
      round(
        median(
          ours.map((value, i) => {
            const base = net ? (floor[i] as number) : 0;
            return (value - base) / (((perRound.get(peer) as number[])[i] as number) - base);
          }),
        ),
        2,
      );
    const ratioToPeer = { "openai-agents": ratio("openai-agents", false), "ai-sdk": ratio("ai-sdk", false) };
    const ratioToPeerNetOfTransport = {
      "openai-agents": ratio("openai-agents", true),
      "ai-sdk": ratio("ai-sdk", true),
    };
    const fastestPeer =
      frameworks["openai-agents"].overheadPerCycleUs.median <= frameworks["ai-sdk"].overheadPerCycleUs.median
        ? "openai-agents"
        : "ai-sdk";
    return {
      cyclesPerRun: cycles,
      toolCallsPerRun: toolCalls,
      rounds: options.rounds,
      runsPerRound: options.runsPerRound,
      frameworks,
      ratioToPeer,
      ratioToPeerNetOfTransport,
      fastestPeer,
      goal: {
        text: "ours ≤ 0.5× the fastest peer",
        ratio: ratioToPeer[fastestPeer],
        met: ratioToPeer[fastestPeer] <= 0.5,
      },
    };
  } finally {
    clock.stop();
  }
}

/** P2 result: per framework, the tool phase of one turn of three parallel calls, in ms and ÷ tool time. */
export interface ParallelToolsResult {
  toolDelayMs: number;
  toolCalls: number;
  runs: number;
  frameworks: Record<Framework, { toolPhaseMs: Summary; ratio: number }>;
  goal: { text: string; ratio: number; met: boolean };
}

/**
 * Runs P2 on `model`: `runs` interleaved runs per framework of one turn with three `delayMs` tool calls.
 * @throws Error when a run does not answer, or does not make exactly 2 model requests and 3 tool calls
 */
export async function benchParallelTools(
  model: LocalModelServer,
  options: { runs: number; delayMs: number },
): Promise<ParallelToolsResult> {
  const clock = new ServerClock(portOf(model.baseURL));
  const toolLog = new IntervalLog();
  const tools = slowTools(toolLog, options.delayMs);
  const script = scriptRun([tools.map((tool, i) => ({ name: tool.name, args: { id: `id-${i}` } }))]);
  const phases = new Map<Framework, number[]>(FRAMEWORKS.map((f) => [f, []]));
  try {
    const runners = await Promise.all(
      FRAMEWORKS.map((framework) =>
        createScenarioRunner(framework, { baseURL: model.baseURL, model: MODEL, tools, maxCycles: 5 }),
      ),
    );
    for (let n = 0; n < options.runs; n++) {
      for (const runner of runners) {
        model.script(script);
        model.requests.length = 0;
        clock.log.take();
        toolLog.take();
        const answer = await runner.run(PROMPT);
        const [first, second] = clock.log.take();
        const executed = toolLog.take().length;
        if (answer.trim() !== FINAL_ANSWER || !first || !second || executed !== tools.length) {
          throw new Error(`${runner.framework}: P2 run did not go as scripted (${executed} tool calls)`);
        }
        phases.get(runner.framework as Framework)?.push(second.start - first.end);
      }
    }
  } finally {
    clock.stop();
  }
  const frameworks = Object.fromEntries(
    FRAMEWORKS.map((framework) => {
      const values = phases.get(framework) as number[];
      return [
        framework,
        { toolPhaseMs: summarize(values, 1), ratio: round(median(values) / options.delayMs, 3) },
      ];
    }),
  ) as ParallelToolsResult["frameworks"];
  return {
    toolDelayMs: options.delayMs,
    toolCalls: tools.length,
    runs: options.runs,
    frameworks,
    goal: {
      text: `tool phase ÷ ${options.delayMs} ms ≤ 1.1`,
      ratio: frameworks.boundloop.ratio,
      met: frameworks.boundloop.ratio <= 1.1,
    },
  };
}
