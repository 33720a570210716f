import type { TestProject } from "vitest/node";
import { type LocalDynamo, startLocalDynamo } from "../../local/dynamo.js";

declare module "vitest" {
  export interface ProvidedContext {
    /** Endpoint of the DynamoDB Local (or dynalite) the whole suite shares; each file makes its own table. */
    dynamoEndpoint: string;
    dynamoBackend: string;
  }
}

let dynamo: LocalDynamo | undefined;

/** Starts one local DynamoDB for the suite (DYNAMODB_ENDPOINT uses an existing one instead). */
export async function setup(project: TestProject): Promise<void> {
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = "true";
  if (process.env.DYNAMODB_ENDPOINT) {
    project.provide("dynamoEndpoint", process.env.DYNAMODB_ENDPOINT);
    project.provide("dynamoBackend", "external");
    return;
  }
  dynamo = await startLocalDynamo();
  project.provide("dynamoEndpoint", dynamo.endpoint);
  project.provide("dynamoBackend", dynamo.backend);
}

export async function teardown(): Promise<void> {
  await dynamo?.stop();
}
