/**
 * Run events (docs/run-events.md), side by side in one run, also runnable alone (`npx tsx bench/events.ts
 * [--runs n]`, prints JSON): the seed scenario through the real streaming entry (functions/stream/entry.ts
 * on the local stand-in for the Lambda streaming runtime, a token from a local issuer) and through the
 * JSON path of the API handler, on the same dependencies, DynamoDB Local and local planner, interleaved.
 * - P7: ms from the request to the first `model.call.finished` event parsed by the client
 *   (eventsource-parser) ÷ ms from the request to the end of the model server's first response, measured
 *   at a proxy in front of the model server that delays each response by `modelDelayMs` (0 ms, and 100 ms
 *   for a fast model). The first event of all (`run.started`) is reported too.
 * - P8: DynamoDB requests (per HTTP attempt, bench/request-log.ts) of bench P3's keyed run (one
 *   recordInvoice, 2 cycles): (the run's own + its event batches) ÷ the run's own, for the JSON path and
 *   the streamed one. The governance requests (quota counters, the tenant's limits and policy set; the
 *   governance section counts them) are counted apart, as test/run-events-requests.test.ts does.
 * - Overhead: the streamed seed run's wall time per cycle ÷ the JSON path's.
 */
import { randomUUID } from "node:crypto";
import { readFile } from "node:fs/promises";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { pathToFileURL } from "node:url";
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2 } from "aws-lambda";
import { createParser } from "eventsource-parser";
import { createApp } from "../functions/api/app.js";
import { type ApiEvent, createHandler } from "../functions/api/app-handler.js";
import { createStreamHandler } from "../functions/stream/entry.js";
import { createDevIssuer, devAuthSettings, mintToken } from "../local/dev-auth.js";
import { startLocalDynamo } from "../local/dynamo.js";
import { quotedRecordInvoiceArgs } from "../local/fixtures.js";
import { createLambdaContext } from "../local/lambda-context.js";
import { installLambdaStreaming, invokeStreaming } from "../local/lambda-streaming.js";
import { type LocalModelServer, startModelServer } from "../local/model-server.js";
import { createTokenVerifier } from "../shared/auth/token-verifier.js";
import { loadConfig } from "../shared/config.js";
import { createApiDeps } from "../shared/deps.js";
import { ensureTable } from "../shared/store/table.js";
import { byOperation, type LoggedRequest, logRequests, operationsOf } from "./request-log.js";
import { round, type Summary, summarize } from "./stats.js";

/** The sort-key kinds (bench/request-log.ts) of the governance items: quota counters, limits, policy set. */
const GOVERNANCE_ITEMS = new Set(["COUNTER", "LIMITS", "POLICYSET"]);

/** P8 of one path: requests by who made them, and (own + events) ÷ own. */
export interface RequestsOfRun {
  total: number;
  own: number;
  events: number;
  governance: number;
  ratio: number;
  byOperation: Record<string, number>;
}

/** Splits a keyed run's requests into the run's own, its event batches and governance. */
function requestsOfRun(requests: readonly LoggedRequest[]): RequestsOfRun {
  const events = requests.filter((request) => request.item === "EVENTS").length;
  const governance = requests.filter((request) => GOVERNANCE_ITEMS.has(request.item)).length;
  const own = requests.length - events - governance;
  return {
    total: requests.length,
    own,
    events,
    governance,
    ratio: round((own + events) / own, 2),
    byOperation: byOperation(operationsOf(requests)),
  };
}

/** What {@link benchEvents} measured; times in ms. */
export interface EventsBenchResult {
  runs: number;
  p7: Array<{
    modelDelayMs: number;
    firstEventMs: Summary;
    firstModelEventMs: Summary;
    firstModelResponseMs: Summary;
    /** median of the per-run ratios firstModelEventMs ÷ firstModelResponseMs. */
    ratio: number;
  }>;
  p8: { json: RequestsOfRun; streamed: RequestsOfRun };
  overhead: { jsonMsPerCycle: Summary; streamedMsPerCycle: Summary; ratio: number };
}

/** A proxy in front of the model server that delays each response and records when each one ended. */
async function delayingProxy(target: LocalModelServer, delayMs: () => number) {
  const ended: number[] = [];
  const server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const upstream = await fetch(`${target.baseURL.replace(/\/v1$/, "")}${req.url}`, {
      method: req.method ?? "POST",
      headers: { "content-type": "application/json", authorization: req.headers.authorization ?? "" },
      ...(chunks.length > 0 ? { body: Buffer.concat(chunks) } : {}),
    });
    const body = Buffer.from(await upstream.arrayBuffer());
    await new Promise((resolve) => setTimeout(resolve, delayMs()));
    res.writeHead(upstream.status, {
      "content-type": upstream.headers.get("content-type") ?? "application/json",
    });
    res.end(body, () => ended.push(performance.now()));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    baseURL: `http://127.0.0.1:${port}/v1`,
    ended,
    stop: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/**
 * Runs the three figures, `runs` repetitions each.
 * @throws Error when a run does not end as the seed scenario (3 cycles) or P3's run (2 cycles) does
 */
export async function benchEvents(dynamoEndpoint: string, runs: number): Promise<EventsBenchResult> {
  installLambdaStreaming();
  const model = await startModelServer();
  let delay = 0;
  const proxy = await delayingProxy(model, () => delay);
  const config = loadConfig({
    DYNAMODB_ENDPOINT: dynamoEndpoint,
    TABLE_NAME: `bench-events-${randomUUID()}`,
    OPENAI_BASE_URL: proxy.baseURL,
    POWERTOOLS_LOG_LEVEL: "SILENT",
    POWERTOOLS_METRICS_DISABLED: "true",
  });
  process.env.POWERTOOLS_METRICS_DISABLED ??= "true";
  const deps = createApiDeps(config);
  await ensureTable(deps.ddb, config.table.name);
  const requests = logRequests(deps.ddb);
  const json = createHandler(deps);
  const app = createApp(deps);
  const issuer = await createDevIssuer();
  const verifier = createTokenVerifier(devAuthSettings(issuer));
  const stream = createStreamHandler(
    (request, env, ctx) => app.fetch(request, env, ctx as never),
    () => verifier,
  );
  const seed = JSON.parse(
    await readFile(new URL("../events/seed-scenario.json", import.meta.url), "utf8"),
  ) as APIGatewayProxyEventV2 & {
    requestContext: { authorizer: { jwt: { claims: Record<string, string> } } };
  };
  const claims = seed.requestContext.authorizer.jwt.claims;
  const token = await mintToken(issuer, {
    sub: claims.sub,
    tenant_id: claims.tenant_id,
    scope: claims.scope,
  });

  const postJson = async (body: object, headers: Record<string, string> = {}) => {
    const response = (await json(
      {
        ...seed,
        headers: { ...seed.headers, ...headers },
        body: JSON.stringify(body),
      } as unknown as ApiEvent,
      createLambdaContext(29_000),
    )) as APIGatewayProxyStructuredResultV2;
    return JSON.parse(response.body ?? "{}") as { cycles?: number; status?: string };
  };
  /** A streamed POST: times (ms from the request) of the first event and the first model event. */
  const postStreamed = async (body: object, headers: Record<string, string> = {}) => {
    const started = performance.now();
    const marks: { first?: number; firstModel?: number; cycles?: number } = {};
    const parser = createParser({
      onEvent: (message) => {
        marks.first ??= performance.now() - started;
        if (message.event === "model.call.finished") marks.firstModel ??= performance.now() - started;
        if (message.event === "run.finished")
          marks.cycles = (JSON.parse(message.data) as { cycles: number }).cycles;
      },
    });
    const event = {
      ...seed,
      headers: { ...seed.headers, ...headers, authorization: `Bearer ${token}`, accept: "text/event-stream" },
      body: JSON.stringify(body),
    };
    const invocation = invokeStreaming(stream, event, createLambdaContext(900_000, "boundloop-stream"));
    for await (const chunk of invocation.stream) parser.feed((chunk as Buffer).toString("utf8"));
    await invocation.done;
    return { ...marks, started, wallMs: performance.now() - started };
  };
  const seedBody = JSON.parse(seed.body ?? "{}") as object;

  try {
    // P7, at each model delay.
    const p7: EventsBenchResult["p7"] = [];
    for (const modelDelayMs of [0, 100]) {
      delay = modelDelayMs;
      model.usePlanner();
      const first: number[] = [];
      const firstModel: number[] = [];
      const response: number[] = [];
      const ratios: number[] = [];
      for (let run = 0; run < runs; run++) {
        const before = proxy.ended.length;
        const marks = await postStreamed(seedBody);
        const modelEnded = (proxy.ended[before] ?? Number.NaN) - marks.started;
        if (marks.cycles !== 3 || marks.first === undefined || marks.firstModel === undefined) {
          throw new Error(
            `P7: the streamed seed run did not complete in 3 cycles (${JSON.stringify(marks)})`,
          );
        }
        first.push(marks.first);
        firstModel.push(marks.firstModel);
        response.push(modelEnded);
        ratios.push(marks.firstModel / modelEnded);
      }
      p7.push({
        modelDelayMs,
        firstEventMs: summarize(first),
        firstModelEventMs: summarize(firstModel),
        firstModelResponseMs: summarize(response),
        ratio: round(summarize(ratios, 3).median, 3),
      });
    }
    delay = 0;

    // P8: P3's keyed run, JSON and streamed.
    const counted = async (streamed: boolean) => {
      const args = await quotedRecordInvoiceArgs(deps, {
        tenantId: claims.tenant_id as string,
        userId: claims.sub as string,
      });
      model.script([
        { toolCalls: [{ id: "call_1", name: "recordInvoice", arguments: args }] },
        { content: "Recorded." },
      ]);
      const key = { "idempotency-key": `bench-events-${randomUUID()}` };
      requests.take();
      const body = { prompt: "Record the invoice." };
      const cycles = streamed ? (await postStreamed(body, key)).cycles : (await postJson(body, key)).cycles;
      if (cycles !== 2) throw new Error(`P8: the keyed run took ${cycles} cycles, not 2`);
      return requestsOfRun(requests.take());
    };
    const jsonRequests = await counted(false);
    const streamedRequests = await counted(true);

    // Overhead per cycle, interleaved.
    model.usePlanner();
    const jsonPerCycle: number[] = [];
    const streamedPerCycle: number[] = [];
    for (let run = 0; run < runs; run++) {
      const started = performance.now();
      const body = await postJson(seedBody);
      if (body.cycles !== 3) throw new Error(`overhead: JSON run ${JSON.stringify(body)}`);
      jsonPerCycle.push((performance.now() - started) / 3);
      const marks = await postStreamed(seedBody);
      if (marks.cycles !== 3) throw new Error("overhead: the streamed run did not take 3 cycles");
      streamedPerCycle.push(marks.wallMs / 3);
    }
    const jsonMsPerCycle = summarize(jsonPerCycle);
    const streamedMsPerCycle = summarize(streamedPerCycle);
    return {
      runs,
      p7,
      p8: { json: jsonRequests, streamed: streamedRequests },
      overhead: {
        jsonMsPerCycle,
        streamedMsPerCycle,
        ratio: round(streamedMsPerCycle.median / jsonMsPerCycle.median, 2),
      },
    };
  } finally {
    deps.ddb.destroy();
    await proxy.stop();
    await model.stop();
  }
}

/** The Markdown section of bench/results/latest.md. */
export function renderEvents(result: EventsBenchResult): string {
  const count = (ops: Record<string, number>) =>
    Object.entries(ops)
      .map(([op, n]) => `${n} ${op}`)
      .join(" + ");
  const { json, streamed } = result.p8;
  const p7 = result.p7
    .map(
      (row) =>
        `| ${row.modelDelayMs} ms | ${row.firstEventMs.median} | ${row.firstModelEventMs.median} | ${row.firstModelResponseMs.median} | **${row.ratio}** |`,
    )
    .join("\n");
  return `## Run events (SSE)

bench/events.ts: the seed scenario through the real streaming entry (local stand-in for the Lambda streaming
runtime, eventsource-parser on the client side) and through the JSON path, on the same dependencies,
DynamoDB Local and local planner, ${result.runs} runs each, interleaved. Medians, ms from the request.

P7 (goal ≤ 1.1): first \`model.call.finished\` event at the client ÷ end of the model server's first
response (at a proxy that delays each response by the model delay):

| model delay | first event (run.started) | first model event | first model response | ratio |
| --- | --- | --- | --- | --- |
${p7}

P8 (goal ≤ 1.3): DynamoDB requests of bench P3's keyed run (one recordInvoice, 2 cycles), the run's own and
its event batches ÷ the run's own: JSON path **${json.ratio}**: (${json.own} + ${json.events}) ÷ ${json.own} (one event batch a
cycle); streamed **${streamed.ratio}**: (${streamed.own} + ${streamed.events}) ÷ ${streamed.own} (a stream of the request's own run takes its
events from the process, not the table). All requests: ${json.total} (${count(json.byOperation)}), of which
${json.governance} the governance section's (the day's quota counter writes; limits and policy set, read at most once a minute).

Overhead per cycle, streamed ÷ JSON: ${result.overhead.streamedMsPerCycle.median} ms ÷ ${result.overhead.jsonMsPerCycle.median} ms =
**${result.overhead.ratio}×** (min–max ${result.overhead.streamedMsPerCycle.min}–${result.overhead.streamedMsPerCycle.max} vs
${result.overhead.jsonMsPerCycle.min}–${result.overhead.jsonMsPerCycle.max}).
`;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= "true";
  const at = process.argv.indexOf("--runs");
  const runs = at === -1 ? 5 : Number(process.argv[at + 1]);
  const dynamo = await startLocalDynamo();
  try {
    const result = await benchEvents(dynamo.endpoint, runs);
    console.log(JSON.stringify(result, null, 2));
    console.log(renderEvents(result));
  } finally {
    await dynamo.stop();
  }
}
