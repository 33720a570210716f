/**
 * `npm run dev [-- --port 3000] [--host 127.0.0.1] [--env-vars env.json] [--timeout 29]`: the
 * counterpart of `sam local start-api`. Starts the local dependencies the environment does not provide
 * (local/local-stack.ts), generates an RS256 key pair for a local issuer, and serves the Lambda handler
 * the stack deploys (functions/api/handler.ts `createLazyHandler`, with durable runs on the local durable
 * runner: local/durable-runner.ts) on http://127.0.0.1:3000 behind a check that
 * follows API Gateway's JWT authorizer (local/dev-auth.ts). Each request becomes the HTTP API v2 event
 * the authorizer would produce (local/dev-event.ts) and is invoked with a Lambda context counting down
 * from the function timeout.
 *
 * The stack's public routes (infra/routes.ts) have no authorizer, every other route does;
 * local/dev-server.ts lists the gateway behaviour mirrored.
 *
 * At start it prints a ready-to-paste curl with a demo tenant's token and the command that mints tokens
 * with other claims (`npm run token`, which reads the issuer file this writes to
 * `.boundloop/dev-issuer-<port>.json`, mode 0600, removed at exit; it also names the server's URL and
 * table, through which `npm run tenant -- limits` wakes the runs waiting for budget here). With JWT_ISSUER set (the environment
 * or `--env-vars`) it trusts that issuer instead, as the deployed API does (keys from JWT_JWKS_URL or
 * JWT_JWKS, audiences JWT_AUDIENCE), and mints nothing: the console signs in there with CONSOLE_CLIENT_ID. SIGINT, SIGTERM and SIGHUP, or the
 * parent process going away, stop the server and every dependency it started, then exit 0.
 *
 * Start-up order: the options, the `--env-vars` file (it may
 * name DYNAMODB_ENDPOINT), the `--policies` file (one that does not validate exits 2 with the policy and
 * line, as `npm start` does, having started nothing), the port (a port in use is refused before anything starts), DynamoDB Local's
 * JVM, and only then the rest (local/dev-serve.ts: the handler's modules, hono, the AWS SDK, …) by
 * dynamic import, so the JVM's start overlaps their load as in `npm start` and `npm run invoke`.
 */

import { log, parseOptions } from "./dev-options.js";
import type { DevSession } from "./dev-serve.js";
import { type LocalDynamo, startDynamoEarly } from "./dynamo.js";
import { reservePort } from "./port.js";
import { onShutdownSignal } from "./shutdown.js";

/** Bad input on the command line (a policy file that cannot be used): exit 2, as `npm start`'s. */
class InputError extends Error {}

let early: Promise<LocalDynamo> | undefined;
let session: DevSession | undefined;

/** Stops what this process started: the session's servers and dependencies, or the early JVM alone. */
async function cleanup(): Promise<void> {
  if (session) return session.stop();
  await early?.then(
    (dynamo) => dynamo.stop(),
    () => undefined,
  );
}

async function main(argv: string[]): Promise<void> {
  const values = parseOptions(argv);
  if (!values) return;
  let vars: Record<string, string> = {};
  if (values["env-vars"]) {
    const { readEnvVarsFile } = await import("./env-vars.js");
    const read = await readEnvVarsFile(values["env-vars"]);
    vars = read.vars;
    log(`env: ${Object.keys(vars).length} variable(s) from ${values["env-vars"]}`);
    if (read.unknown.length > 0) log(`env: warning: boundloop reads none of ${read.unknown.join(", ")}`);
  }

  onShutdownSignal(
    async () => {
      await cleanup();
      log("dev: stopped");
    },
    { exitCode: () => 0, watchParent: true },
  );

  // A policy file is input: checked before anything starts, and refused as `npm start` refuses it.
  if (values.policies) {
    const { PolicyFileError, readPolicyFile } = await import("./policies-file.js");
    try {
      vars.POLICIES = await readPolicyFile(values.policies);
    } catch (error) {
      throw error instanceof PolicyFileError ? new InputError(error.message) : error;
    }
    log(`policies: the default set is ${values.policies}`);
  }

  // The port is taken before anything starts, so a port in use is refused at once (local/port.ts).
  const reservation = await reservePort(values.host, values.portNumber);
  early = startDynamoEarly({ ...process.env, ...vars });
  const { DevSession } = await import("./dev-serve.js");
  session = new DevSession(early);
  await session.start(values, vars, reservation);
}

// Lambda runs a current Node; the AWS SDK's "Node 20 support ends" notice is noise in local runs.
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= "true";

main(process.argv.slice(2)).catch(async (error: unknown) => {
  log(`dev: ${error instanceof Error ? error.message : String(error)}`);
  await cleanup();
  process.exit(error instanceof InputError ? 2 : 1);
});
