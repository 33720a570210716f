import { CreateTableCommand, DescribeTableCommand, ResourceInUseException } from "@aws-sdk/client-dynamodb";
import type { DynamoDBDocumentClient } from "@aws-sdk/lib-dynamodb";
import { TABLE_SCHEMA } from "./keys.js";

/**
 * Creates the service table (pk/sk strings, on-demand) if it does not exist, and waits until it is
 * ACTIVE. For local runs and tests; on AWS the CDK stack owns the table.
 * @throws the SDK's error for anything but "already exists"
 */
export async function ensureTable(client: DynamoDBDocumentClient, tableName: string): Promise<void> {
  try {
    await client.send(
      new CreateTableCommand({
        TableName: tableName,
        BillingMode: "PAY_PER_REQUEST",
        AttributeDefinitions: [
          { AttributeName: TABLE_SCHEMA.partitionKey, AttributeType: "S" },
          { AttributeName: TABLE_SCHEMA.sortKey, AttributeType: "S" },
        ],
        KeySchema: [
          { AttributeName: TABLE_SCHEMA.partitionKey, KeyType: "HASH" },
          { AttributeName: TABLE_SCHEMA.sortKey, KeyType: "RANGE" },
        ],
      }),
    );
  } catch (error) {
    if (!(error instanceof ResourceInUseException)) throw error;
  }
  for (let attempt = 0; attempt < 100; attempt += 1) {
    const { Table } = await client.send(new DescribeTableCommand({ TableName: tableName }));
    if (Table?.TableStatus === "ACTIVE") return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`Table ${tableName} did not become ACTIVE.`);
}
