import { afterAll, beforeAll, expect, inject } from "vitest";
import type { AttemptContext } from "../../local/eval/harness.js";
import { parseScenario, ScenarioError } from "../../local/eval/scenario.js";
import { type LocalModelServer, startModelServer } from "../../local/model-server.js";

/** The smallest valid scenario (YAML), to which a test appends the fields it checks. */
export const MINIMAL_SCENARIO = `name: minimal
description: d
caller: { tenant: t1, user: u1, permissions: ["billing:write"] }
prompt: hello
`;

/** What an eval test file runs scenarios with: the local model server and the harness's context on it. */
export interface EvalHarness {
  model: LocalModelServer;
  context: AttemptContext;
}

/**
 * Registers the file's hooks that start an {@link EvalHarness} before its tests (the local model server;
 * the context runs on it and the suite's DynamoDB Local, logging errors only, with `env` added) and stop
 * it after them.
 * @returns the harness, whose fields are set once the file's `beforeAll` has run
 */
export function evalHarness(env: Record<string, string> = {}): EvalHarness {
  const harness = {} as EvalHarness;
  beforeAll(async () => {
    harness.model = await startModelServer();
    harness.context = {
      env: {
        DYNAMODB_ENDPOINT: inject("dynamoEndpoint"),
        OPENAI_BASE_URL: harness.model.baseURL,
        POWERTOOLS_LOG_LEVEL: "ERROR",
        ...env,
      },
      model: harness.model,
      choice: "local",
    };
  });
  afterAll(async () => {
    await harness.model?.stop();
  });
  return harness;
}

/** The problems the scenario format finds in `text` (each with its path); none when it parses. */
export function scenarioProblems(text: string): string[] {
  try {
    parseScenario(text, "evals/minimal.yaml");
    return [];
  } catch (error) {
    expect(error).toBeInstanceOf(ScenarioError);
    return (error as ScenarioError).problems;
  }
}
