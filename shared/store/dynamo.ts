import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { DynamoDBDocumentClient } from "@aws-sdk/lib-dynamodb";
import type { Config } from "../config.js";

/**
 * Creates the DynamoDB document client from config. With `endpoint` set (DynamoDB Local, dynalite)
 * and no AWS credentials in the environment, fixed local credentials are used, since local servers
 * accept any. Retries are the AWS SDK's own (standard mode, 3 attempts).
 */
export function createDocumentClient(table: Config["table"]): DynamoDBDocumentClient {
  const local = table.endpoint !== undefined && !process.env.AWS_ACCESS_KEY_ID;
  const client = new DynamoDBClient({
    region: table.region,
    endpoint: table.endpoint,
    maxAttempts: 3,
    ...(local ? { credentials: { accessKeyId: "local", secretAccessKey: "local" } } : {}),
  });
  return DynamoDBDocumentClient.from(client, {
    marshallOptions: { removeUndefinedValues: true, convertClassInstanceToMap: false },
  });
}
