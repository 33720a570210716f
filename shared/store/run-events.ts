import { type DynamoDBDocumentClient, PutCommand, QueryCommand } from "@aws-sdk/lib-dynamodb";
import { keys } from "./keys.js";
import { splitItem, TABLE_SCHEMA, tableItem, tableKey } from "./table.js";

/** What the event store needs of an event: its sequence in the run (1, 2, 3, …). */
export interface SequencedEvent {
  seq: number;
}

/**
 * What {@link RunEventStore.read} found: the events after the asked sequence, in sequence order, each
 * once; `nextFrom`, the batch to start the next read at (pass it back as `from`, so a tailing reader
 * re-reads at most its last batch instead of the whole log).
 */
export interface RunEventPage<E extends SequencedEvent> {
  events: E[];
  nextFrom: number;
  /** The highest sequence in the batches read (0 for none), whether or not above `after`. */
  lastSeq: number;
}

/**
 * A run's event log in the one table: one item per batch (sort key `EVENTS#<runId>#<first seq>`,
 * shared/store/keys.ts), written with one PutItem, so a cycle's events cost one table write however
 * many there are. An item carries the run's `ttl` (the run record's: the log expires with the run).
 * A batch written again (a durable execution replaying a cycle) is an unconditional put of the same
 * events under the same key, and two batches that overlap are merged by sequence when read, so a
 * replay never duplicates or reorders what readers see.
 * `E` is the event type of the application layer (shared/runs/events.ts); the store reads only `seq`.
 */
export class RunEventStore<E extends SequencedEvent> {
  constructor(
    private readonly client: DynamoDBDocumentClient,
    private readonly tableName: string,
  ) {}

  /**
   * Writes one batch of consecutive events (no-op for none).
   * @param expiresAtSeconds the run record's TTL (epoch seconds)
   * @throws the SDK's error when the write fails
   */
  async append(
    tenantId: string,
    runId: string,
    events: readonly E[],
    expiresAtSeconds: number,
  ): Promise<void> {
    const first = events[0];
    if (!first) return;
    await this.client.send(
      new PutCommand({
        TableName: this.tableName,
        Item: tableItem(
          tableKey(tenantId, keys.runEvents(runId, first.seq)),
          "run_events",
          { runId, lastSeq: events.at(-1)?.seq ?? first.seq, events },
          expiresAtSeconds,
        ),
      }),
    );
  }

  /**
   * Reads the run's events with sequence above `after`, from the batch `from` on (consistent reads;
   * batches past their `ttl` count as absent, as DynamoDB deletes expired items lazily).
   * @param from the `nextFrom` of the previous page; 0 reads the whole log
   * @throws the SDK's error when the table cannot be read
   */
  async read(
    tenantId: string,
    runId: string,
    after: number,
    from = 0,
    options: { signal?: AbortSignal; now?: Date } = {},
  ): Promise<RunEventPage<E>> {
    const nowSeconds = Math.floor((options.now ?? new Date()).getTime() / 1000);
    const events = new Map<number, E>();
    let nextFrom = from;
    const lastSeq = 0;
    let startKey: Record<string, unknown> | undefined;
    do {
      const page = await this.client.send(
        new QueryCommand({
          TableName: this.tableName,
          KeyConditionExpression: "#partition = :partition AND #sort BETWEEN :from AND :to",
          ExpressionAttributeNames: {
            "#partition": TABLE_SCHEMA.partitionKey,
            "#sort": TABLE_SCHEMA.sortKey,
          },
          ExpressionAttributeValues: {
            ":partition": keys.tenant(tenantId),
            ":from": keys.runEvents(runId, from),
            ":to": `${keys.runEventsPrefix(runId)}~`,
          },
          ExclusiveStartKey: startKey,
          ConsistentRead: true,
        }),
        { abortSignal: options.signal },
      );
      for (const item of page.Items ?? []) {
        const { attributes, expiresAtSeconds } = splitItem(item);
        if (expiresAtSeconds !== undefined && expiresAtSeconds <= nowSeconds) continue;
        const batch = (attributes.events ?? []) as E[];
        if (batch[0]) nextFrom = Math.max(nextFrom, batch[0].seq);
        for (const event of batch)
          if (event.seq > after && !events.has(event.seq)) events.set(event.seq, event);
      }
      startKey = page.LastEvaluatedKey;
    } while (startKey);
    return { events: [...events.values()].sort((a, b) => a.seq - b.seq), nextFrom, lastSeq };
  }
}
