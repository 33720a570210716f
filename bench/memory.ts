/**
 * P5: peak RSS of a 5-cycle run (4 turns of 2 parallel tool calls, then the answer), each in a fresh
 * process so the peak belongs to that run alone:
 * - per framework (ours, @openai/agents, the AI SDK) over the same instant tools: bench/memory-child.ts,
 *   built with packages external and split per framework (a child loads only its framework's code and
 *   node_modules), run by plain node
 * - the deployed bundle (P4's build) serving GET /healthz then one POST /v1/runs whose scripted model
 *   calls the real calculateTax tool twice per turn against the local DynamoDB: what a function instance
 *   peaks at, the input to infra/stack.ts's FUNCTION_MEMORY_MB
 * Peak RSS is `process.resourceUsage().maxRSS`. Children run one at a time (the model server's script is
 * global), frameworks interleaved; medians over the repetitions.
 */
import { execFile } from "node:child_process";
import { readFile, rm } from "node:fs/promises";
import { promisify } from "node:util";
import { build } from "esbuild";
import type { LocalModelServer } from "../local/model-server.js";
import { BUILD_DIR, PLAIN_BUNDLING, PROJECT_ROOT } from "./bundle.js";
import { type ColdStartEnv, coldStart } from "./cold-start.js";
import { instantTurn, scriptRun } from "./scenario/tools.js";
import { FRAMEWORKS, type Framework } from "./scenario/types.js";
import { median, round, type Summary, summarize } from "./stats.js";

const run = promisify(execFile);

/** Model calls per P5 run. */
export const MEMORY_RUN_CYCLES = 5;

/** P5 figures of one process kind (MB): peak RSS, and RSS before/after loading and after the run. */
export interface MemoryFigures {
  maxRssMb: Summary;
  rssMbBefore?: number;
  rssMbAfterLoad?: number;
  rssMbAfterRun?: number;
}

/** P5 result: per framework, the deployed handler, and ratios ours/peer of peak RSS. */
export interface MemoryResult {
  cycles: number;
  repetitions: number;
  frameworks: Record<Framework, MemoryFigures>;
  deployedHandler: MemoryFigures & { rssMbAtHealthz: number; toolCalls: number };
  ratioToPeer: Record<Exclude<Framework, "boundloop">, number>;
}

/**
 * Runs P5. `env` points the deployed bundle at the local DynamoDB and at `model` (scripted here);
 * `handlerBundle` is P4's build of functions/api/handler.ts.
 * @throws Error when a child fails or a run does not complete
 */
export async function benchMemory(
  model: LocalModelServer,
  env: ColdStartEnv,
  handlerBundle: string,
  repetitions: number,
): Promise<MemoryResult> {
  // Split, so each framework's chunk (and the packages it imports) loads only in the child that uses it.
  const childDir = `${BUILD_DIR}memory-child`;
  await rm(childDir, { recursive: true, force: true });
  await build({
    ...PLAIN_BUNDLING,
    entryPoints: { index: "bench/memory-child.ts" },
    splitting: true,
    outdir: childDir,
    outExtension: { ".js": ".mjs" },
    packages: "external",
    logLevel: "error",
  });
  const childFile = `${childDir}/index.mjs`;
  const frameworkScript = scriptRun(
    Array.from({ length: MEMORY_RUN_CYCLES - 1 }, (_, turn) => instantTurn(turn)),
  );
  const handlerScript = scriptRun(
    Array.from({ length: MEMORY_RUN_CYCLES - 1 }, (_, turn) =>
      [0, 1].map((i) => ({
        name: "calculateTax",
        args: {
          amount: `${100 * (turn * 2 + i + 1)}.00`,
          currency: "GBP",
          jurisdiction: "GB",
          taxPointDate: null,
        },
      })),
    ),
  );
  const seed = JSON.parse(
    await readFile(new URL("../events/seed-scenario.json", import.meta.url), "utf8"),
  ) as {
    body: string;
  };
  seed.body = JSON.stringify({ prompt: "Calculate the tax for these eight UK invoices." });
  const samples = new Map<Framework, Array<Record<string, number>>>(FRAMEWORKS.map((f) => [f, []]));
  const handlerSamples: Array<{ maxRssMb: number; rssMbAtHealthz: number }> = [];
  for (let n = 0; n < repetitions; n++) {
    for (const framework of FRAMEWORKS) {
      model.script(frameworkScript);
      const { stdout } = await run(process.execPath, [childFile, framework], {
        cwd: PROJECT_ROOT,
        timeout: 60_000,
        env: { PATH: process.env.PATH ?? "", BENCH_MODEL_URL: model.baseURL },
      });
      samples.get(framework)?.push(JSON.parse(stdout.trim().split("\n").at(-1) ?? "{}"));
    }
    model.script(handlerScript);
    const sample = await coldStart(
      handlerBundle,
      { ...env, modelBaseURL: model.baseURL },
      JSON.stringify(seed),
    );
    if (sample.runStatus !== 200 || sample.runOutcome !== "completed") {
      throw new Error(`deployed handler: 5-cycle run answered ${sample.runStatus} ${sample.runOutcome}`);
    }
    handlerSamples.push(sample);
  }
  const figures = (values: Array<Record<string, number>>): MemoryFigures => ({
    maxRssMb: summarize(values.map((v) => v.maxRssMb as number)),
    rssMbBefore: round(median(values.map((v) => v.rssMbBefore as number))),
    rssMbAfterLoad: round(median(values.map((v) => v.rssMbAfterLoad as number))),
    rssMbAfterRun: round(median(values.map((v) => v.rssMbAfterRun as number))),
  });
  const frameworks = Object.fromEntries(
    FRAMEWORKS.map((framework) => [framework, figures(samples.get(framework) ?? [])]),
  ) as Record<Framework, MemoryFigures>;
  const ratio = (peer: Framework) =>
    round(frameworks.boundloop.maxRssMb.median / frameworks[peer].maxRssMb.median, 2);
  return {
    cycles: MEMORY_RUN_CYCLES,
    repetitions,
    frameworks,
    deployedHandler: {
      maxRssMb: summarize(handlerSamples.map((s) => s.maxRssMb)),
      rssMbAtHealthz: round(median(handlerSamples.map((s) => s.rssMbAtHealthz))),
      toolCalls: (MEMORY_RUN_CYCLES - 1) * 2,
    },
    ratioToPeer: { "openai-agents": ratio("openai-agents"), "ai-sdk": ratio("ai-sdk") },
  };
}
