import { spawn } from "node:child_process";
import { once } from "node:events";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import type { DevServer } from "../../local/dev-server.js";
import type { Config } from "../../shared/config.js";

/**
 * Starts test/support/bundle-gateway-child.ts: the built API bundle `bundleFile` (an index.mjs built by
 * infra/bundle.ts) behind the dev gateway, in a fresh Node process whose environment holds only what
 * Lambda's would: the table and model of `config`, AWS credentials in the variables Lambda sets (the
 * bundle's credential provider reads them there), and `env` (the issuer's JWT_* variables, settings).
 * @returns the gateway's URL, what the process logged so far (`output`), and `stop`, which ends the
 *   process and waits for it
 * @throws Error with the child's output when it exits before listening
 */
export async function startBundleGateway(
  bundleFile: string,
  config: Config,
  env: Record<string, string>,
): Promise<DevServer & { output(): string }> {
  const child = spawn(
    process.execPath,
    [
      "--enable-source-maps",
      "--import",
      "tsx",
      fileURLToPath(new URL("./bundle-gateway-child.ts", import.meta.url)),
    ],
    {
      cwd: fileURLToPath(new URL("../..", import.meta.url)),
      stdio: ["ignore", "pipe", "pipe"],
      env: {
        PATH: process.env.PATH ?? "",
        AWS_REGION: "eu-west-2",
        AWS_ACCESS_KEY_ID: "bundletest",
        AWS_SECRET_ACCESS_KEY: "bundletest",
        AWS_SESSION_TOKEN: "bundletest",
        AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: "true",
        TABLE_NAME: config.table.name,
        DYNAMODB_ENDPOINT: config.table.endpoint ?? "",
        OPENAI_BASE_URL: config.model.baseURL ?? "",
        BOUNDLOOP_BUNDLE: bundleFile,
        ...env,
      },
    },
  );
  let output = "";
  child.stderr.on("data", (chunk: Buffer) => {
    output += chunk.toString();
  });
  const exited = once(child, "exit");
  // The bundle's own log lines (Powertools writes JSON to stdout) may come first: the URL is the line
  // that starts with {"url".
  const listening = new Promise<string>((resolve) => {
    createInterface({ input: child.stdout }).on("line", (line) => {
      if (line.startsWith('{"url"')) resolve((JSON.parse(line) as { url: string }).url);
      else output += `${line}\n`;
    });
  });
  const url = await Promise.race([listening, exited.then(() => undefined)]);
  if (url === undefined) throw new Error(`The bundle's gateway exited before listening:\n${output}`);
  return {
    url,
    port: Number(new URL(url).port),
    output: () => output,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill("SIGTERM");
        await exited;
      }
    },
  };
}
