/**
 * `npm start [-- "<prompt>"] [--then "<prompt>" …] [--continue <runId>] [--async] [--bedrock]`: the main job. Starts the local
 * dependencies the environment does not provide, sends the seed scenario's API Gateway event
 * (events/seed-scenario.json, with the prompt replaced when one is given) through the same Lambda
 * handler the stack deploys, and prints the run's outcome, a table of tool results and the tenant's
 * ledger rows.
 *
 * Conversations (docs/conversations.md): each `--then` prompt is sent as a further run continuing the
 * one before (`previousRunId`), in the same process, e.g.
 * `npm start -- "Calculate tax on 1500 GBP for a client in the UK" --then "Now record it"`.
 * `--continue <runId>` makes the first run continue an earlier one; that run must be in the table used,
 * so it needs a DynamoDB that outlives the process (DYNAMODB_ENDPOINT), not the in-memory one started here.
 *
 * With `--async` each run is sent with `Prefer: respond-async`: a durable run on the durable execution
 * SDK's local runner (local/durable-runner.ts); this prints the 202, polls `GET /v1/runs/{runId}` every
 * `Retry-After` seconds printing a line when the status or the cycles recorded change, then the same outcome. `--then` and `--continue`
 * chain durable runs the same way (docs/durable-runs.md, Conversations).
 *
 * With `--watch` each synchronous run is sent with `Accept: text/event-stream` to the streaming entry the
 * stack deploys behind its function URL (functions/stream/, local/stream-handler.ts, a token from a local
 * issuer), and its events (docs/run-events.md) are printed as they arrive, read with eventsource-parser;
 * the stream's last event is the JSON answer, printed as without `--watch`, then the ledger. With
 * `--async` or `--approval` too, each durable run's events are followed the same way
 * (`GET /v1/runs/{runId}/events`, resumed with Last-Event-ID) in place of the polls (local/watch.ts).
 *
 * With `--approval` APPROVAL_RULES (unless set) is `{"recordInvoice":{"GBP":"1000.00"}}`, which catches
 * the seed scenario's GB invoice (gross 1800.00 GBP): the synchronous request is answered 202 with the
 * paused run (`awaiting_approval`, the preview), a second local user (`usr_approver_01`, billing:approve)
 * approves it, and the polls show the run completing with one invoice (docs/approvals.md).
 *
 * With `--bedrock` (or MODEL_PROVIDER=bedrock) the model is called as a Bedrock deploy calls it: Bedrock's
 * OpenAI-compatible endpoint with short-term API keys the function makes from its AWS credentials, here
 * the local Bedrock stand-in, which verifies each key's SigV4 signature (local/bedrock-stand-in.ts).
 *
 * The function timeout of the local Lambda context follows RUN_TIMEOUT_MS (local/function-timeout.ts):
 * the deployed 29 s, or more when RUN_TIMEOUT_MS needs it (a slow local model), with a line saying so.
 * `--help` prints the usage; a bad option prints one line and the usage (exit status 2).
 *
 * With `--trace` the runs are traced in process (docs/tracing.md) and their span tree is printed at the
 * end: names, durations and key attributes (TRACE_CONTENT=true adds the content attributes to the spans).
 */
import { readFile } from "node:fs/promises";
import { parseArgs } from "node:util";
import type { APIGatewayProxyEventV2, APIGatewayProxyResultV2 } from "aws-lambda";
import type { ApiEvent } from "../functions/api/handler.js";
import type { ToolResult } from "../shared/agent/result.js";
import { ConfigError, FUNCTION_TIMEOUT_SECONDS, loadConfig } from "../shared/config.js";
import { createDocumentClient } from "../shared/store/dynamo.js";
import { LedgerStore } from "../shared/store/ledger.js";
import { localFunctionTimeout } from "./function-timeout.js";
import { createLambdaContext } from "./lambda-context.js";
import { startLocalStack } from "./local-stack.js";
import { ModelEndpointError } from "./model-check.js";
import { PolicyFileError, readPolicyFile } from "./policies-file.js";
import { pollProgress } from "./poll-progress.js";
import { formatLedger, formatOutcome } from "./run-report.js";
import { startTraceTree } from "./trace-tree.js";
import { warmHandlerModules } from "./warm.js";

const USAGE = `usage: npm start -- ["<prompt>"] [options]

  "<prompt>"           the first run's prompt (default: the seed scenario's, events/seed-scenario.json)
  --then "<prompt>"    a further run continuing the one before (previousRunId); repeatable
  --continue <runId>   make the first run continue an earlier run (needs DYNAMODB_ENDPOINT)
  --async              send each run with Prefer: respond-async (a durable run) and poll it
  --watch              print each run's events live: a synchronous run streamed (Accept: text/event-stream),
                       a durable one (--async, --approval) followed with GET /v1/runs/{runId}/events
  --approval           set APPROVAL_RULES to {"recordInvoice":{"GBP":"1000.00"}} (unless set): the run
                       pauses, a second local user approves it
  --policies <file>    a Cedar policy file as the default policy set (POLICIES, docs/policies.md), checked
                       against the tools' schema first
  --bedrock            call the model as a Bedrock deploy does (MODEL_PROVIDER=bedrock): short-term keys
                       made from AWS credentials, checked by the local Bedrock stand-in
  --trace              trace the runs in process (OpenTelemetry GenAI spans, docs/tracing.md) and print
                       their span tree at the end; TRACE_CONTENT=true adds the content attributes
  -h, --help           this text

Settings come from the environment (docs/configuration.md), e.g. RUN_TIMEOUT_MS=300000 for a slow model.`;

/** A bad command line: one line and the usage, exit status 2. */
class UsageError extends Error {}

/** The function timeout of the local Lambda context (ms); set once the configuration is known. */
let lambdaTimeoutMs = FUNCTION_TIMEOUT_SECONDS * 1000;
// Lambda runs a current Node; the AWS SDK's "Node 20 support ends" notice is noise in local runs.
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= "true";
// The printed outcome is the point here: the JSON log lines and EMF metrics the function writes on AWS
// stay off unless asked for (POWERTOOLS_LOG_LEVEL=INFO npm start shows them).
process.env.POWERTOOLS_LOG_LEVEL ??= "WARN";
process.env.POWERTOOLS_METRICS_DISABLED ??= "true";

/** The command line, or a {@link UsageError} for an unknown option or a missing value. */
function parseOptions(argv: string[]) {
  try {
    return parseArgs({
      args: argv,
      options: {
        // biome-ignore lint/suspicious/noThenProperty: the CLI flag is --then; this options object is never awaited
        then: { type: "string", multiple: true },
        continue: { type: "string" },
        async: { type: "boolean" },
        approval: { type: "boolean" },
        policies: { type: "string" },
        trace: { type: "boolean" },
        bedrock: { type: "boolean" },
        watch: { type: "boolean" },
        help: { type: "boolean", short: "h" },
      },
      allowPositionals: true,
    });
  } catch (error) {
    if ((error as { code?: string }).code?.startsWith("ERR_PARSE_ARGS")) {
      throw new UsageError((error as Error).message);
    }
    throw error;
  }
}

async function main(): Promise<number> {
  const { values, positionals } = parseOptions(process.argv.slice(2));
  if (values.help) {
    console.log(USAGE);
    return 0;
  }
  const prompt = positionals.join(" ").trim();
  // The model through the Bedrock provider: the function makes short-term keys from AWS credentials and the
  // local Bedrock stand-in checks them (local/local-stack.ts), unless BEDROCK_BASE_URL points elsewhere.
  if (values.bedrock) process.env.MODEL_PROVIDER = "bedrock";
  if (values.approval) process.env.APPROVAL_RULES ??= JSON.stringify({ recordInvoice: { GBP: "1000.00" } });
  if (values.policies)
    process.env.POLICIES = await readPolicyFile(values.policies).catch((error: unknown) => {
      throw error instanceof PolicyFileError ? new UsageError(error.message) : error;
    });
  const event = JSON.parse(
    await readFile(new URL("../events/seed-scenario.json", import.meta.url), "utf8"),
  ) as APIGatewayProxyEventV2;
  const seedBody = JSON.parse(event.body ?? "{}") as { prompt: string };
  const prompts = [prompt || seedBody.prompt, ...(values.then ?? [])];

  const warm = warmHandlerModules();
  const stack = await startLocalStack(process.env, undefined, { writeClassData: true, requireModel: true });
  await warm;
  const traces = values.trace ? startTraceTree(process.env.TRACE_CONTENT === "true") : undefined;
  try {
    Object.assign(process.env, stack.env);
    const timeout = localFunctionTimeout(loadConfig(process.env).limits);
    lambdaTimeoutMs = timeout.timeoutMs;
    if (timeout.note) console.log(`start: ${timeout.note}`);
    if (values.async || values.approval) {
      const mode = values.approval ? "approval" : "async";
      return await runDurable(event, prompts, { continueRunId: values.continue, mode, watch: values.watch });
    }
    const { handler } = await import("../functions/api/handler.js");
    const watcher = values.watch ? await (await import("./watch.js")).startWatcher(event) : undefined;
    let previousRunId = values.continue;
    for (const next of prompts) {
      event.body = JSON.stringify({ prompt: next, ...(previousRunId ? { previousRunId } : {}) });
      const result = watcher
        ? await watcher.send(event)
        : ((await handler(event as unknown as ApiEvent, createLambdaContext(lambdaTimeoutMs))) as Exclude<
            APIGatewayProxyResultV2,
            string
          >);
      const body = JSON.parse(result.body ?? "{}") as Record<string, unknown>;
      if (result.statusCode !== 200) {
        console.log(`HTTP ${result.statusCode}\n${JSON.stringify(body, null, 2)}`);
        if (result.statusCode === 404 && values.continue && !process.env.DYNAMODB_ENDPOINT) {
          console.log(
            "\n--continue needs the table holding that run: set DYNAMODB_ENDPOINT to a DynamoDB that outlives this process, or chain prompts with --then.",
          );
        }
        return 1;
      }
      printOutcome(body);
      previousRunId = String(body.runId);
    }
    await printLedger(tenantOf(event));
    return 0;
  } finally {
    if (traces) {
      console.log("\nSpans (OpenTelemetry GenAI conventions, docs/tracing.md):");
      traces.print();
      await traces.sdk.shutdown();
    }
    await stack.stop();
  }
}

/**
 * `--async`: sends each prompt with Prefer: respond-async (each after the first continuing the run before
 * it, the first continuing `previousRunId` when given), polls each run to its end and prints it, then
 * the ledger. `--approval`: sends each prompt synchronously; when a run pauses (202, awaiting_approval)
 * prints the pending approval, approves it as a second user, then polls it to its end the same way.
 * Returns the process exit code: 0 when every run completed.
 */
async function runDurable(
  event: APIGatewayProxyEventV2,
  prompts: string[],
  options: { continueRunId: string | undefined; mode: "async" | "approval"; watch: boolean | undefined },
): Promise<number> {
  const { continueRunId, mode } = options;
  const { createLocalDurableApi, eventForRoute } = await import("./durable-runner.js");
  const api = createLocalDurableApi(loadConfig(process.env));
  const watcher = options.watch
    ? await (await import("./watch.js")).startWatcher(event, api.executions)
    : undefined;
  try {
    const invoke = async (request: APIGatewayProxyEventV2) =>
      (await api.handler(request as unknown as ApiEvent, createLambdaContext(lambdaTimeoutMs))) as Exclude<
        APIGatewayProxyResultV2,
        string
      >;
    let previousRunId = continueRunId;
    for (const next of prompts) {
      const request = {
        ...event,
        ...(mode === "async" ? { headers: { ...event.headers, prefer: "respond-async" } } : {}),
        body: JSON.stringify({ prompt: next, ...(previousRunId ? { previousRunId } : {}) }),
      };
      // --approval --watch streams the request itself, so the events up to the pause print as they happen.
      const streamed = mode === "approval" && watcher ? await watcher.send(request) : undefined;
      const started = streamed ?? (await invoke(request));
      const run = JSON.parse(started.body ?? "{}") as Record<string, unknown>;
      const headers = {
        location: `/v1/runs/${String(run.runId)}`,
        "retry-after": "1",
        ...((started as { headers?: Record<string, string> }).headers ?? {}),
      };
      if (mode === "approval" && started.statusCode === 200) {
        // No call of this run needed approval: it completed within the request.
        printOutcome(run);
        previousRunId = String(run.runId);
        continue;
      }
      if (started.statusCode !== 202) {
        console.log(`HTTP ${started.statusCode}\n${JSON.stringify(run, null, 2)}`);
        return 1;
      }
      // A streamed hand-over may answer before the runner recorded the pause: read the run until it has.
      const paused =
        run.status === "running" && mode === "approval"
          ? await pollUntilPaused(invoke, eventForRoute(event, "GET", headers.location))
          : run;
      console.log(
        `\nHTTP 202 Accepted: run ${String(run.runId)} is ${String(paused.status)}; Location: ${headers.location}, Retry-After: ${headers["retry-after"]} s`,
      );
      if (mode === "approval" && !(await approveAsSecondUser(event, paused, invoke))) return 1;
      // Its events to the end instead of polls; the one poll below then reads the outcome.
      if (watcher) await watcher.follow(event, String(run.runId), streamed?.lastEventId);
      const poll = eventForRoute(event, "GET", String(headers.location));
      const progress = pollProgress();
      for (;;) {
        const response = await invoke(poll);
        const body = JSON.parse(response.body ?? "{}") as Record<string, unknown>;
        const retryAfter = ((response.headers ?? {}) as Record<string, string>)["retry-after"];
        const line = progress(
          {
            httpStatus: response.statusCode ?? 0,
            status: String(body.status),
            cycles: body.cyclesRecorded as number,
          },
          Date.now(),
        );
        if (line) console.log(line);
        if (body.status !== "running" && body.status !== "awaiting_approval") {
          const steps = (body.steps ?? []) as Array<{ toolCalls: Array<{ result: ToolResult }> }>;
          printOutcome({
            ...body,
            toolResults: steps.flatMap((step) => step.toolCalls.map((call) => call.result)),
          });
          if (body.status !== "completed") return 1;
          break;
        }
        await new Promise((resolve) => setTimeout(resolve, Number(retryAfter ?? "1") * 1000));
      }
      previousRunId = String(run.runId);
    }
    await printLedger(tenantOf(event));
    return 0;
  } finally {
    await api.stop();
  }
}

/** `GET /v1/runs/{runId}` (`poll`) every 200 ms until the run is no longer `running`, at most 30 s; its body. */
async function pollUntilPaused(
  invoke: (request: APIGatewayProxyEventV2) => Promise<Exclude<APIGatewayProxyResultV2, string>>,
  poll: APIGatewayProxyEventV2,
): Promise<Record<string, unknown>> {
  for (let tries = 0; ; tries++) {
    const body = JSON.parse((await invoke(poll)).body ?? "{}") as Record<string, unknown>;
    if (body.status !== "running" || tries >= 150) return body;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

/** The tenant of the seed event's JWT claims. */
function tenantOf(event: APIGatewayProxyEventV2): string {
  const claims = event.requestContext as unknown as {
    authorizer: { jwt: { claims: { tenant_id: string } } };
  };
  return claims.authorizer.jwt.claims.tenant_id;
}

/**
 * Prints the paused run's pending approval (the backend's preview) and approves it as `usr_approver_01`
 * (billing:approve, same tenant: the four-eyes rule keeps the run's own user out). False when the run
 * did not pause or the approval failed.
 */
async function approveAsSecondUser(
  event: APIGatewayProxyEventV2,
  run: Record<string, unknown>,
  invoke: (request: APIGatewayProxyEventV2) => Promise<Exclude<APIGatewayProxyResultV2, string>>,
): Promise<boolean> {
  const pending = (run.pendingApprovals ?? []) as Array<{
    approvalId: string;
    toolName: string;
    requestedBy: string;
    expiresAt: string;
    preview: Record<string, string>;
  }>;
  const approval = pending[0];
  if (run.status !== "awaiting_approval" || !approval) {
    console.log(`The run did not pause for approval (status ${String(run.status)}).`);
    return false;
  }
  const { preview } = approval;
  console.log(
    `Pending approval ${approval.approvalId}: ${approval.toolName} requested by ${approval.requestedBy}, ` +
      `preview subtotal ${preview.subtotal}, tax ${preview.taxAmount}, gross ${preview.grossTotal} ${preview.currency} ` +
      `(threshold ${preview.threshold} ${preview.currency}), expires ${approval.expiresAt}`,
  );
  const { eventForRoute } = await import("./durable-runner.js");
  const decision = eventForRoute(
    event,
    "POST",
    `/v1/runs/${String(run.runId)}/approvals/${approval.approvalId}`,
  );
  const claims = (
    decision.requestContext as unknown as { authorizer: { jwt: { claims: Record<string, string> } } }
  ).authorizer.jwt.claims;
  Object.assign(claims, { sub: "usr_approver_01", scope: "billing:approve" });
  decision.body = JSON.stringify({ decision: "approve", reason: "Checked against the purchase order." });
  const response = await invoke(decision);
  const body = JSON.parse(response.body ?? "{}") as Record<string, unknown>;
  console.log(
    `Approval by usr_approver_01: HTTP ${response.statusCode}, status ${String(body.status ?? body.code)}, decided at ${String(body.decidedAt)}`,
  );
  return response.statusCode === 200;
}

function printOutcome(body: Record<string, unknown>): void {
  console.log(formatOutcome(body));
}

async function printLedger(tenantId: string): Promise<void> {
  const config = loadConfig(process.env);
  const ddb = createDocumentClient(config.table);
  try {
    const invoices = await new LedgerStore(ddb, config.table.name).list(tenantId);
    console.log(formatLedger(tenantId, invoices));
  } finally {
    ddb.destroy();
  }
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    if (error instanceof UsageError) {
      console.error(`start: ${error.message}\n\n${USAGE}`);
      process.exit(2);
    }
    // A bad configuration names its variables, an unusable model endpoint its cause: the message says it
    // all. Anything else is a bug: its stack.
    console.error(
      error instanceof ConfigError || error instanceof ModelEndpointError
        ? `start: ${error.message}`
        : error instanceof Error
          ? (error.stack ?? error.message)
          : String(error),
    );
    process.exit(1);
  },
);
