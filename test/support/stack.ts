import { randomUUID } from "node:crypto";
import { readFileSync } from "node:fs";
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2 } from "aws-lambda";
import { inject } from "vitest";
import { type ApiEvent, createHandler } from "../../functions/api/app-handler.js";
import { createLambdaContext } from "../../local/lambda-context.js";
import { type LocalModelServer, startModelServer } from "../../local/model-server.js";
import { type Config, loadConfig } from "../../shared/config.js";
import { type ApiDeps, type ApiDepsOptions, createApiDeps } from "../../shared/deps.js";
import { ensureTable } from "../../shared/store/table.js";
import { startedForFile } from "./file-hooks.js";

/** A test's own table on the suite's local DynamoDB, a local model server, and the real handler over them. */
export interface TestStack {
  config: Config;
  deps: ApiDeps;
  model: LocalModelServer;
  /** Invokes the real Lambda handler with an event and a context counting down from `timeoutMs`. */
  invoke(event: APIGatewayProxyEventV2, timeoutMs?: number): Promise<APIGatewayProxyStructuredResultV2>;
  stop(): Promise<void>;
}

/** Starts a {@link TestStack}; `env` overrides configuration variables, `options` are createApiDeps'. */
export async function startTestStack(
  env: Record<string, string> = {},
  options: ApiDepsOptions = {},
): Promise<TestStack> {
  const model = await startModelServer();
  const config = loadConfig({
    DYNAMODB_ENDPOINT: inject("dynamoEndpoint"),
    // Bedrock reads no OPENAI_BASE_URL (set with it, it is refused: shared/config/model-provider.ts).
    ...(env.MODEL_PROVIDER === "bedrock" ? {} : { OPENAI_BASE_URL: model.baseURL }),
    TABLE_NAME: `test-${randomUUID()}`,
    ...env,
  });
  const deps = createApiDeps(config, options);
  await ensureTable(deps.ddb, config.table.name);
  const handler = createHandler(deps);
  return {
    config,
    deps,
    model,
    async invoke(event, timeoutMs = 29_000) {
      return (await handler(
        event as unknown as ApiEvent,
        createLambdaContext(timeoutMs),
      )) as APIGatewayProxyStructuredResultV2;
    },
    async stop() {
      deps.ddb.destroy();
      await model.stop();
    },
  };
}

/**
 * The calling file's {@link TestStack} (`env` as for startTestStack), started before its tests and
 * stopped after them; `planner`: see {@link startedForFile}.
 * @returns the stack, whose fields are set once the file's `beforeAll` has run
 */
export const testStackForFile = (env: Record<string, string> = {}, options: { planner?: boolean } = {}) =>
  startedForFile(() => startTestStack(env), options);

/** The seed scenario's event (events/seed-scenario.json), optionally with other claims or prompt. */
export function seedEvent(
  overrides: { prompt?: string; claims?: Record<string, string>; body?: string } = {},
): APIGatewayProxyEventV2 {
  const event = JSON.parse(
    readFileSync(new URL("../../events/seed-scenario.json", import.meta.url), "utf8"),
  ) as APIGatewayProxyEventV2 & {
    requestContext: { authorizer: { jwt: { claims: Record<string, string> } } };
  };
  if (overrides.claims) event.requestContext.authorizer.jwt.claims = overrides.claims;
  if (overrides.prompt !== undefined) event.body = JSON.stringify({ prompt: overrides.prompt });
  if (overrides.body !== undefined) event.body = overrides.body;
  return event;
}
