/**
 * Runs the real Lambda handler once in a process of its own (config from the environment, the API
 * Gateway event from BOUNDLOOP_CHILD_EVENT, like test/support/handler-child.ts), and SIGKILLs itself
 * the moment DynamoDB acknowledges the ledger write (a PutItem of an `INVOICE#` item): a crash after the
 * effect and before the run or its Idempotency-Key record completes. Prints the handler's result only
 * if no ledger write happened.
 */

import { createHandler } from "../../functions/api/app-handler.js";
import type { ApiEvent } from "../../functions/api/handler.js";
import { createLambdaContext } from "../../local/lambda-context.js";
import { loadConfig } from "../../shared/config.js";
import { createApiDeps } from "../../shared/deps.js";
import { keys } from "../../shared/store/keys.js";

const deps = createApiDeps(loadConfig());
deps.ddb.middlewareStack.add(
  (next, context) => async (args) => {
    const output = await next(args);
    const item = (args.input as { Item?: { sk?: unknown } }).Item;
    if (context.commandName === "PutItemCommand" && String(item?.sk).startsWith(keys.invoicePrefix)) {
      process.kill(process.pid, "SIGKILL");
    }
    return output;
  },
  { step: "initialize", name: "killAfterLedgerWrite" },
);
const event = JSON.parse(process.env.BOUNDLOOP_CHILD_EVENT ?? "null") as ApiEvent;
const result = await createHandler(deps)(event, createLambdaContext(29_000));
process.stdout.write(`${JSON.stringify(result)}\n`);
