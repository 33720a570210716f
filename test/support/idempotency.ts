import { randomUUID } from "node:crypto";
import { type DynamoDBDocumentClient, QueryCommand, UpdateCommand } from "@aws-sdk/lib-dynamodb";
import type { APIGatewayProxyEventV2 } from "aws-lambda";
import { inject } from "vitest";
import { quotedRecordInvoiceArgs } from "../../local/fixtures.js";
import type { LocalModelServer } from "../../local/model-server.js";
import type { ApiDeps } from "../../shared/deps.js";
import { createDocumentClient } from "../../shared/store/dynamo.js";
import { keys } from "../../shared/store/keys.js";
import { ensureTable } from "../../shared/store/table.js";
import { seedEvent } from "./stack.js";

/**
 * Counts the DynamoDB requests a client sends (one entry per HTTP attempt, by command name), with an SDK
 * middleware in the deserialize step. `reset()` clears the log; `stop()` removes the middleware.
 */
export function countRequests(client: DynamoDBDocumentClient): {
  log: string[];
  reset(): void;
  stop(): void;
} {
  const log: string[] = [];
  const name = `countRequests_${randomUUID()}`;
  client.middlewareStack.add(
    (next, context) => async (args) => {
      log.push(String(context.commandName).replace(/Command$/, ""));
      return next(args);
    },
    { step: "deserialize", name },
  );
  return {
    log,
    reset() {
      log.length = 0;
    },
    stop() {
      client.middlewareStack.remove(name);
    },
  };
}

/** A document client on the suite's local DynamoDB with a fresh table of its own. */
export async function freshTable(): Promise<{ ddb: DynamoDBDocumentClient; tableName: string }> {
  const tableName = `test-${randomUUID()}`;
  const ddb = createDocumentClient({
    name: tableName,
    endpoint: inject("dynamoEndpoint"),
    region: "us-east-1",
    requestTimeoutMs: 3_000,
  });
  await ensureTable(ddb, tableName);
  return { ddb, tableName };
}

/**
 * The seed event for `tenantId`'s `userId` (default usr_idem; scope billing:write) with `body` (a JSON
 * text, or a prompt) and an optional raw Idempotency-Key header value.
 */
export function runEvent(options: {
  key?: string;
  tenantId?: string;
  userId?: string;
  prompt?: string;
  body?: string;
  scope?: string;
}): APIGatewayProxyEventV2 {
  const event = seedEvent({
    claims: {
      sub: options.userId ?? "usr_idem",
      tenant_id: options.tenantId ?? "tenant_idem",
      scope: options.scope ?? "billing:write",
    },
    ...(options.body !== undefined ? { body: options.body } : { prompt: options.prompt ?? "record it" }),
  });
  if (options.key !== undefined) event.headers = { ...event.headers, "idempotency-key": options.key };
  return event;
}

/**
 * recordInvoice arguments for the scripted model (JSON text) over a real quote of `tenantId`; see
 * {@link quotedRecordInvoiceArgs}. The one place these tests spell recordInvoice's input.
 */
export const recordInvoiceArgs = quotedRecordInvoiceArgs;

/**
 * Scripts `stack`'s model server: one recordInvoice call over a fresh quote of `tenantId` (sent after
 * `delayMs`), then a final answer.
 */
export async function scriptOneInvoice(
  stack: { deps: Pick<ApiDeps, "tools">; model: LocalModelServer },
  tenantId: string,
  delayMs = 0,
): Promise<void> {
  const args = await recordInvoiceArgs(stack.deps, tenantId);
  stack.model.script([
    { toolCalls: [{ id: "call_1", name: "recordInvoice", arguments: args }], delayMs },
    { content: "Recorded." },
  ]);
}

/** A stack's table: its client and name. */
type TableOf = { deps: { ddb: DynamoDBDocumentClient }; config: { table: { name: string } } };

/** `tenantId`'s Idempotency-Key records as stored (one consistent query). */
export async function idempotencyRecords(stack: TableOf, tenantId: string) {
  const result = await stack.deps.ddb.send(
    new QueryCommand({
      TableName: stack.config.table.name,
      KeyConditionExpression: "pk = :pk AND begins_with(sk, :prefix)",
      ExpressionAttributeValues: { ":pk": keys.tenant(tenantId), ":prefix": keys.idempotencyPrefix },
      ConsistentRead: true,
    }),
  );
  return result.Items ?? [];
}

/**
 * Puts each of `tenantId`'s Idempotency-Key records back to IN_PROGRESS with its lease passed, as a
 * start that crashed after its work leaves it: the next request with the key takes it over.
 * @returns the records so changed
 */
export async function crashStarts(stack: TableOf, tenantId: string) {
  const records = await idempotencyRecords(stack, tenantId);
  for (const item of records) {
    await stack.deps.ddb.send(
      new UpdateCommand({
        TableName: stack.config.table.name,
        Key: { pk: item.pk, sk: item.sk },
        UpdateExpression: "SET #status = :inProgress, leaseExpiresAt = :past",
        ExpressionAttributeNames: { "#status": "status" },
        ExpressionAttributeValues: { ":inProgress": "IN_PROGRESS", ":past": Date.now() - 1_000 },
      }),
    );
  }
  return records;
}
