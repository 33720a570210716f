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
import { ensureTable } from "../../shared/store/table.js";
import { type ScenarioOptions, type ScenarioRunner, SYSTEM_PROMPT } from "./types.js";

/**
 * Our loop as the service runs it: `runAgent` over a registry of `defineTool` tools, the OpenAI
 * chat-completions model adapter over the real openai client built by the service's own factory
 * (shared/model-client.ts createModelClient, as shared/deps.ts createApiDeps builds it: SDK retries 2, the
 * same fetch), the config's default limits with `maxCycles`, and a
 * fresh 25 s {@link Deadline} per run. With `options.policies`, every tool call is decided by the policy
 * decision service (the tenant's head is read through the sets' per-container cache); with its
 * `quotaLimits`, every run is admitted (its first hold in the admission's write), budgeted and finished
 * by the quotas as shared/runs/sync.ts does, and `lastDoorMs` says how long admission and finish took.
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
  let runs = 0;
  let doorMs = 0;
  return {
    framework: "boundloop",
    lastDoorMs: () => doorMs,
    async run(prompt) {
      runs += 1;
      const runId = `run_bench_${runs}`;
      const deadline = new Deadline(25_000);
      const input = { model, tools, security, prompt, runId, limits, systemPrompt: SYSTEM_PROMPT };
      const admitted = performance.now();
      const budget = await admitSyncRun(governed?.quotas, { ...input, deadline });
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
): Promise<{ decide: ReturnType<typeof policyServices>["decisions"]; quotas: Quotas | undefined }> {
  const config = loadConfig({
    DYNAMODB_ENDPOINT: policies.dynamoEndpoint,
    TABLE_NAME: policies.table,
    ...(policies.text === null ? {} : { POLICIES: policies.text }),
    ...policies.quotaLimits,
  });
  const ddb = createDocumentClient(config.table);
  await ensureTable(ddb, config.table.name);
  const decide = policyServices(config, ddb, tools, SILENT).decisions;
  return { decide, quotas: policies.quotaLimits ? quotasOf(config, ddb) : undefined };
}
