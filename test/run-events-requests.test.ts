import { randomUUID } from "node:crypto";
import { GetCommand, QueryCommand } from "@aws-sdk/lib-dynamodb";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { quotedRecordInvoiceArgs } from "../local/fixtures.js";
import { keys } from "../shared/store/keys.js";
import { TABLE_SCHEMA, tableKey } from "../shared/store/table.js";
import { SEED_PROMPT } from "./support/approvals.js";
import { seedEvent, startTestStack, type TestStack } from "./support/stack.js";

// The event log's cost in table requests (docs/run-events.md, Storage): at most one write a cycle on top
// of what a keyed run cost before events: 10 requests for bench P3's run (bench/results/latest.md).
const REQUESTS_BEFORE_EVENTS = 10;
const SEED_TENANT = "tenant_uk_01";
/** The seed event's user: a quote is recorded only by the user it was made for. */
const SEED_USER = (
  seedEvent().requestContext as unknown as { authorizer: { jwt: { claims: { sub: string } } } }
).authorizer.jwt.claims.sub;
/**
 * The day's usage counter writes of a run (docs/quotas.md "Reservations"), however many model calls it
 * makes, with no token or cost limit (the budget ample): the admission holds the run's calls, the
 * finish settles them.
 */
const COUNTER_WRITES = ["UpdateItem", "UpdateItem"];

/** The governance requests of one run: the counter writes, and the reads of the tenant's limits and policy set. */
function expectGovernance(run: { quotaRequests: { command: string; sk: string | undefined }[] }) {
  const counters = run.quotaRequests.filter((r) => r.sk?.startsWith("COUNTER#quota#"));
  expect(counters.map((r) => r.command)).toEqual(COUNTER_WRITES);
  // The limits and the policy set are read at most once a run (each cached for a minute per container).
  const reads = run.quotaRequests.filter((r) => !counters.includes(r));
  expect(reads.every((r) => r.command === "GetItem")).toBe(true);
  expect(reads.map((r) => r.sk).sort()).toEqual([...new Set(reads.map((r) => r.sk))].sort());
}

let stack: TestStack;
beforeAll(async () => {
  stack = await startTestStack({ POWERTOOLS_LOG_LEVEL: "SILENT" });
});
afterAll(async () => {
  await stack?.stop();
});

/** Every DynamoDB request the deps' client sends, with the sort key it writes (when it writes one item). */
function recordRequests() {
  const log: { command: string; sk: string | undefined }[] = [];
  const name = `events-requests-${randomUUID()}`;
  stack.deps.ddb.middlewareStack.add(
    (next, context) => async (args) => {
      const input = (args as { input?: { Item?: { sk?: unknown }; Key?: { sk?: unknown } } }).input;
      const sk = input?.Item?.sk ?? input?.Key?.sk;
      log.push({
        command: String(context.commandName).replace(/Command$/, ""),
        sk: typeof sk === "string" ? sk : undefined,
      });
      return next(args);
    },
    { step: "initialize", name },
  );
  return { log, stop: () => stack.deps.ddb.middlewareStack.remove(name) };
}

/** POSTs one keyed run of `prompt` through the real handler, counting its requests. */
async function keyedRun(prompt: string) {
  const counted = recordRequests();
  const event = seedEvent({ prompt });
  event.headers = { ...event.headers, "idempotency-key": `requests-${randomUUID()}` };
  const response = await stack.invoke(event);
  counted.stop();
  expect(response.statusCode).toBe(200);
  const body = JSON.parse(response.body ?? "{}") as {
    runId: string;
    cycles: number;
    status: string;
    toolResults: { status: string }[];
  };
  const eventWrites = counted.log.filter((r) => r.sk?.startsWith(keys.runEventsPrefix(body.runId)));
  // Policies' and quotas' requests (docs/policies.md, docs/quotas.md): the day's usage counter, the
  // tenant's limits and policy set. Counted apart, so the event log's cost stays visible.
  const quotaRequests = counted.log.filter((r) => /^(COUNTER#quota#|LIMITS$|POLICYSET$)/.test(r.sk ?? ""));
  const others = counted.log.filter((r) => !eventWrites.includes(r) && !quotaRequests.includes(r));
  return { body, log: counted.log, eventWrites, quotaRequests, others };
}

describe("DynamoDB requests of a keyed run with its event log", () => {
  it("P3's keyed run (one recordInvoice, 2 cycles): today's 10 plus one event batch a cycle, 12 (1.2)", async () => {
    const args = await quotedRecordInvoiceArgs(stack.deps, { tenantId: SEED_TENANT, userId: SEED_USER });
    stack.model.script([
      { toolCalls: [{ id: "call_1", name: "recordInvoice", arguments: args }] },
      { content: "Recorded." },
    ]);
    const run = await keyedRun("Record the invoice.");
    expect(run.body).toMatchObject({ status: "completed", cycles: 2 });
    // The counts are a recorded invoice's: the tool call succeeded (not a refusal's cheaper path).
    expect(run.body.toolResults).toMatchObject([{ status: "success" }]);
    expect(run.others).toHaveLength(REQUESTS_BEFORE_EVENTS);
    // run.started and cycle 1 (seq 1-4), then cycle 2 with run.finished (seq 5-6).
    expect(run.eventWrites).toEqual([
      { command: "PutItem", sk: keys.runEvents(run.body.runId, 1) },
      { command: "PutItem", sk: keys.runEvents(run.body.runId, 5) },
    ]);
    expect((run.others.length + run.eventWrites.length) / REQUESTS_BEFORE_EVENTS).toBe(1.2);
    expectGovernance(run);
    expect(run.log).toHaveLength(12 + run.quotaRequests.length);
  });

  it("the seed run (3 cycles): one batch a cycle, and nothing else reads or writes the log", async () => {
    stack.model.usePlanner();
    const run = await keyedRun(SEED_PROMPT);
    expect(run.body).toMatchObject({ status: "completed", cycles: 3 });
    expect(run.eventWrites).toEqual([
      { command: "PutItem", sk: keys.runEvents(run.body.runId, 1) },
      { command: "PutItem", sk: keys.runEvents(run.body.runId, 7) },
      { command: "PutItem", sk: keys.runEvents(run.body.runId, 10) },
    ]);
    // The run's own requests: the key, the record, per cycle its audit step and record update, the
    // quote and the invoice, the outcome, the key's answer.
    expect(run.others.map((r) => r.command)).toEqual([
      "PutItem",
      "PutItem",
      "PutItem",
      "PutItem",
      "UpdateItem",
      "GetItem",
      "PutItem",
      "PutItem",
      "UpdateItem",
      "PutItem",
      "UpdateItem",
      "UpdateItem",
      "UpdateItem",
    ]);
    expectGovernance(run);
    expect(run.log.filter((r) => r.command === "Query")).toEqual([]);
  });

  it("every event batch carries the run record's ttl: the log expires with the run", async () => {
    stack.model.usePlanner();
    const run = await keyedRun(SEED_PROMPT);
    const table = stack.config.table.name;
    const record = await stack.deps.ddb.send(
      new GetCommand({ TableName: table, Key: tableKey(SEED_TENANT, keys.run(run.body.runId)) }),
    );
    const ttl = record.Item?.[TABLE_SCHEMA.ttlAttribute] as number;
    // RUN_TTL_SECONDS (30 days by default) after the run started.
    expect(ttl * 1000 - Date.now()).toBeGreaterThan(29 * 86_400_000);
    const batches = await stack.deps.ddb.send(
      new QueryCommand({
        TableName: table,
        KeyConditionExpression: "pk = :pk AND begins_with(sk, :prefix)",
        ExpressionAttributeValues: {
          ":pk": keys.tenant(SEED_TENANT),
          ":prefix": keys.runEventsPrefix(run.body.runId),
        },
      }),
    );
    expect(batches.Items?.map((item) => item[TABLE_SCHEMA.ttlAttribute])).toEqual([ttl, ttl, ttl]);
  });
});
