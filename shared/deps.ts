import type { Logger } from "@aws-lambda-powertools/logger";
import type { Metrics } from "@aws-lambda-powertools/metrics";
import type { DynamoDBDocumentClient } from "@aws-sdk/lib-dynamodb";
import type { ToolRegistry } from "./agent/dispatcher.js";
import type { Model } from "./agent/model.js";
import { halveHistory } from "./agent/transcript.js";
import { type ApprovalEvents, eventBridgeApprovalEvents } from "./approval-events.js";
import { type Clock, SYSTEM_CLOCK } from "./clock.js";
import type { Config } from "./config.js";
import type { DurableExecutions } from "./durable/executions.js";
import { onceUntilFailed } from "./lazy.js";
import { type ChatModelOptions, createChatModel } from "./model/chat-model.js";
import { createObservability } from "./observability.js";
import { PolicyDecisions } from "./policies/decisions.js";
import { approvalRuleThresholds, defaultPolicyText } from "./policies/defaults.js";
import { PolicySets } from "./policies/sets.js";
import { counterTotals } from "./policies/totals.js";
import { Quotas } from "./quotas/service.js";
import { createRunTracer } from "./run-trace.js";
import { abandonedRunRule } from "./runs/abandoned.js";
import { type RunEvent, RunEventHub, runEventObserver } from "./runs/events.js";
import type { RunObserver } from "./runs/observer.js";
import type { AgentRunShapes } from "./runs/run-shapes.js";
import { ApprovalStore } from "./store/approvals.js";
import { ConversationStore } from "./store/conversations.js";
import { CounterStore } from "./store/counters.js";
import { createDocumentClient } from "./store/dynamo.js";
import { IdempotencyStore } from "./store/idempotency.js";
import { LedgerStore } from "./store/ledger.js";
import { PolicySetStore } from "./store/policy-sets.js";
import { QuoteStore } from "./store/quotes.js";
import { RunEventStore } from "./store/run-events.js";
import { RunStore } from "./store/runs.js";
import { accountingTools } from "./tools/registry.js";

/**
 * What both functions use, built once per Lambda container and injectable in tests.
 * - `model`: the chat model the loop calls: OpenAI chat completions over the real openai client, on any
 *   OpenAI-compatible server (`config.model.baseURL`, model `config.model.name`), or with
 *   MODEL_PROVIDER=bedrock on Amazon Bedrock's Chat Completions endpoint (`config.model.bedrock`)
 * - `ledger`: the invoice store; `quotes`: the tax quote store; `runs`: run records and audit steps;
 *   `approvals`: approvals of paused tool calls; `idempotency`: the records of callers' keys (HTTP
 *   Idempotency-Key, MCP's key), retention IDEMPOTENCY_TTL_SECONDS: every store built once, here
 * - `approvalEvents`: where a new approval is announced (docs/approvals.md; EventBridge on AWS), by the
 *   durable runner and by MCP's one-cycle runs alike
 * - `ddb`: the DynamoDB document client those stores were built with, for operators and tests: no code
 *   of functions/ or shared/ but this module uses it (test/layers.test.ts)
 * - `logger`, `metrics`: Powertools Logger and Metrics (see shared/observability.ts)
 * - `runObservers`: observers of every run's lifecycle points (shared/runs/observer.ts); by default the
 *   run tracer (shared/run-trace.ts) and the run events (shared/runs/events.ts)
 * - `runEvents`: the runs' event logs (`store`) and this container's live readers (`hub`); `clock`
 *   (shared/clock.ts), the clock event streams wait with (heartbeats, time limits, polls) and runs keep
 *   time by (start, deadline, duration; their records, steps, events, durable spans and the quotes and
 *   invoices they make are dated by it, and the expiry of those is judged by it); tests inject their own
 */
export interface SharedDeps {
  config: Config;
  ddb: DynamoDBDocumentClient;
  model: Model;
  ledger: LedgerStore;
  quotes: QuoteStore;
  runs: RunStore<AgentRunShapes>;
  tools: ToolRegistry;
  logger: Logger;
  metrics: Metrics;
  approvals: ApprovalStore;
  idempotency: IdempotencyStore;
  approvalEvents: ApprovalEvents;
  runObservers?: readonly RunObserver[];
  runEvents: { store: RunEventStore<RunEvent>; hub: RunEventHub };
  clock: Clock;
  policies: PolicyServices;
  /** Quotas, budgets and cost (shared/quotas/service.ts); absent only where a test or bench turns them off. */
  quotas?: Quotas;
}

/**
 * The policies (docs/policies.md): `sets`, the default and tenants' sets (GET/PUT /v1/policies);
 * `decisions`, the decision service every tool call of the loop, the runner and MCP goes through;
 * `store`, the sets' versions and the shadow decisions kept.
 */
export interface PolicyServices {
  sets: PolicySets;
  decisions: PolicyDecisions;
  store: PolicySetStore;
}

/**
 * Builds the policy services: the default set from POLICIES or the APPROVAL_RULES shorthand, the
 * running totals on the counters store, shadow decisions kept as long as runs. `now` (epoch ms; default
 * the wall clock) is the runs' clock: a decision's shadow record is dated by it and its totals' day is
 * read from it, as the invoices they count are dated.
 */
export function policyServices(
  config: Config,
  ddb: DynamoDBDocumentClient,
  tools: ToolRegistry,
  logger: Logger,
  now?: () => number,
): PolicyServices {
  const store = new PolicySetStore(ddb, config.table.name, config.runs.ttlSeconds);
  const sets = new PolicySets({
    store,
    tools,
    defaultText: defaultPolicyText(config.policies.text, config.approvals.rules),
  });
  const decisions = new PolicyDecisions({
    sets,
    totals: counterTotals(new CounterStore(ddb, config.table.name, now ? { now } : {})),
    recordShadow: (tenantId, record) => store.recordShadow(tenantId, record),
    logger,
    thresholds: approvalRuleThresholds(config.policies.text ? {} : config.approvals.rules),
    ...(now ? { now } : {}),
  });
  return { sets, decisions, store };
}

/**
 * The API function's dependencies: {@link SharedDeps} and `executions`, where durable runs start, stop
 * and get their callbacks (shared/durable/executions.ts); absent when the deployment has no runner.
 * `conversations`: the heads of the conversations protocol clients name (an A2A context, an AG-UI
 * thread; shared/runs/turns.ts), retention RUN_TTL_SECONDS.
 */
export interface ApiDeps extends SharedDeps {
  executions?: DurableExecutions;
  conversations: ConversationStore;
}

/** The durable runner's dependencies: {@link SharedDeps}. */
export type RunnerDeps = SharedDeps;

/** Optional parts of {@link createApiDeps} that tests and scripts may supply. */
export interface ApiDepsOptions extends ChatModelOptions {
  /** The clock of the event streams and of runs (see {@link SharedDeps} `clock`; default: the wall clock). */
  clock?: Clock;
  /**
   * Where durable runs (`Prefer: respond-async`) start; default: Lambda durable functions on
   * RUNNER_FUNCTION_ARN when it is set, else none (the preference is then ignored and runs are synchronous).
   */
  executions?: DurableExecutions;
  /** Where MCP approvals are announced; default: EventBridge's default bus (loaded on first use). */
  approvalEvents?: ApprovalEvents;
  /**
   * The quotas' clock (epoch ms; windows, `Retry-After`), default the runs' (`clock`); a test sets it apart
   * to put the quotas' windows elsewhere; or `false` for no quotas at all (no admission, budget, usage or
   * cost: the benchmarks' "off").
   */
  quotas?: { now: () => number } | false;
}

/**
 * Builds the API function's dependencies from config ({@link sharedDeps}, and the Lambda durable
 * functions port on RUNNER_FUNCTION_ARN unless `options.executions` is given).
 */
export function createApiDeps(config: Config, options: ApiDepsOptions = {}): ApiDeps {
  const executions = options.executions ?? lambdaExecutions(config);
  const approvalEvents = options.approvalEvents ?? eventBridgeApprovalEvents(config.table.region);
  const shared = sharedDeps(config, { ...options, approvalEvents });
  const conversations = new ConversationStore(shared.ddb, config.table.name, {
    ttlSeconds: config.runs.ttlSeconds,
    now: () => shared.clock.now(),
  });
  return { ...shared, conversations, ...(executions ? { executions } : {}) };
}

/**
 * Builds the durable runner's dependencies from config ({@link sharedDeps}) and the port its approvals
 * are announced through (EventBridge in the deployed runner, a printer locally).
 */
export function createRunnerDeps(
  config: Config,
  options: ChatModelOptions & Pick<ApiDepsOptions, "clock" | "quotas"> & { approvalEvents: ApprovalEvents },
): RunnerDeps {
  return sharedDeps(config, options);
}

/**
 * The clients, stores and observers both functions build from config, each built once here: the chat
 * model (shared/model/chat-model.ts), the DynamoDB client and every store on it, the tools, logging and
 * metrics, the run observers (the tracer first, then the run events).
 */
function sharedDeps(
  config: Config,
  options: ChatModelOptions & Pick<ApiDepsOptions, "clock" | "quotas"> & { approvalEvents: ApprovalEvents },
): SharedDeps {
  const ddb = createDocumentClient(config.table);
  const clock = options.clock ?? SYSTEM_CLOCK;
  // One clock per run: its record, steps, events, trace, approvals, quotes, invoices, policy decisions'
  // records, its quotas (unless a test sets theirs apart) and the expiries judged.
  const now = () => clock.now();
  const ledger = new LedgerStore(ddb, config.table.name, { now });
  const quotes = new QuoteStore(ddb, config.table.name);
  const tools = accountingTools({
    ledger,
    quotes,
    quoteTtlSeconds: config.quotes.ttlSeconds,
    // A quote's date, "today" and its expiry, on the clock of the run that asks for it.
    clock: () => new Date(clock.now()),
  });
  const observability = createObservability(config.observability);
  const policies = policyServices(config, ddb, tools, observability.logger, now);
  const runEvents = {
    store: new RunEventStore<RunEvent>(ddb, config.table.name, now),
    hub: new RunEventHub(),
  };
  const events = runEventObserver({
    ...runEvents,
    now,
    ttlSeconds: config.runs.ttlSeconds,
    onWriteError: (error) => observability.logger.warn("run events not written", { error: error as Error }),
  });
  return {
    config,
    ddb,
    model: createChatModel(config, options),
    ledger,
    quotes,
    runs: new RunStore<AgentRunShapes>(ddb, config.table.name, config.runs.ttlSeconds, {
      shortenTranscript: halveHistory,
      promptExcerptChars: config.runs.promptExcerptChars,
      // A synchronous run killed mid-run reads as abandoned on every surface, on the deps' clock.
      readRule: abandonedRunRule(clock),
      now,
    }),
    tools,
    ...observability,
    approvals: new ApprovalStore(ddb, config.table.name, config.runs.ttlSeconds, now),
    approvalEvents: options.approvalEvents,
    idempotency: new IdempotencyStore(ddb, config.table.name, { ttlSeconds: config.idempotency.ttlSeconds }),
    // The tracer first: a run's agent span ends where the run does, before its events are written.
    runObservers: [createRunTracer(now), events],
    runEvents,
    policies,
    clock,
    ...(options.quotas === false ? {} : { quotas: quotasOf(config, ddb, options.quotas?.now ?? now) }),
  };
}

/**
 * The quotas over the table, pricing calls by the model the functions call (the Bedrock model id with
 * MODEL_PROVIDER bedrock, else MODEL); `now` is the clock (epoch ms), default Date.now.
 */
export function quotasOf(config: Config, ddb: DynamoDBDocumentClient, now?: () => number): Quotas {
  const model = config.model.provider === "bedrock" ? config.model.bedrock.modelId : config.model.name;
  return new Quotas(ddb, config.table.name, { ...config.quotas, model }, now);
}

/** The module the Lambda durable functions port is built from, loaded on the first durable run. */
type LambdaPortModule = typeof import("./durable/lambda-executions.js");

/**
 * The Lambda durable functions port on RUNNER_FUNCTION_ARN (undefined when it is unset). The Lambda
 * client's code is loaded on the first durable run, not at cold start; a failed load is retried by the
 * next call ({@link onceUntilFailed}).
 * @param importModule loads the port's module (tests inject a failing one)
 * @param clientConfig extra Lambda client settings (tests: a stand-in endpoint)
 */
export function lambdaExecutions(
  config: Config,
  importModule: () => Promise<LambdaPortModule> = () => import("./durable/lambda-executions.js"),
  clientConfig?: Parameters<LambdaPortModule["createLambdaDurableExecutions"]>[1],
): DurableExecutions | undefined {
  const aliasArn = config.durable.runnerFunctionArn;
  if (!aliasArn) return undefined;
  const load = onceUntilFailed(async () =>
    (await importModule()).createLambdaDurableExecutions(aliasArn, clientConfig),
  );
  return {
    start: async (name, payload) => (await load()).start(name, payload),
    stop: async (name) => (await load()).stop(name),
    completeCallback: async (callback, result) => (await load()).completeCallback(callback, result),
  };
}
