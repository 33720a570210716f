import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { DynamoDBDocumentClient } from "@aws-sdk/lib-dynamodb";
import type { Config } from "../config.js";
import { inSpan, Kind } from "../tracing.js";

/**
 * Creates the DynamoDB document client from config. With `endpoint` set (DynamoDB Local, dynalite)
 * and no AWS credentials in the environment, fixed local credentials are used, since local servers
 * accept any. Retries are the AWS SDK's own (standard mode, 3 attempts). Each attempt has a connection
 * timeout (at most 1 s) and a socket timeout of `requestTimeoutMs` (DYNAMODB_REQUEST_TIMEOUT_MS), both
 * raised as errors, so an unreachable table fails fast (see `isStoreUnavailable` in shared/store/errors.ts).
 * Every command is a client span when tracing is on ({@link traceCommands}).
 */
export function createDocumentClient(table: Config["table"]): DynamoDBDocumentClient {
  const local = table.endpoint !== undefined && !process.env.AWS_ACCESS_KEY_ID;
  const client = new DynamoDBClient({
    region: table.region,
    endpoint: table.endpoint,
    maxAttempts: 3,
    requestHandler: {
      connectionTimeout: Math.min(1_000, table.requestTimeoutMs),
      requestTimeout: table.requestTimeoutMs,
      throwOnRequestTimeout: true,
    },
    ...(local ? { credentials: { accessKeyId: "local", secretAccessKey: "local" } } : {}),
  });
  traceCommands(client, table.region);
  return DynamoDBDocumentClient.from(client, {
    marshallOptions: { removeUndefinedValues: true, convertClassInstanceToMap: false },
  });
}

/**
 * Adds a middleware that runs each DynamoDB command (retries included) in a CLIENT span named
 * `DynamoDB.<Operation>` (as the OpenTelemetry AWS SDK instrumentation names them), a child of the
 * active span: the tool or step that made the call. Attributes: `rpc.system` aws-api, `rpc.service`,
 * `rpc.method`, `db.system.name` aws.dynamodb, `aws.dynamodb.table_names`, `cloud.region`,
 * `aws.request_id`; a failure sets `error.type` to the SDK error's name (ConditionalCheckFailedException,
 * …, never its message). No keys or item values. With tracing off the middleware calls straight through.
 * Ours rather than @opentelemetry/instrumentation-aws-sdk: that one patches modules as they are
 * required, which a bundled ESM function does not do, and it would add its own dependencies.
 */
export function traceCommands(client: DynamoDBClient, region: string): void {
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const operation = String(context.commandName ?? "Command").replace(/Command$/, "");
      const input = args.input as { TableName?: unknown; RequestItems?: Record<string, unknown> };
      const tables =
        typeof input.TableName === "string" ? [input.TableName] : Object.keys(input.RequestItems ?? {});
      return inSpan(
        `DynamoDB.${operation}`,
        {
          kind: Kind.CLIENT,
          attributes: {
            "rpc.system": "aws-api",
            "rpc.service": "DynamoDB",
            "rpc.method": operation,
            "db.system.name": "aws.dynamodb",
            "db.operation.name": operation,
            "aws.dynamodb.table_names": tables,
            "cloud.region": region,
          },
        },
        async (span) => {
          // A throw is marked by inSpan: error.type = the SDK error's name.
          const output = await next(args);
          const requestId = (output.output as { $metadata?: { requestId?: string } }).$metadata?.requestId;
          if (requestId) span?.setAttribute("aws.request_id", requestId);
          return output;
        },
      );
    },
    { step: "initialize", name: "boundloopTracing", override: true },
  );
}
