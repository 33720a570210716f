/**
 * One DynamoDB request log for the bench sections that count requests (P3 bench/idempotency.ts, P8
 * bench/events.ts, the governance section bench/governance.ts): a middleware on a client that records
 * every HTTP attempt (the deserialize step runs once per attempt, so SDK retries count) with its
 * operation and the kind of item it touches.
 */
import { randomUUID } from "node:crypto";
import type { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { TABLE_SCHEMA } from "../shared/store/table.js";

/**
 * One request: the operation without its `Command` suffix (`PutItem`, `UpdateItem`, …) and the kind
 * of item it reads or writes, the first segment of its sort key (`RUN`, `EVENTS`, `COUNTER`, `IDEM`,
 * … shared/store/keys.ts), or `-` for a request without a single key (Query, Scan, batches).
 */
export interface LoggedRequest {
  operation: string;
  item: string;
}

/** The requests a client sent since the last {@link RequestLog.take}. */
export interface RequestLog {
  /** Returns the requests logged so far and starts a new log. */
  take(): LoggedRequest[];
}

/** A client whose middleware stack the log can join (a DynamoDBClient or a document client). */
type WithMiddleware = { middlewareStack: DynamoDBClient["middlewareStack"] };

/** Adds the logging middleware to `client` and returns its log. */
export function logRequests(client: WithMiddleware): RequestLog {
  let log: LoggedRequest[] = [];
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const operation = String(context.commandName).replace(/Command$/, "");
      log.push({ operation, item: itemKindOf(args.input as Record<string, unknown>) });
      return next(args);
    },
    { step: "deserialize", name: `benchRequestLog_${randomUUID()}` },
  );
  return {
    take() {
      const taken = log;
      log = [];
      return taken;
    },
  };
}

/** The first `#` segment of the sort key a request's `Key` or `Item` names (either marshalled or not). */
function itemKindOf(input: Record<string, unknown>): string {
  const keyed = (input.Key ?? input.Item) as Record<string, unknown> | undefined;
  const sort = keyed?.[TABLE_SCHEMA.sortKey];
  const text = typeof sort === "string" ? sort : (sort as { S?: string } | undefined)?.S;
  return text ? (text.split("#")[0] ?? "-") : "-";
}

/** Requests by operation, e.g. `{PutItem: 7, UpdateItem: 7, GetItem: 1}`, from their operations in order. */
export function byOperation(operations: readonly string[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const operation of operations) counts[operation] = (counts[operation] ?? 0) + 1;
  return counts;
}

/** The operations of `requests`, in order. */
export const operationsOf = (requests: readonly LoggedRequest[]): string[] =>
  requests.map((request) => request.operation);
