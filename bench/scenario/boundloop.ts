import { Logger } from "@aws-lambda-powertools/logger";
import { Deadline } from "../../shared/agent/deadline.js";
import { createRegistry } from "../../shared/agent/dispatcher.js";
import { runAgent } from "../../shared/agent/loop.js";
import { defineTool } from "../../shared/agent/tool.js";
import { loadConfig } from "../../shared/config.js";
import { policyServices, quotasOf } from "../../shared/deps.js";
import { OpenAIChatModel } from "../../shared/model/openai-chat.js";
import { createModelClient } from "../../shared/model-client.js";
import { admitSyncRun, finishBudget } from "../../shared/quotas/run-quota.js";
import type { Quotas } from "../../shared/quotas/service.js";
import { createDocumentClient } from "../../shared/store/dynamo.js";
import { RunStore } from "../../shared/store/runs.js";
import { ensureTable } from "../../shared/store/table.js";
import { type ScenarioOptions, type ScenarioRunner, SYSTEM_PROMPT } from "./types.js";

/**
 * Our loop as the service runs it: `runAgent` over a registry of `defineTool` tools, the OpenAI
 * chat-completions model adapter over the real openai client built by the service's own factory
 * (shared/model-client.ts createModelClient, as shared/deps.ts createApiDeps builds it: SDK retries 2, the
 * same fetch), the config's default limits with `maxCycles`, and a
 * fresh 25 s {@link Deadline} per run. With `options.policies` (DynamoDB Local), every tool call is
 * decided by the policy decision service (the tenant's head is read through the sets' per-container
 * cache), and every run's record is written at its start and finished at its end as the API does
 * (shared/store/runs.ts RunStore); with its `quotaLimits`, every run is also admitted (its first hold in
 * the admission's write), budgeted and finished by the quotas as shared/runs/sync.ts does. `lastDoorMs`
 * says how long the run's start and end (those writes) took. Every governed run writing its record puts
 * quotas on and off on the same footing: measured, a process that makes any DynamoDB request between runs
 * (two reads at the door, no quotas) runs the loop itself as slowly as one with quotas, so without the
 * record's writes the quotas-off side was a run no deployment makes.
 */
export async function createRunner(options: ScenarioOptions): Promise<ScenarioRunner> {
  const client = createModelClient({ apiKey: "bench", baseURL: options.baseURL, maxRetries: 2 });
  const model = new OpenAIChatModel(client, options.model);
  const tools = createRegistry(
    options.tools.map((tool) =>
      defineTool({
        name: tool.name,
        description: tool.description,
        inputSchema: tool.schema,
        isMutating: false,
        requiredPermission: undefined,
        handler: (input, _security, context) => tool.execute(input, context.signal),
      }),
    ),
  );
  const limits = { ...loadConfig({}).limits, maxCycles: options.maxCycles };
  const governed = options.policies ? await governedBy(options.policies, tools) : undefined;
  const security = { userId: "usr_bench", tenantId: "tenant_bench", permissions: [] };
  // Run ids unique per process: the children of one comparison write their records to one table.
  let runs = 0;
  let doorMs = 0;
  return {
    framework: "boundloop",
    lastDoorMs: () => doorMs,
    async run(prompt) {
      runs += 1;
      const runId = `run_bench_${process.pid}_${runs}`;
      const deadline = new Deadline(25_000);
      const input = { model, tools, security, prompt, runId, limits, systemPrompt: SYSTEM_PROMPT };
      const admitted = performance.now();
      const budget = await admitSyncRun(governed?.quotas, { ...input, deadline });
      const started = await governed?.runs.start({
        ...security,
        runId,
        prompt,
        limits: { maxCycles: limits.maxCycles, timeoutMs: limits.runTimeoutMs },
      });
      if (started && started.kind !== "written") throw new Error(`bench run ${runId} was already recorded`);
      doorMs = performance.now() - admitted;
      try {
        const outcome = await runAgent({
          ...input,
          runScope: runId,
          deadline,
          ...(governed ? { decide: governed.decide } : {}),
          ...(budget ? { budget } : {}),
        });
        if (outcome.status !== "completed" || outcome.answer === null) {
          throw new Error(`boundloop run ended ${outcome.status}: ${outcome.reason}`);
        }
        const finished = performance.now();
        const recorded = await governed?.runs.finish(security.tenantId, runId, {
          status: outcome.status,
          cycles: outcome.cycles,
          answer: outcome.answer,
          reason: outcome.reason,
          usage: outcome.usage,
          durationMs: outcome.durationMs,
          transcript: outcome.messages,
        });
        if (recorded === false) throw new Error(`bench run ${runId}: its record was not running`);
        doorMs += performance.now() - finished;
        return outcome.answer;
      } finally {
        const finished = performance.now();
        await finishBudget(budget, SILENT);
        doorMs += performance.now() - finished;
        deadline.dispose();
      }
    },
  };
}

/** The bench's logger: nothing logged. */
const SILENT = new Logger({ serviceName: "boundloop-bench", logLevel: "SILENT" });

/**
 * The policy decision service as shared/deps.ts builds it, on the given DynamoDB (logs dropped), and
 * with `quotaLimits` the quotas over the same table (shared/deps.ts quotasOf).
 */
async function governedBy(
  policies: NonNullable<ScenarioOptions["policies"]>,
  tools: ReturnType<typeof createRegistry>,
): Promise<{
  decide: ReturnType<typeof policyServices>["decisions"];
  quotas: Quotas | undefined;
  runs: RunStore;
}> {
  const config = loadConfig({
    DYNAMODB_ENDPOINT: policies.dynamoEndpoint,
    TABLE_NAME: policies.table,
    ...(policies.text === null ? {} : { POLICIES: policies.text }),
    ...policies.quotaLimits,
  });
  const ddb = createDocumentClient(config.table);
  await ensureTable(ddb, config.table.name);
  const decide = policyServices(config, ddb, tools, SILENT).decisions;
  const runs = new RunStore(ddb, config.table.name, config.runs.ttlSeconds);
  return { decide, quotas: policies.quotaLimits ? quotasOf(config, ddb) : undefined, runs };
}
