import { ConditionalCheckFailedException } from "@aws-sdk/client-dynamodb";
import { type DynamoDBDocumentClient, UpdateCommand } from "@aws-sdk/lib-dynamodb";
import { keys } from "./keys.js";
import { SYNC_DEADLINE_ATTRIBUTE, UNFINISHED_STATUSES } from "./run-records.js";
import { ITEM_PRESENT, tableKey } from "./table.js";
import { setFields } from "./update.js";

/**
 * One conditional update of a run record (shared/store/runs.ts): sets `fields` (removes the internal
 * attributes `remove` names, and adds `add.amount` to the number attribute `add.name`, from 0) if the
 * record exists and its status is one of `from`. With `abandonedBefore`
 * (an ISO 8601 UTC instant, the store's `RunReadRule`), an unfinished record whose writer's deadline is
 * before it is no longer going (readers see it `abandoned`), so the write is refused: a run read as
 * abandoned never changes again, not even by a late outcome. Names and values go through placeholders,
 * so reserved words such as `status` and `usage` are safe.
 * @returns false when the condition failed (not in `from`, abandoned, or missing)
 * @throws the SDK's error for anything but the failed condition
 */
export async function updateRunIf(
  client: DynamoDBDocumentClient,
  tableName: string,
  target: { tenantId: string; runId: string },
  change: {
    fields: Record<string, unknown>;
    from: readonly string[];
    remove?: readonly string[];
    add?: { name: string; amount: number } | undefined;
    abandonedBefore?: string | undefined;
  },
): Promise<boolean> {
  const set = setFields(change.fields);
  const remove = change.remove ?? [];
  const names: Record<string, string> = { ...set.names, "#status": "status" };
  const values: Record<string, unknown> = {
    ...set.values,
    ...Object.fromEntries(change.from.map((status, i) => [`:from${i}`, status])),
  };
  remove.forEach((name, i) => {
    names[`#r${i}`] = name;
  });
  let expression = set.expression;
  if (change.add) {
    names["#sum"] = change.add.name;
    values[":zero"] = 0;
    values[":amount"] = change.add.amount;
    expression += ", #sum = if_not_exists(#sum, :zero) + :amount";
  }
  let condition = `${ITEM_PRESENT} AND #status IN (${change.from.map((_, i) => `:from${i}`).join(", ")})`;
  const judged = change.from.filter((status) => UNFINISHED_STATUSES.includes(status));
  if (change.abandonedBefore !== undefined && judged.length > 0) {
    // An absent deadline (an older record) makes the comparison false: never abandoned.
    names["#syncDeadline"] = SYNC_DEADLINE_ATTRIBUTE;
    values[":abandonedBefore"] = change.abandonedBefore;
    const going = judged.map((status) => `:from${change.from.indexOf(status)}`).join(", ");
    condition += ` AND NOT (#status IN (${going}) AND #syncDeadline < :abandonedBefore)`;
  }
  const removal = remove.length > 0 ? ` REMOVE ${remove.map((_, i) => `#r${i}`).join(", ")}` : "";
  try {
    await client.send(
      new UpdateCommand({
        TableName: tableName,
        Key: tableKey(target.tenantId, keys.run(target.runId)),
        UpdateExpression: `${expression}${removal}`,
        ConditionExpression: condition,
        ExpressionAttributeNames: names,
        ExpressionAttributeValues: values,
      }),
    );
    return true;
  } catch (error) {
    if (error instanceof ConditionalCheckFailedException) return false;
    throw error;
  }
}
