/**
 * P4: bundle size and cold start. Bundles (bench/bundle.ts):
 * - boundloop: the deployed handler (functions/api/handler.ts) built by infra/bundle.ts as the stack's
 *   synth builds it: index.mjs plus chunks loaded on demand
 * - hello: a bare Hono hello world (bench/fixtures/hello-hono.ts)
 * - naive: the same dependencies imported eagerly, every client built at load (bench/fixtures/naive-eager.ts)
 * - naive (import * as z): the same, importing zod as a namespace as boundloop does, so the comparison
 *   shows what the zod import style alone is worth
 * - boundloop one file: the same build without splitting; NOT what the stack deploys: shows what reading
 *   only the chunks a request needs is worth
 * - boundloop on Bedrock: the deployed bundle itself (one bundle serves both providers) with
 *   MODEL_PROVIDER=bedrock: its run makes a short-term Bedrock API key from the environment's AWS
 *   credentials (@aws/bedrock-token-generator) and calls the local Bedrock stand-in
 *   (local/bedrock-stand-in.ts), which verifies the key's signature before the planner answers
 * The comparison bundles (hello, naive) use the same esbuild options without boundloop's own choices
 * (no zod locale plugin, one file): bench/bundle.ts PLAIN_BUNDLING.
 * A cold start is a fresh `node --enable-source-maps` (as NODE_OPTIONS sets it in the function) that
 * imports the bundle and serves GET /healthz, then (boundloop, naive) one POST /v1/runs against the local
 * DynamoDB and model server. Times are ms since the process started (`performance.now()`); variants run
 * interleaved, one cold start each in turn, and the ratios compare cold starts made back to back.
 */
import { execFile } from "node:child_process";
import { mkdir, readFile, writeFile } from "node:fs/promises";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { promisify } from "node:util";
import { API_ENTRY } from "../infra/bundle.js";
import { startBedrockStandIn } from "../local/bedrock-stand-in.js";
import { DEFAULT_BEDROCK_MODEL_ID } from "../shared/config.js";
import { BUILD_DIR, type Bundle, bundle, type Contributor, contributors, PROJECT_ROOT } from "./bundle.js";
import { median, round, type Summary, summarize } from "./stats.js";

const run = promisify(execFile);

/** The variants P4 measures, in report order. */
export const COLD_START_VARIANTS = [
  "boundloop",
  "hello",
  "naive",
  "naive-zod-namespace",
  "boundloop-one-file",
  "boundloop-traced",
  "boundloop-bedrock",
] as const;

/** One P4 variant. */
export type ColdStartVariant = (typeof COLD_START_VARIANTS)[number];

/** One cold start as the child process reports it (ms since process start, MB). */
export interface ColdSample {
  bootMs: number;
  importMs: number;
  healthzAtMs: number;
  healthzStatus: number;
  runAtMs: number | null;
  runStatus: number | null;
  runOutcome: string | null;
  cpuMsAtHealthz: number;
  cpuMsAtRun: number | null;
  rssMbAtHealthz: number;
  maxRssMb: number;
}

/** P4 figures of one variant: sizes, and medians over the cold starts. */
export interface ColdStartFigures {
  bytes: number;
  mapBytes: number;
  totalBytes: number;
  eagerBytes: number;
  lazyBytes: number;
  /** JavaScript bytes a cold start reads and parses (see `contributors`). */
  loadedBytes: number;
  /** Process start → /healthz answered: cold init plus the first request (ms). */
  healthzAtMs: Summary;
  importMs: Summary;
  /** Process start → /healthz, then one run, answered (ms); null when the variant serves no run. */
  runAtMs: Summary | null;
  /** CPU time (user + system) spent by the time /healthz was answered (ms). */
  cpuMsAtHealthz: Summary;
  /** CPU time spent by the time the run was answered (ms); null when the variant serves no run. */
  cpuMsAtRun: Summary | null;
  rssMbAtHealthz: Summary;
  maxRssMb: Summary;
}

/** P4 result: figures per variant, boundloop's top bundle contributors, ratios and goals. */
export interface ColdStartResult {
  coldStarts: number;
  nodeOptions: string;
  variants: Record<ColdStartVariant, ColdStartFigures>;
  topContributors: Contributor[];
  /** Packages boundloop's cold start evaluates (statically reachable from the entry). */
  eagerPackages: string[];
  /** Median over back-to-back pairs of (variant's /healthz time ÷ naive's). */
  ratioToNaive: Record<ColdStartVariant, number>;
  goals: {
    bundle: { text: string; bytes: number; met: boolean };
    coldStart: { text: string; ratio: number; met: boolean };
  };
}

/** What the children need: the local DynamoDB (with `table`), the local model server (planner mode). */
export interface ColdStartEnv {
  dynamoEndpoint: string;
  table: string;
  modelBaseURL: string;
  /** More environment variables of the function (the traced variant's TRACING settings). */
  extra?: Record<string, string>;
}

/** The AWS credentials the Bedrock variant's function finds in its environment (fixed, local only). */
const BENCH_AWS_CREDENTIALS = {
  accessKeyId: "ASIABENCHCOLDSTART01",
  secretAccessKey: "benchColdStartSecretAccessKey000000000000",
  sessionToken: "benchColdStartSessionToken",
};

/** Bundle size goal: 1.2 MB (decimal) with the AWS SDK bundled. */
const BUNDLE_GOAL_BYTES = 1_200_000;

/**
 * Builds the bundles and runs `coldStarts` cold starts of each variant, interleaved.
 * @throws Error when a child fails, or /healthz or a run does not answer 200 (a boundloop run must complete)
 */
export async function benchColdStart(env: ColdStartEnv, coldStarts: number): Promise<ColdStartResult> {
  const seed = await readFile(new URL("../events/seed-scenario.json", import.meta.url), "utf8");
  const fixture = await readFile(new URL("./fixtures/naive-eager.ts", import.meta.url), "utf8");
  const namespaced = fixture.replace('import { z } from "zod";', 'import * as z from "zod";');
  if (namespaced === fixture) throw new Error("naive-eager.ts no longer imports { z } from zod");
  const namespacedEntry = `${BUILD_DIR}naive-zod-namespace-entry.ts`;
  await mkdir(BUILD_DIR, { recursive: true });
  await writeFile(namespacedEntry, namespaced);
  const deployed = await bundle("boundloop", API_ENTRY, "deployed");
  const bundles: Record<ColdStartVariant, Bundle> = {
    boundloop: deployed,
    hello: await bundle("hello", "bench/fixtures/hello-hono.ts", "plain"),
    naive: await bundle("naive", "bench/fixtures/naive-eager.ts", "plain"),
    "naive-zod-namespace": await bundle("naive-zod-namespace", namespacedEntry, "plain"),
    "boundloop-one-file": await bundle("boundloop-one-file", API_ENTRY, "one-file"),
    "boundloop-traced": await bundle("boundloop-traced", API_ENTRY, "deployed-traced"),
    "boundloop-bedrock": undefined as unknown as Bundle,
  };
  bundles["boundloop-bedrock"] = bundles.boundloop;
  // The bundle the stack deploys with tracing=otlp (the SDK bundled), run with TRACING=otlp: the SDK
  // chunk is loaded on the first invocation and every invocation's spans are sent (and answered) before
  // it returns, to a local OTLP/HTTP receiver.
  const receiver = createServer((request, response) => {
    request.resume();
    request.on("end", () => response.writeHead(200, { "content-type": "application/json" }).end("{}"));
  });
  await new Promise<void>((resolve) => receiver.listen(0, "127.0.0.1", resolve));
  const tracedEnv: ColdStartEnv = {
    ...env,
    extra: {
      TRACING: "otlp",
      OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`,
    },
  };
  const standIn = await startBedrockStandIn({
    credentials: BENCH_AWS_CREDENTIALS,
    region: "eu-west-2",
    models: [DEFAULT_BEDROCK_MODEL_ID],
  });
  const bedrockEnv = {
    MODEL_PROVIDER: "bedrock",
    BEDROCK_BASE_URL: standIn.baseURL,
    AWS_ACCESS_KEY_ID: BENCH_AWS_CREDENTIALS.accessKeyId,
    AWS_SECRET_ACCESS_KEY: BENCH_AWS_CREDENTIALS.secretAccessKey,
    AWS_SESSION_TOKEN: BENCH_AWS_CREDENTIALS.sessionToken,
  };
  const serves = (variant: ColdStartVariant) => variant !== "hello";
  const samples = new Map<ColdStartVariant, ColdSample[]>(COLD_START_VARIANTS.map((v) => [v, []]));
  try {
    for (let n = 0; n < coldStarts; n++) {
      for (let i = 0; i < COLD_START_VARIANTS.length; i++) {
        const variant = COLD_START_VARIANTS[(i + n) % COLD_START_VARIANTS.length] as ColdStartVariant;
        const sample = await coldStart(
          bundles[variant].file,
          variant === "boundloop-traced" ? tracedEnv : env,
          serves(variant) ? seed : null,
          variant === "boundloop-bedrock" ? bedrockEnv : {},
        );
        const isOurs = variant.startsWith("boundloop");
        if (
          sample.healthzStatus !== 200 ||
          (serves(variant) && sample.runStatus !== 200) ||
          (isOurs && sample.runOutcome !== "completed")
        ) {
          throw new Error(`${variant}: cold start answered ${JSON.stringify(sample)}`);
        }
        samples.get(variant)?.push(sample);
      }
    }
  } finally {
    await standIn.stop();
    receiver.close();
  }
  if (standIn.keys.some((key) => key.refused !== null)) throw new Error("the Bedrock stand-in refused a key");
  const variants = Object.fromEntries(
    COLD_START_VARIANTS.map((variant) => {
      const values = samples.get(variant) as ColdSample[];
      const sizes = contributors(bundles[variant]);
      const pick = (key: keyof ColdSample) => values.map((s) => Number(s[key]));
      return [
        variant,
        {
          bytes: bundles[variant].bytes,
          mapBytes: bundles[variant].mapBytes,
          totalBytes: bundles[variant].totalBytes,
          eagerBytes: sizes.eagerBytes,
          lazyBytes: sizes.lazyBytes,
          loadedBytes: sizes.loadedBytes,
          healthzAtMs: summarize(pick("healthzAtMs")),
          importMs: summarize(pick("importMs")),
          runAtMs: serves(variant) ? summarize(pick("runAtMs")) : null,
          cpuMsAtHealthz: summarize(pick("cpuMsAtHealthz")),
          cpuMsAtRun: serves(variant) ? summarize(pick("cpuMsAtRun")) : null,
          rssMbAtHealthz: summarize(pick("rssMbAtHealthz")),
          maxRssMb: summarize(pick("maxRssMb")),
        },
      ];
    }),
  ) as Record<ColdStartVariant, ColdStartFigures>;
  const naive = samples.get("naive") as ColdSample[];
  const ratioToNaive = Object.fromEntries(
    COLD_START_VARIANTS.map((variant) => [
      variant,
      round(
        median(
          (samples.get(variant) as ColdSample[]).map(
            (s, i) => s.healthzAtMs / (naive[i] as ColdSample).healthzAtMs,
          ),
        ),
        2,
      ),
    ]),
  ) as Record<ColdStartVariant, number>;
  const ours = contributors(bundles.boundloop);
  return {
    coldStarts,
    nodeOptions: "--enable-source-maps",
    variants,
    topContributors: ours.top.slice(0, 12),
    eagerPackages: ours.top.filter((c) => c.eagerBytes > 0).map((c) => c.name),
    ratioToNaive,
    goals: {
      bundle: {
        text: "deployed bundle ≤ 1.2 MB with the AWS SDK bundled (all chunks)",
        bytes: bundles.boundloop.totalBytes,
        met: bundles.boundloop.totalBytes <= BUNDLE_GOAL_BYTES,
      },
      coldStart: {
        text: "cold init + first request ≤ 0.7× the naive bundle's",
        ratio: ratioToNaive.boundloop,
        met: ratioToNaive.boundloop <= 0.7,
      },
    },
  };
}

/** A v2 GET /healthz event like API Gateway's (the route is public: no authorizer). */
function healthzEvent(): Record<string, unknown> {
  return {
    version: "2.0",
    routeKey: "GET /healthz",
    rawPath: "/healthz",
    rawQueryString: "",
    headers: { host: "bench.execute-api.eu-west-2.amazonaws.com" },
    requestContext: {
      accountId: "123456789012",
      apiId: "bench",
      domainName: "bench.execute-api.eu-west-2.amazonaws.com",
      domainPrefix: "bench",
      http: {
        method: "GET",
        path: "/healthz",
        protocol: "HTTP/1.1",
        sourceIp: "127.0.0.1",
        userAgent: "bench",
      },
      requestId: "cold-healthz",
      routeKey: "GET /healthz",
      stage: "$default",
      time: "30/Nov/2026:06:00:00 +0000",
      timeEpoch: 1796018400000,
    },
    isBase64Encoded: false,
  };
}

/**
 * Runs one cold start of the bundle at `file` in a fresh `node --enable-source-maps`: import, GET
 * /healthz, then `runEvent` (the JSON text of a v2 event) unless it is null. Config comes from `env`,
 * plus `extraEnv` (the Bedrock variant's MODEL_PROVIDER, endpoint and AWS credentials).
 * @throws when the child fails or times out (60 s)
 */
export async function coldStart(
  file: string,
  env: ColdStartEnv,
  runEvent: string | null,
  extraEnv: Record<string, string> = {},
): Promise<ColdSample> {
  const source = `
const bootMs = performance.now();
const { handler } = await import(${JSON.stringify(`file://${file}`)});
const imported = performance.now();
const context = { getRemainingTimeInMillis: () => 29000, awsRequestId: "cold-start", functionName: "bench" };
const health = await handler(${JSON.stringify(healthzEvent())}, context);
const healthzAtMs = performance.now();
const cpu = process.cpuUsage();
const rssMbAtHealthz = process.memoryUsage().rss / 1048576;
let runAtMs = null, runStatus = null, runOutcome = null, cpuMsAtRun = null;
const runEvent = ${runEvent ?? "null"};
if (runEvent) {
  const result = await handler(runEvent, context);
  runAtMs = performance.now();
  runStatus = result.statusCode;
  const runCpu = process.cpuUsage();
  cpuMsAtRun = (runCpu.user + runCpu.system) / 1000;
  try { runOutcome = JSON.parse(result.body).status ?? null; } catch { runOutcome = null; }
}
console.log(JSON.stringify({ bootMs, importMs: imported - bootMs, healthzAtMs, healthzStatus: health.statusCode,
  runAtMs, runStatus, runOutcome, cpuMsAtHealthz: (cpu.user + cpu.system) / 1000, cpuMsAtRun, rssMbAtHealthz,
  maxRssMb: process.resourceUsage().maxRSS / 1024 }));
`;
  const { stdout } = await run(
    process.execPath,
    ["--enable-source-maps", "--input-type=module", "-e", source],
    {
      cwd: PROJECT_ROOT,
      timeout: 60_000,
      env: {
        PATH: process.env.PATH ?? "",
        AWS_REGION: "eu-west-2",
        AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: "true",
        TABLE_NAME: env.table,
        DYNAMODB_ENDPOINT: env.dynamoEndpoint,
        // A bedrock variant reads no OpenAI setting, and refuses one that is set (shared/config).
        ...(extraEnv.MODEL_PROVIDER === "bedrock" ? {} : { OPENAI_BASE_URL: env.modelBaseURL }),
        ...env.extra,
        ...extraEnv,
      },
    },
  );
  return JSON.parse(stdout.trim().split("\n").at(-1) ?? "{}") as ColdSample;
}
