/**
 * Runs one attempt of a scenario through the real pipeline (docs/evals.md): a fresh table on DynamoDB
 * Local (or dynalite), the app's dependencies built from the function's own config, the Lambda handler
 * fed API Gateway HTTP API v2 events with the caller's JWT claims, and the model the run's flags chose.
 * What it returns is read back from the store: each run's audit steps (the trajectory), the table's items
 * before and after (the effects).
 */
import { randomUUID } from "node:crypto";
import { readFileSync } from "node:fs";
import { ScanCommand } from "@aws-sdk/lib-dynamodb";
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2 } from "aws-lambda";
import { type ApiEvent, createHandler } from "../../functions/api/app-handler.js";
import type { ToolRegistry } from "../../shared/agent/dispatcher.js";
import type { AnswerGrounding } from "../../shared/agent/grounding.js";
import type { ToolResult } from "../../shared/agent/result.js";
import { loadConfig } from "../../shared/config.js";
import { type ApiDeps, createApiDeps } from "../../shared/deps.js";
import { ensureTable, type StoredItem, TABLE_SCHEMA } from "../../shared/store/table.js";
import { createLambdaContext } from "../lambda-context.js";
import type { LocalModelServer, ScriptedReply } from "../model-server.js";
import type { plan } from "../planner.js";
import { type AttackName, adversary, type FixtureIds } from "./attacks.js";
import { resolveTemplate, seedFixtures } from "./fixtures.js";
import { governanceSettings, type Scenario } from "./scenario.js";

/**
 * Which model the attempt talks to: `local` (the local model server: the scenario's script, its attack's
 * adversary, else the planner), `planner` (the planner for every scenario), `external` (whatever
 * OPENAI_BASE_URL / MODEL_PROVIDER in `env` name: an OpenAI-compatible URL or Bedrock; scripts unused).
 */
export type ModelChoice = "local" | "planner" | "external";

/** What every attempt shares: the environment its config is built from, and the local model server. */
export interface AttemptContext {
  env: Record<string, string | undefined>;
  model: LocalModelServer | undefined;
  choice: ModelChoice;
  /** A test double's tools in place of the registry's (the suite's breach test disables a guard). */
  tools?: ((deps: ApiDeps) => ToolRegistry) | undefined;
  /** A test double's change to the dependencies (a breach test turns the policies or quotas off). */
  alter?: ((deps: ApiDeps) => void) | undefined;
}

/** One tool call of a run as the audit step recorded it: what was asked, the dispatcher's decision, the result. */
export interface TrajectoryCall {
  cycle: number;
  id: string;
  name: string;
  arguments: string;
  status: ToolResult["status"];
  code: string | null;
  result: ToolResult;
}

/** One HTTP run of an attempt: its response and its trajectory. */
export interface RunTrace {
  prompt: string;
  httpStatus: number;
  runId: string | null;
  status: string;
  answer: string | null;
  grounding: AnswerGrounding | null;
  body: string;
  calls: TrajectoryCall[];
}

/** A table item with its partition and sort key. */
export interface Item {
  partition: string;
  sort: string;
  item: StoredItem;
}

/** What an attempt did: its runs, the fixtures' ids, and the table before and after the runs. */
export interface AttemptTrace {
  runs: RunTrace[];
  fixtures: Record<string, FixtureIds>;
  before: Item[];
  after: Item[];
  /** Whether the scenario's script or attack was played (not with `planner` or an external model). */
  scripted: boolean;
  tableName: string;
}

const SEED_EVENT = JSON.parse(
  readFileSync(new URL("../../events/seed-scenario.json", import.meta.url), "utf8"),
) as APIGatewayProxyEventV2;

/** A `POST /v1/runs` event for `caller` (claims as API Gateway's JWT authorizer passes them) with `body`. */
export function runEvent(caller: Scenario["caller"], body: object): APIGatewayProxyEventV2 {
  const event = structuredClone(SEED_EVENT);
  const claims = {
    ...(event.requestContext as unknown as { authorizer: { jwt: { claims: object } } }).authorizer.jwt.claims,
  };
  Object.assign(claims, { sub: caller.user, tenant_id: caller.tenant, scope: caller.permissions.join(" ") });
  (
    event.requestContext as unknown as { authorizer: { jwt: { claims: object; scopes: string[] } } }
  ).authorizer.jwt = {
    claims,
    scopes: [...caller.permissions],
  };
  event.body = JSON.stringify(body);
  event.headers = { ...event.headers, "content-length": String(Buffer.byteLength(event.body)) };
  return event;
}

/** A run's status from its response: the run's own, or for a problem its `runStatus`, else its `code`. */
function statusOf(httpStatus: number, body: Record<string, unknown>): string {
  if (httpStatus < 400) return String(body.status);
  return String(body.runStatus ?? body.code ?? httpStatus);
}

/** Every item of the table (a fresh, small table: one scan). */
async function snapshot(deps: ApiDeps): Promise<Item[]> {
  const items: Item[] = [];
  let start: Record<string, unknown> | undefined;
  do {
    const page = await deps.ddb.send(
      new ScanCommand({ TableName: deps.config.table.name, ConsistentRead: true, ExclusiveStartKey: start }),
    );
    for (const item of page.Items ?? []) {
      items.push({
        partition: String(item[TABLE_SCHEMA.partitionKey]),
        sort: String(item[TABLE_SCHEMA.sortKey]),
        item,
      });
    }
    start = page.LastEvaluatedKey;
  } while (start);
  return items;
}

/** The scripted model of a scenario: its replies in order, with `${…}` references resolved. */
function scriptResponder(scenario: Scenario, fixtures: Record<string, FixtureIds>) {
  let next = 0;
  return (request: { messages: Parameters<typeof plan>[0] }): ScriptedReply => {
    const step = scenario.script?.[next++];
    if (!step) return { content: "The script has no more replies." };
    const results = (tool: string, path: string[]) => latestResult(request.messages, tool, path);
    const text = (value: string) => resolveTemplate(value, fixtures, results);
    return {
      ...(step.content === undefined ? {} : { content: text(step.content) }),
      ...(step.refusal === undefined ? {} : { refusal: step.refusal }),
      ...(step.toolCalls
        ? {
            toolCalls: step.toolCalls.map((call, i) => ({
              id: call.id ?? `script_${next}_${i}`,
              name: call.name,
              arguments: text(
                typeof call.arguments === "string" ? call.arguments : JSON.stringify(call.arguments),
              ),
            })),
          }
        : {}),
    };
  };
}

/** A field of the latest successful result of `tool` in the conversation. */
function latestResult(messages: Parameters<typeof plan>[0], tool: string, path: string[]): unknown {
  const ids = new Set(
    messages.flatMap((m) => (m.tool_calls ?? []).filter((c) => c.function.name === tool).map((c) => c.id)),
  );
  const result = messages
    .filter((m) => m.role === "tool" && ids.has(String(m.tool_call_id)))
    .map((m) => JSON.parse(String(m.content)) as { status: string; data: unknown })
    .filter((r) => r.status === "success")
    .at(-1);
  return path.reduce<unknown>(
    (value, key) => (value as Record<string, unknown> | undefined)?.[key],
    result?.data,
  );
}

/** Chooses the local model server's mode for an attempt; true when a script or attack is played. */
function chooseModel(
  context: AttemptContext,
  scenario: Scenario,
  attack: AttackName | undefined,
  fixtures: Record<string, FixtureIds>,
): boolean {
  const server = context.model;
  if (context.choice === "external" || !server) return false;
  if (context.choice === "local" && attack) {
    server.respond(adversary(attack, { caller: scenario.caller, fixtures }));
    return true;
  }
  if (context.choice === "local" && scenario.script) {
    server.respond(scriptResponder(scenario, fixtures));
    return true;
  }
  server.usePlanner();
  return false;
}

/** The audit steps of a run as its trajectory. */
async function trajectoryOf(deps: ApiDeps, tenant: string, runId: string | null): Promise<TrajectoryCall[]> {
  if (!runId) return [];
  const found = await deps.runs.get(tenant, runId);
  return (found?.steps ?? []).flatMap((step) =>
    step.toolCalls.map((call) => ({
      cycle: step.cycle,
      id: call.id,
      name: call.name,
      arguments: call.arguments,
      status: call.result.status,
      code: call.result.error?.code ?? null,
      result: call.result,
    })),
  );
}

/**
 * One attempt of `scenario` (with `attack` for a hostile one): a fresh table, its fixtures, its prompts
 * (a conversation's each continuing the one before), then what the store holds.
 * @throws Error when the scenario's settings or fixtures are invalid
 */
export async function runAttempt(
  context: AttemptContext,
  scenario: Scenario,
  attack?: AttackName,
): Promise<AttemptTrace> {
  const tableName = `eval-${randomUUID()}`;
  const config = loadConfig({
    ...context.env,
    ...scenario.settings,
    ...governanceSettings(scenario),
    TABLE_NAME: tableName,
  });
  const deps = createApiDeps(config);
  if (context.tools) deps.tools = context.tools(deps);
  context.alter?.(deps);
  try {
    await ensureTable(deps.ddb, tableName);
    const handler = createHandler(deps);
    const fixtures = await seedFixtures(deps.tools, scenario.fixtures);
    const before = await snapshot(deps);
    const scripted = chooseModel(context, scenario, attack, fixtures);
    const runs: RunTrace[] = [];
    let previousRunId: string | undefined;
    for (const prompt of scenario.conversation ?? [scenario.prompt as string]) {
      const event = runEvent(scenario.caller, {
        prompt,
        ...scenario.limits,
        ...(previousRunId ? { previousRunId } : {}),
      });
      const response = (await handler(
        event as unknown as ApiEvent,
        createLambdaContext(29_000),
      )) as APIGatewayProxyStructuredResultV2;
      const body = JSON.parse(response.body ?? "{}") as Record<string, unknown>;
      const runId = typeof body.runId === "string" ? body.runId : null;
      runs.push({
        prompt,
        httpStatus: response.statusCode ?? 0,
        runId,
        status: statusOf(response.statusCode ?? 0, body),
        answer: typeof body.answer === "string" ? body.answer : null,
        grounding: (body.grounding as AnswerGrounding | null | undefined) ?? null,
        body: response.body ?? "",
        calls: await trajectoryOf(deps, scenario.caller.tenant, runId),
      });
      previousRunId = runId ?? undefined;
    }
    return { runs, fixtures, before, after: await snapshot(deps), scripted, tableName };
  } finally {
    deps.ddb.destroy();
  }
}
