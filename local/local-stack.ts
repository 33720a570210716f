import { loadConfig } from "../shared/config.js";
import { createDocumentClient } from "../shared/store/dynamo.js";
import { ensureTable } from "../shared/store/table.js";
import { startLocalDynamo } from "./dynamo.js";
import { startModelServer } from "./model-server.js";

/** Local dependencies started for a run, and how to stop them. */
export interface LocalStack {
  /** Environment to give the handler: DYNAMODB_ENDPOINT, OPENAI_BASE_URL, TABLE_NAME as resolved. */
  env: Record<string, string>;
  stop(): Promise<void>;
}

/**
 * Starts what the environment does not already point at, and prints one progress line each:
 * - DynamoDB: DYNAMODB_ENDPOINT if set, else DynamoDB Local (or dynalite without Java); the table is
 *   created if missing
 * - model: OPENAI_API_KEY or OPENAI_BASE_URL if set, else the local deterministic model server
 */
export async function startLocalStack(
  env: Record<string, string | undefined> = process.env,
  log: (line: string) => void = (line) => process.stderr.write(`${line}\n`),
): Promise<LocalStack> {
  const stops: Array<() => Promise<void>> = [];
  const resolved: Record<string, string> = {};
  try {
    if (env.DYNAMODB_ENDPOINT) {
      log(`dynamodb: using ${env.DYNAMODB_ENDPOINT} (DYNAMODB_ENDPOINT)`);
    } else {
      const dynamo = await startLocalDynamo({ log });
      stops.push(() => dynamo.stop());
      resolved.DYNAMODB_ENDPOINT = dynamo.endpoint;
      log(`dynamodb: started ${dynamo.backend} at ${dynamo.endpoint} (in memory)`);
    }
    if (env.OPENAI_API_KEY || env.OPENAI_BASE_URL) {
      log(
        `model: using ${env.OPENAI_BASE_URL ?? "https://api.openai.com/v1"} (OPENAI_BASE_URL/OPENAI_API_KEY)`,
      );
    } else {
      const model = await startModelServer();
      stops.push(() => model.stop());
      resolved.OPENAI_BASE_URL = model.baseURL;
      log(`model: started the local deterministic planner (not an LLM) at ${model.baseURL}`);
    }
    const config = loadConfig({ ...env, ...resolved });
    resolved.TABLE_NAME = config.table.name;
    const ddb = createDocumentClient(config.table);
    await ensureTable(ddb, config.table.name);
    ddb.destroy();
    log(`dynamodb: table ${config.table.name} ready`);
  } catch (error) {
    await Promise.allSettled(stops.map((stop) => stop()));
    throw error;
  }
  return {
    env: resolved,
    async stop() {
      await Promise.allSettled(stops.reverse().map((stop) => stop()));
    },
  };
}
