import {
  ConditionalCheckFailedException,
  ReturnValue,
  ReturnValuesOnConditionCheckFailure,
} from "@aws-sdk/client-dynamodb";
import { type DynamoDBDocumentClient, PutCommand } from "@aws-sdk/lib-dynamodb";
import { unmarshall } from "@aws-sdk/util-dynamodb";
import { getItem, type StoredItem, TABLE_SCHEMA } from "./table.js";

/**
 * What {@link conditionalPut} did.
 * - `written: true`: the item was put; `previous` is the item it replaced (undefined when there was none).
 * - `written: false`: the condition failed and nothing was written; `existing` is the item that made it
 *   fail, or undefined when it was gone by the time it was read (deleted by its owner, or by TTL).
 *   `existingFrom` says how it was read: `condition-check` (ReturnValuesOnConditionCheckFailure ALL_OLD,
 *   one request) or `consistent-read` (a second, consistent GetItem).
 */
export type ConditionalPutResult =
  | { written: true; previous: StoredItem | undefined }
  | {
      written: false;
      existing: StoredItem | undefined;
      existingFrom: "condition-check" | "consistent-read";
    };

/**
 * Puts one item under a condition: a single-item conditional write, so it behaves the same on DynamoDB,
 * DynamoDB Local and dynalite (no transactions, no batch writes).
 *
 * When the condition fails, the item that made it fail is read back: from
 * ReturnValuesOnConditionCheckFailure ALL_OLD where the server returns it (DynamoDB, DynamoDB Local),
 * else with a consistent GetItem (dynalite 4.0 accepts the parameter but returns no item).
 * `item` must hold the table's key (build it with `tableItem`).
 * @returns see {@link ConditionalPutResult}
 * @throws the SDK's error for anything but a failed condition (throttling after the SDK's retries,
 *   missing table, network)
 */
export async function conditionalPut(
  client: DynamoDBDocumentClient,
  input: {
    tableName: string;
    item: StoredItem;
    condition: string;
    names?: Record<string, string>;
    values?: Record<string, unknown>;
    /** Also return the replaced item on success (ReturnValues ALL_OLD). */
    returnPrevious?: boolean;
  },
  signal?: AbortSignal,
): Promise<ConditionalPutResult> {
  try {
    const result = await client.send(
      new PutCommand({
        TableName: input.tableName,
        Item: input.item,
        ConditionExpression: input.condition,
        ExpressionAttributeNames: input.names,
        ExpressionAttributeValues: input.values,
        ReturnValues: input.returnPrevious ? ReturnValue.ALL_OLD : ReturnValue.NONE,
        ReturnValuesOnConditionCheckFailure: ReturnValuesOnConditionCheckFailure.ALL_OLD,
      }),
      { abortSignal: signal },
    );
    return { written: true, previous: result.Attributes };
  } catch (error) {
    if (!(error instanceof ConditionalCheckFailedException)) throw error;
    if (error.Item)
      return { written: false, existing: unmarshall(error.Item), existingFrom: "condition-check" };
    const { partitionKey, sortKey } = TABLE_SCHEMA;
    const key = { [partitionKey]: String(input.item[partitionKey]), [sortKey]: String(input.item[sortKey]) };
    const existing = await getItem(client, input.tableName, key, signal);
    return { written: false, existing, existingFrom: "consistent-read" };
  }
}
