/**
 * P5 child (bundled by bench/memory.ts with packages external, run by plain node): sets up one framework
 * (argv[2]) over the benchmark tools, makes one 5-cycle run against BENCH_MODEL_URL (the parent scripted
 * it), and prints one JSON line: RSS before and after loading the framework, after the run, and the
 * process's peak RSS (MB).
 */
import { IntervalLog } from "./clock.js";
import { createScenarioRunner } from "./scenario/index.js";
import { FINAL_ANSWER, instantTools } from "./scenario/tools.js";
import type { Framework } from "./scenario/types.js";

const mb = (bytes: number) => bytes / 1_048_576;
const framework = process.argv[2] as Framework;
const rssMbBefore = mb(process.memoryUsage().rss);
const runner = await createScenarioRunner(framework, {
  baseURL: process.env.BENCH_MODEL_URL ?? "",
  model: "bench-scripted",
  tools: instantTools(new IntervalLog()),
  maxCycles: 5,
});
const rssMbAfterLoad = mb(process.memoryUsage().rss);
const answer = await runner.run("Look up the rates and convert the amounts.");
if (answer.trim() !== FINAL_ANSWER)
  throw new Error(`${framework}: unexpected answer ${JSON.stringify(answer)}`);
console.log(
  JSON.stringify({
    rssMbBefore,
    rssMbAfterLoad,
    rssMbAfterRun: mb(process.memoryUsage().rss),
    maxRssMb: process.resourceUsage().maxRSS / 1024,
  }),
);
