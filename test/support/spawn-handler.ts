import { type ChildProcess, spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import type { Config } from "../../shared/config.js";

/**
 * Starts a child-process script (test/support/*-child.ts) that runs the real handler on `event`, on the
 * same table and model server as `config`. `env` adds or overrides variables (e.g. RUN_TIMEOUT_MS).
 * @returns the process, and everything it wrote to stdout and stderr so far
 */
export function spawnHandlerChild(
  script: string,
  config: Config,
  event: unknown,
  env: Record<string, string> = {},
): { process: ChildProcess; output: () => string } {
  let output = "";
  const child = spawn(
    process.execPath,
    ["--import", "tsx", fileURLToPath(new URL(`./${script}`, import.meta.url))],
    {
      cwd: fileURLToPath(new URL("../..", import.meta.url)),
      stdio: ["ignore", "pipe", "pipe"],
      env: {
        ...process.env,
        DYNAMODB_ENDPOINT: config.table.endpoint,
        TABLE_NAME: config.table.name,
        OPENAI_BASE_URL: config.model.baseURL,
        BOUNDLOOP_CHILD_EVENT: JSON.stringify(event),
        AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: "true",
        ...env,
      },
    },
  );
  const append = (chunk: Buffer) => {
    output += chunk.toString();
  };
  child.stdout?.on("data", append);
  child.stderr?.on("data", append);
  return { process: child, output: () => output };
}
