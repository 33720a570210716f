import { Logger } from "@aws-lambda-powertools/logger";
import { Deadline } from "../../shared/agent/deadline.js";
import { createRegistry } from "../../shared/agent/dispatcher.js";
import { runAgent } from "../../shared/agent/loop.js";
import { defineTool } from "../../shared/agent/tool.js";
import { loadConfig } from "../../shared/config.js";
import { policyServices } from "../../shared/deps.js";
import { OpenAIChatModel } from "../../shared/model/openai-chat.js";
import { createModelClient } from "../../shared/model-client.js";
import { createDocumentClient } from "../../shared/store/dynamo.js";
import { ensureTable } from "../../shared/store/table.js";
import { type ScenarioOptions, type ScenarioRunner, SYSTEM_PROMPT } from "./types.js";

/**
 * Our loop as the service runs it: `runAgent` over a registry of `defineTool` tools, the OpenAI
 * chat-completions model adapter over the real openai client built by the service's own factory
 * (shared/model-client.ts createModelClient, as shared/deps.ts createApiDeps builds it: SDK retries 2, the
 * same fetch), the config's default limits with `maxCycles`, and a
 * fresh 25 s {@link Deadline} per run. With `options.policies`, every tool call is decided by the policy
 * decision service (the tenant's head is read through the sets' per-container cache).
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
  const decide = options.policies ? await policyDecider(options.policies, tools) : undefined;
  const security = { userId: "usr_bench", tenantId: "tenant_bench", permissions: [] };
  let runs = 0;
  return {
    framework: "boundloop",
    async run(prompt) {
      runs += 1;
      const runId = `run_bench_${runs}`;
      const deadline = new Deadline(25_000);
      try {
        const outcome = await runAgent({
          model,
          tools,
          security,
          prompt,
          runId,
          runScope: runId,
          limits,
          systemPrompt: SYSTEM_PROMPT,
          deadline,
          ...(decide ? { decide } : {}),
        });
        if (outcome.status !== "completed" || outcome.answer === null) {
          throw new Error(`boundloop run ended ${outcome.status}: ${outcome.reason}`);
        }
        return outcome.answer;
      } finally {
        deadline.dispose();
      }
    },
  };
}

/** The policy decision service as shared/deps.ts builds it, on the given DynamoDB (logs dropped). */
async function policyDecider(
  policies: NonNullable<ScenarioOptions["policies"]>,
  tools: ReturnType<typeof createRegistry>,
) {
  const config = loadConfig({
    DYNAMODB_ENDPOINT: policies.dynamoEndpoint,
    TABLE_NAME: policies.table,
    ...(policies.text === null ? {} : { POLICIES: policies.text }),
  });
  const ddb = createDocumentClient(config.table);
  await ensureTable(ddb, config.table.name);
  const logger = new Logger({ serviceName: "boundloop-bench", logLevel: "SILENT" });
  return policyServices(config, ddb, tools, logger).decisions;
}
