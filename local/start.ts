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
 * approves it, and the polls show the run completing with one invoice (docs/approvals.md). With
 * `--policies <file>` too, APPROVAL_RULES is left unset (it is never set with POLICIES) and the pause comes
 * from the file's `@approval("required")` policies, the same pause (a synchronous run is handed over
 * whichever asks for the approval); a file without one is a usage error. With `--async` alone a run
 * that pauses is reported once (the approval, the policies asking, how to approve it) and the command
 * exits 1: nobody here would decide it before it expires.
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
import { startDynamoEarly } from "./dynamo.js";

// Only the command line's own modules and local/dynamo.ts load before the options are read: --help and a
// bad option answer at once, and DynamoDB Local's JVM starts before the handler's modules (zod, hono, the
// AWS SDK, openai, …) load, so the two overlap (docs/local-workflow.md, "Start-up time").

const USAGE = `usage: npm start -- ["<prompt>"] [options]

  "<prompt>"           the first run's prompt (default: the seed scenario's, events/seed-scenario.json)
  --then "<prompt>"    a further run continuing the one before (previousRunId); repeatable
  --continue <runId>   make the first run continue an earlier run (needs DYNAMODB_ENDPOINT)
  --async              send each run with Prefer: respond-async (a durable run) and poll it; a pause for
                       approval stops it with a hint (nobody approves here: use --approval)
  --watch              print each run's events live: a synchronous run streamed (Accept: text/event-stream),
                       a durable one (--async, --approval) followed with GET /v1/runs/{runId}/events
  --approval           the run pauses for approval and a second local user approves it: APPROVAL_RULES
                       {"recordInvoice":{"GBP":"1000.00"}} (unless set), or with --policies the file's
                       @approval("required") policies
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
let lambdaTimeoutMs = 0;
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
  // With a policy file the pause comes from the file's approval policies: APPROVAL_RULES is a shorthand
  // for a default set and is never set together with one (shared/config/policies.ts).
  if (values.approval && !values.policies) {
    process.env.APPROVAL_RULES ??= JSON.stringify({ recordInvoice: { GBP: "1000.00" } });
  }
  if (values.policies) {
    const { PolicyFileError, approvalPoliciesOf, readPolicyFile } = await import("./policies-file.js");
    try {
      process.env.POLICIES = await readPolicyFile(values.policies);
      if (values.approval) approvalPoliciesOf(values.policies, process.env.POLICIES);
    } catch (error) {
      throw error instanceof PolicyFileError ? new UsageError(error.message) : error;
    }
  }
  const event = JSON.parse(
    await readFile(new URL("../events/seed-scenario.json", import.meta.url), "utf8"),
  ) as APIGatewayProxyEventV2;
  const seedBody = JSON.parse(event.body ?? "{}") as { prompt: string };
  const prompts = [prompt || seedBody.prompt, ...(values.then ?? [])];

  const dynamo = startDynamoEarly(process.env, { writeClassData: true });
  const { warmHandlerModules } = await import("./warm.js");
  const warm = warmHandlerModules();
  const { startLocalStack } = await import("./local-stack.js");
  const stack = await startLocalStack(process.env, undefined, {
    writeClassData: true,
    requireModel: true,
    ...(dynamo ? { dynamo } : {}),
  });
  await warm;
  const traces = values.trace
    ? (await import("./trace-tree.js")).startTraceTree(
        ["1", "true"].includes(process.env.TRACE_CONTENT ?? ""),
      )
    : undefined;
  // The tree is this process's tracing: the handler's own (TRACING) would replace its SDK on the first
  // invocation (shared/telemetry/entry.ts) and leave the tree empty.
  if (traces && (process.env.TRACING ?? "off") !== "off") {
    console.log(`start: --trace prints the spans; TRACING=${process.env.TRACING} is not used`);
    process.env.TRACING = "off";
  }
  try {
    Object.assign(process.env, stack.env);
    const { loadConfig } = await import("../shared/config.js");
    const { localFunctionTimeout } = await import("./function-timeout.js");
    const timeout = localFunctionTimeout(loadConfig(process.env).limits);
    lambdaTimeoutMs = timeout.timeoutMs;
    if (timeout.note) console.log(`start: ${timeout.note}`);
    if (values.async || values.approval) {
      const mode = values.approval ? "approval" : "async";
      return await runDurable(event, prompts, {
        continueRunId: values.continue,
        mode,
        watch: values.watch,
        command: commandLine(process.argv.slice(2)),
      });
    }
    const { createLambdaContext, setLambdaRuntimeEnv } = await import("./lambda-context.js");
    setLambdaRuntimeEnv();
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
      await printOutcome(body);
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
 * the ledger; a run that pauses for approval, which nobody here decides, is reported once with how to
 * approve it, and ends the command (exit 1) instead of polling until the approval expires.
 * `--approval`: sends each prompt synchronously; when a run pauses (awaiting_approval) prints the
 * pending approval, approves it as a second user, then polls it to its end the same way. Returns the process exit code: 0 when every run completed.
 */
async function runDurable(
  event: APIGatewayProxyEventV2,
  prompts: string[],
  options: {
    continueRunId: string | undefined;
    mode: "async" | "approval";
    watch: boolean | undefined;
    command: string;
  },
): Promise<number> {
  const { continueRunId, mode } = options;
  const startAsync = mode === "async";
  const { createLocalDurableApi, eventForRoute } = await import("./durable-runner.js");
  const { loadConfig } = await import("../shared/config.js");
  const { createLambdaContext } = await import("./lambda-context.js");
  const { pollProgress } = await import("./poll-progress.js");
  const { approveAsSecondUser, pauseHint, pollUntilPaused } = await import("./start-approval.js");
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
        ...(startAsync ? { headers: { ...event.headers, prefer: "respond-async" } } : {}),
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
        await printOutcome(run);
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
      // A durable run that ended without reaching an approval is read by the poll below like any other.
      const ended = startAsync && paused.status !== "running" && paused.status !== "awaiting_approval";
      if (mode === "approval" && !ended && !(await approveAsSecondUser(event, paused, invoke))) return 1;
      // Its events to the end (with --async, to a pause nobody here decides) instead of polls; the poll
      // below then reads the outcome.
      if (watcher) {
        await watcher.follow(event, String(run.runId), streamed?.lastEventId, {
          stopAtPause: mode === "async",
        });
      }
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
        if (mode === "async" && body.status === "awaiting_approval") {
          console.log(pauseHint(body, options.command));
          return 1;
        }
        if (body.status !== "running" && body.status !== "awaiting_approval") {
          const steps = (body.steps ?? []) as Array<{ toolCalls: Array<{ result: ToolResult }> }>;
          await printOutcome({
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

/** The command line as typed after `npm start --`, each argument quoted when it holds a space. */
function commandLine(argv: readonly string[]): string {
  return argv.map((arg) => (/\s/.test(arg) ? JSON.stringify(arg) : arg)).join(" ");
}

/** The tenant of the seed event's JWT claims. */
function tenantOf(event: APIGatewayProxyEventV2): string {
  const claims = event.requestContext as unknown as {
    authorizer: { jwt: { claims: { tenant_id: string } } };
  };
  return claims.authorizer.jwt.claims.tenant_id;
}

async function printOutcome(body: Record<string, unknown>): Promise<void> {
  const { formatOutcome } = await import("./run-report.js");
  console.log(formatOutcome(body));
}

async function printLedger(tenantId: string): Promise<void> {
  const [{ loadConfig }, { createDocumentClient }, { LedgerStore }, { formatLedger }] = await Promise.all([
    import("../shared/config.js"),
    import("../shared/store/dynamo.js"),
    import("../shared/store/ledger.js"),
    import("./run-report.js"),
  ]);
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
  async (error: unknown) => {
    if (error instanceof UsageError) {
      console.error(`start: ${error.message}\n\n${USAGE}`);
      process.exit(2);
    }
    const [{ ConfigError }, { ModelEndpointError }] = await Promise.all([
      import("../shared/config.js"),
      import("./model-check.js"),
    ]);
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
