import { type Config, loadConfig } from "../shared/config.js";
import { endpointOf } from "../shared/model/endpoint-failure.js";
import { createDocumentClient } from "../shared/store/dynamo.js";
import { ensureTable } from "../shared/store/table.js";
import { type LocalDynamo, parseDynamoBackend, startLocalDynamo } from "./dynamo.js";
import { startModelServer } from "./model-server.js";

/**
 * The AWS credentials a local Bedrock run signs its keys with when the environment has none: fixed,
 * local-only values (letters and digits in the key id, as DynamoDB Local accepts) that the stand-in
 * checks the keys against, exactly as Bedrock checks a Lambda role's.
 */
export const LOCAL_BEDROCK_CREDENTIALS = {
  accessKeyId: "LOCALBEDROCKSTANDIN1",
  secretAccessKey: "local-bedrock-stand-in-secret-access-key",
} as const;

/** A process a local stack started, so callers (and tests) can check it is gone after stop. */
export interface StartedProcess {
  name: string;
  pid: number;
}

/**
 * How a command uses its local stack: `writeClassData`: a short command (`npm start`, `npm run invoke`)
 * that may write DynamoDB Local's class-data archive when it stops (local/dynamo-class-data.ts).
 */
export interface LocalStackOptions {
  writeClassData?: boolean;
  /** Stop before any run when the model endpoint the environment names cannot be used (`npm start`). */
  requireModel?: boolean;
  /**
   * DynamoDB Local already starting (local/dynamo.ts startDynamoEarly), adopted instead of starting one:
   * stopped with the stack, or at once when the stack fails to start.
   */
  dynamo?: Promise<LocalDynamo>;
  /**
   * A model server the calling command started itself and put in `env` as OPENAI_BASE_URL (`npm run
   * eval`'s): named as such in the progress line, and not checked as an endpoint the user configured.
   */
  modelServer?: { name: string; baseURL: string };
}

/** Local dependencies started for a run, and how to stop them. */
export interface LocalStack {
  /** Environment to give the handler: DYNAMODB_ENDPOINT, OPENAI_BASE_URL, TABLE_NAME as resolved. */
  env: Record<string, string>;
  /** Child processes started (DynamoDB Local's java); dynalite and the model server run in this process. */
  processes: StartedProcess[];
  /** Stops what was started, in reverse order; safe to call twice. */
  stop(): Promise<void>;
}

/** The port of an http(s) URL, with the scheme's default when none is written. */
function portOf(url: string): string {
  const parsed = new URL(url);
  return parsed.port || (parsed.protocol === "https:" ? "443" : "80");
}

/**
 * Starts what the environment does not already point at, and prints one progress line for each,
 * naming the backend and its port:
 * - DynamoDB: DYNAMODB_ENDPOINT if set, else DynamoDB Local (java, in memory) or dynalite without
 *   Java (BOUNDLOOP_DYNAMO_BACKEND forces one); the table TABLE_NAME is created if missing
 * - model: with MODEL_PROVIDER=bedrock, BEDROCK_BASE_URL if set, else the Bedrock stand-in
 *   (local/bedrock-stand-in.ts, answering with the planner) that verifies the function's keys against the
 *   AWS credentials in the environment (or {@link LOCAL_BEDROCK_CREDENTIALS}, then set in `env`);
 *   otherwise OPENAI_API_KEY or OPENAI_BASE_URL if set (checked once: local/model-check.ts, one line),
 *   else the local deterministic model server
 * The two start side by side; the table is created once DynamoDB answers. Anything started is stopped
 * again if a later step fails.
 * @param env a process.env-like record (read, never written)
 * @param log where progress lines go (default stderr)
 * @param options see {@link LocalStackOptions}
 * @throws ConfigError when `env` is not a valid configuration; ModelEndpointError (with `requireModel`)
 *   when the model endpoint cannot be used; the launcher's error when a dependency does not start
 */
export async function startLocalStack(
  env: Record<string, string | undefined> = process.env,
  log: (line: string) => void = (line) => process.stderr.write(`${line}\n`),
  options: LocalStackOptions = {},
): Promise<LocalStack> {
  const stops: Array<() => Promise<void>> = [];
  const resolved: Record<string, string> = {};
  const processes: StartedProcess[] = [];
  try {
    // Fail on an invalid environment before starting anything.
    const { model } = loadConfig(env);
    // DynamoDB Local's JVM and the model side start side by side (the JVM is most of the wait).
    const started = await Promise.allSettled([
      startDynamo(env, log, options, { stops, resolved, processes }),
      startModel(env, model, log, options, { stops, resolved }),
    ]);
    const failed = started.find((result) => result.status === "rejected");
    if (failed) throw (failed as PromiseRejectedResult).reason;
    const config = loadConfig({ ...env, ...resolved });
    resolved.TABLE_NAME = config.table.name;
    const ddb = createDocumentClient(config.table);
    try {
      await ensureTable(ddb, config.table.name);
    } finally {
      ddb.destroy();
    }
    log(`dynamodb: table ${config.table.name} ready`);
  } catch (error) {
    await stopAll(stops, log);
    // An adopted DynamoDB Local that startDynamo never took over (the environment was invalid first).
    if (options.dynamo && !resolved.DYNAMODB_ENDPOINT)
      await options.dynamo.then(
        (dynamo) => dynamo.stop(),
        () => undefined,
      );
    throw error;
  }
  let stopped: Promise<void> | undefined;
  return {
    env: resolved,
    processes,
    stop() {
      stopped ??= stopAll(stops, log);
      return stopped;
    },
  };
}

/** What the start steps add to: stop functions, variables for the function, child processes. */
interface Started {
  stops: Array<() => Promise<void>>;
  resolved: Record<string, string>;
  processes?: StartedProcess[];
}

/** DYNAMODB_ENDPOINT when set, else DynamoDB Local (or dynalite) started in memory; one line each. */
async function startDynamo(
  env: Record<string, string | undefined>,
  log: (line: string) => void,
  options: LocalStackOptions,
  into: Started,
): Promise<void> {
  const backend = parseDynamoBackend(env.BOUNDLOOP_DYNAMO_BACKEND);
  if (env.DYNAMODB_ENDPOINT) {
    log(
      `dynamodb: using the existing endpoint ${env.DYNAMODB_ENDPOINT} on port ${portOf(env.DYNAMODB_ENDPOINT)} (DYNAMODB_ENDPOINT)`,
    );
    return;
  }
  const dynamo = await (options.dynamo ??
    startLocalDynamo({ log, backend, writeClassData: options.writeClassData }));
  into.stops.push(async () => {
    await dynamo.stop();
    log(`dynamodb: stopped ${dynamo.backend} on port ${dynamo.port}`);
  });
  into.resolved.DYNAMODB_ENDPOINT = dynamo.endpoint;
  if (dynamo.pid !== undefined) into.processes?.push({ name: "DynamoDB Local (java)", pid: dynamo.pid });
  const where = dynamo.pid === undefined ? "in this process" : `java pid ${dynamo.pid}`;
  const archive = dynamo.classData === "used" ? ", class-data archive mapped" : "";
  log(
    `dynamodb: started ${dynamo.backend} on port ${dynamo.port} (${where}, in memory${archive}) at ${dynamo.endpoint}`,
  );
}

/**
 * The model side: with MODEL_PROVIDER=bedrock, BEDROCK_BASE_URL or the Bedrock stand-in; else the
 * OPENAI_BASE_URL / OPENAI_API_KEY endpoint, checked once (local/model-check.ts: one line; with
 * `requireModel`, an endpoint that cannot be used stops the command); else the local planner server.
 * @throws ModelEndpointError when `options.requireModel` and the endpoint cannot be used
 */
async function startModel(
  env: Record<string, string | undefined>,
  model: Config["model"],
  log: (line: string) => void,
  options: LocalStackOptions,
  into: Started,
): Promise<void> {
  if (model.provider === "bedrock" && env.BEDROCK_BASE_URL) {
    log(
      `model: using Amazon Bedrock at ${env.BEDROCK_BASE_URL} with ${model.bedrock.modelId} (BEDROCK_BASE_URL)`,
    );
  } else if (model.provider === "bedrock") {
    const standIn = await startStandIn(env, model.bedrock, log);
    into.stops.push(standIn.stop);
    Object.assign(into.resolved, standIn.env);
  } else if (options.modelServer) {
    const { name, baseURL } = options.modelServer;
    log(`model: using ${name} on port ${portOf(baseURL)} at ${baseURL}`);
  } else if (env.OPENAI_API_KEY || env.OPENAI_BASE_URL) {
    const url = env.OPENAI_BASE_URL || "https://api.openai.com/v1";
    log(`model: using ${endpointOf(url)} on port ${portOf(url)} (OPENAI_BASE_URL/OPENAI_API_KEY)`);
    const { checkModelEndpoint, ModelEndpointError } = await import("./model-check.js");
    const check = await checkModelEndpoint(url, env.OPENAI_API_KEY, model.name);
    if (check.ok || !options.requireModel) log(check.line);
    if (!check.ok && options.requireModel) {
      throw new ModelEndpointError(
        `${check.line.replace(/^model: /, "")} Start the server there, fix OPENAI_BASE_URL, or unset OPENAI_BASE_URL and OPENAI_API_KEY to use the local planner.`,
      );
    }
  } else {
    const server = await startModelServer();
    into.stops.push(async () => {
      await server.stop();
      log(`model: stopped the local planner on port ${portOf(server.baseURL)}`);
    });
    into.resolved.OPENAI_BASE_URL = server.baseURL;
    log(
      `model: started the local deterministic planner (not an LLM) on port ${portOf(server.baseURL)} at ${server.baseURL}`,
    );
  }
}

/**
 * Starts the Bedrock stand-in for `bedrock`'s model and Region, checking keys against the environment's
 * AWS credentials, or {@link LOCAL_BEDROCK_CREDENTIALS} (then returned in `env` for the function).
 * @returns the variables to give the function (BEDROCK_BASE_URL, and the local credentials if used) and a stop
 */
async function startStandIn(
  env: Record<string, string | undefined>,
  bedrock: Config["model"]["bedrock"],
  log: (line: string) => void,
): Promise<{ env: Record<string, string>; stop: () => Promise<void> }> {
  const resolved: Record<string, string> = {};
  const credentials =
    env.AWS_ACCESS_KEY_ID && env.AWS_SECRET_ACCESS_KEY
      ? {
          accessKeyId: env.AWS_ACCESS_KEY_ID,
          secretAccessKey: env.AWS_SECRET_ACCESS_KEY,
          ...(env.AWS_SESSION_TOKEN ? { sessionToken: env.AWS_SESSION_TOKEN } : {}),
        }
      : LOCAL_BEDROCK_CREDENTIALS;
  if (credentials === LOCAL_BEDROCK_CREDENTIALS) {
    resolved.AWS_ACCESS_KEY_ID = credentials.accessKeyId;
    resolved.AWS_SECRET_ACCESS_KEY = credentials.secretAccessKey;
  }
  const { startBedrockStandIn } = await import("./bedrock-stand-in.js");
  const standIn = await startBedrockStandIn({
    credentials,
    region: bedrock.region,
    models: [bedrock.modelId],
  });
  resolved.BEDROCK_BASE_URL = standIn.baseURL;
  log(
    `model: started the Bedrock stand-in for ${bedrock.modelId} in ${bedrock.region} on port ${portOf(standIn.baseURL)} at ${standIn.baseURL} (checks the keys' signatures; answers with the local planner, not an LLM)`,
  );
  return {
    env: resolved,
    stop: async () => {
      await standIn.stop();
      log(`model: stopped the Bedrock stand-in on port ${portOf(standIn.baseURL)}`);
    },
  };
}

/** Runs each stop function, last started first; a failing stop does not keep the others from running. */
async function stopAll(stops: Array<() => Promise<void>>, log: (line: string) => void): Promise<void> {
  for (const stop of [...stops].reverse()) {
    await stop().catch((error: unknown) => log(`stop failed: ${String(error)}`));
  }
}
