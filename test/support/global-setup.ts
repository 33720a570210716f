import type { TestProject } from "vitest/node";
import { type LocalDynamo, startLocalDynamo } from "../../local/dynamo.js";

declare module "vitest" {
  export interface ProvidedContext {
    /** Endpoint of the DynamoDB Local (or dynalite) the whole suite shares; each file makes its own table. */
    dynamoEndpoint: string;
    dynamoBackend: string;
  }
}

/**
 * The one local DynamoDB of this vitest process and how many projects use it. Vitest runs this global
 * setup once per project (the suite's projects extend the root config), and may load this module once
 * per project too: the state lives on globalThis so every project of the run shares one JVM.
 */
interface SharedDynamo {
  started: Promise<LocalDynamo>;
  users: number;
}
const SHARED_DYNAMO = Symbol.for("boundloop.test.sharedDynamo");
const holder = globalThis as { [SHARED_DYNAMO]?: SharedDynamo };

/** Starts one local DynamoDB for the whole run (DYNAMODB_ENDPOINT uses an existing one instead). */
export async function setup(project: TestProject): Promise<void> {
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = "true";
  if (process.env.DYNAMODB_ENDPOINT) {
    project.provide("dynamoEndpoint", process.env.DYNAMODB_ENDPOINT);
    project.provide("dynamoBackend", "external");
    return;
  }
  holder[SHARED_DYNAMO] ??= { started: startLocalDynamo(), users: 0 };
  const shared = holder[SHARED_DYNAMO];
  shared.users += 1;
  const dynamo = await shared.started;
  project.provide("dynamoEndpoint", dynamo.endpoint);
  project.provide("dynamoBackend", dynamo.backend);
}

/** Stops the shared DynamoDB once the last project using it is done. */
export async function teardown(): Promise<void> {
  const shared = holder[SHARED_DYNAMO];
  if (!shared) return;
  shared.users -= 1;
  if (shared.users > 0) return;
  delete holder[SHARED_DYNAMO];
  await (await shared.started).stop();
}
