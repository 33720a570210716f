import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { DynamoDBDocumentClient } from "@aws-sdk/lib-dynamodb";
import type { Config } from "../config.js";

/**
 * Creates the DynamoDB document client from config. With `endpoint` set (DynamoDB Local, dynalite)
 * and no AWS credentials in the environment, fixed local credentials are used, since local servers
 * accept any. Retries are the AWS SDK's own (standard mode, 3 attempts). Each attempt has a connection
 * timeout (at most 1 s) and a socket timeout of `requestTimeoutMs` (DYNAMODB_REQUEST_TIMEOUT_MS), both
 * raised as errors, so an unreachable table fails fast (see `isStoreUnavailable` in shared/errors.ts).
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
  return DynamoDBDocumentClient.from(client, {
    marshallOptions: { removeUndefinedValues: true, convertClassInstanceToMap: false },
  });
}
