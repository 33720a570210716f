/**
 * Load: autocannon against the deployed handler bundle served over HTTP by bench/serve.ts (a process of
 * its own, fixed claims, v2 events), the model in another process (bench/model-child.ts: the local
 * planner, directly or behind a latency front), DynamoDB Local. The request is the seed scenario's
 * prompt (3 model calls, 2 calculateTax and 1 recordInvoice, each run records one invoice). Per model
 * latency: a short warm-up, one checked request (200, status completed), then `durationSeconds` of load
 * with `connections` connections on 127.0.0.1; runs/s counts 2xx answers.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { readFile } from "node:fs/promises";
import autocannon from "autocannon";
import { PROJECT_ROOT } from "./bundle.js";
import { round } from "./stats.js";

/** Load settings: connections, seconds of load per latency, warm-up seconds. */
export interface LoadOptions {
  connections: number;
  durationSeconds: number;
  warmupSeconds: number;
}

/** One load run: throughput and latency of answered runs (ms), and what went wrong. */
export interface LoadFigures {
  modelLatencyMs: number;
  runsPerSecond: number;
  latencyMs: { p50: number; p90: number; p99: number; max: number };
  requests: number;
  non2xx: number;
  errors: number;
  timeouts: number;
  /** CPU time (user + system) the serving process spent per answered run during the load (ms; Linux). */
  serverCpuMsPerRun: number | null;
}

/** Load result: settings and one {@link LoadFigures} per model latency. */
export interface LoadResult {
  connections: number;
  durationSeconds: number;
  runs: LoadFigures[];
}

/** A child process started with `node --import tsx <script>`, and the JSON line it printed once ready. */
async function startChild<T>(
  script: string,
  env: Record<string, string>,
): Promise<{ child: ChildProcess; info: T }> {
  const child = spawn(process.execPath, ["--enable-source-maps", "--import", "tsx", script], {
    cwd: PROJECT_ROOT,
    env: { PATH: process.env.PATH ?? "", AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: "true", ...env },
    stdio: ["ignore", "pipe", "inherit"],
  });
  let buffered = "";
  const info = await new Promise<T>((resolve, reject) => {
    child.once("exit", (code) => reject(new Error(`${script} exited with ${code} before it was ready`)));
    child.stdout?.on("data", (chunk: Buffer) => {
      buffered += chunk.toString("utf8");
      const line = buffered.split("\n")[0];
      if (buffered.includes("\n") && line) resolve(JSON.parse(line) as T);
    });
  });
  child.stdout?.resume();
  return { child, info };
}

/** CPU time (user + system, ms) a process has used, from /proc/<pid>/stat; null off Linux. */
async function cpuMsOf(pid: number | undefined): Promise<number | null> {
  if (pid === undefined) return null;
  try {
    const stat = await readFile(`/proc/${pid}/stat`, "utf8");
    // Fields after the command name (which may hold spaces): utime and stime are the 12th and 13th.
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    const ticks = Number(fields[11]) + Number(fields[12]);
    return (ticks * 1000) / CLOCK_TICKS_PER_SECOND;
  } catch {
    return null;
  }
}

/** Linux's USER_HZ (`getconf CLK_TCK`): 100 on every mainstream kernel build. */
const CLOCK_TICKS_PER_SECOND = 100;

/** Stops a child started by {@link startChild} (SIGTERM, then SIGKILL after 5 s). */
async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = once(child, "exit");
  child.kill("SIGTERM");
  const timer = setTimeout(() => child.kill("SIGKILL"), 5_000);
  await exited;
  clearTimeout(timer);
}

/**
 * Runs the load test at model latencies 0 and `BENCH_MODEL_LATENCY_MS` (50) ms.
 * @throws Error when the checked request does not complete
 */
export async function benchLoad(
  handlerBundle: string,
  env: { dynamoEndpoint: string; table: string },
  options: LoadOptions,
): Promise<LoadResult> {
  const seed = JSON.parse(
    await readFile(new URL("../events/seed-scenario.json", import.meta.url), "utf8"),
  ) as {
    body: string;
  };
  const model = await startChild<{ direct: string; delayed: string; latencyMs: number }>(
    "bench/model-child.ts",
    {
      BENCH_MODEL_LATENCY_MS: "50",
    },
  );
  const runs: LoadFigures[] = [];
  try {
    for (const [latency, baseURL] of [
      [0, model.info.direct],
      [model.info.latencyMs, model.info.delayed],
    ] as const) {
      const server = await startChild<{ url: string }>("bench/serve.ts", {
        BENCH_HANDLER_FILE: handlerBundle,
        TABLE_NAME: env.table,
        DYNAMODB_ENDPOINT: env.dynamoEndpoint,
        OPENAI_BASE_URL: baseURL,
        AWS_REGION: "eu-west-2",
      });
      try {
        const url = `${server.info.url}/v1/runs`;
        const request = {
          method: "POST" as const,
          headers: { "content-type": "application/json" },
          body: seed.body,
        };
        const check = await fetch(url, request);
        const outcome = (await check.json()) as { status?: string };
        if (check.status !== 200 || outcome.status !== "completed") {
          throw new Error(`load: the checked run answered ${check.status} ${JSON.stringify(outcome)}`);
        }
        await autocannon({ url, ...request, connections: 2, duration: options.warmupSeconds });
        const cpuBefore = await cpuMsOf(server.child.pid);
        const result = await autocannon({
          url,
          ...request,
          connections: options.connections,
          duration: options.durationSeconds,
          timeout: 30,
        });
        const cpuAfter = await cpuMsOf(server.child.pid);
        const cpuMs = cpuBefore === null || cpuAfter === null ? null : cpuAfter - cpuBefore;
        runs.push({
          modelLatencyMs: latency,
          runsPerSecond: round(result["2xx"] / result.duration, 1),
          latencyMs: {
            p50: result.latency.p50,
            p90: result.latency.p90,
            p99: result.latency.p99,
            max: result.latency.max,
          },
          requests: result.requests.total,
          non2xx: result.non2xx,
          errors: result.errors,
          timeouts: result.timeouts,
          serverCpuMsPerRun: cpuMs === null || result["2xx"] === 0 ? null : round(cpuMs / result["2xx"], 2),
        });
      } finally {
        await stopChild(server.child);
      }
    }
  } finally {
    await stopChild(model.child);
  }
  return { connections: options.connections, durationSeconds: options.durationSeconds, runs };
}
