import { type DynamoDBDocumentClient, PutCommand, QueryCommand } from "@aws-sdk/lib-dynamodb";
import { keys } from "./keys.js";
import { isLive, splitItem, TABLE_SCHEMA, tableItem, tableKey } from "./table.js";

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
  /** The event with the highest sequence in the batches read (none for none), whether or not above `after`. */
  last: E | undefined;
}

/**
 * A run's event log in the one table: one item per batch (sort key `EVENTS#<runId>#<first seq>`,
 * shared/store/keys.ts), written with one PutItem, so a cycle's events cost one table write however
 * many there are. An item carries the run's `ttl` (the run record's: the log expires with the run).
 * Batches are written in sequence order and never overlap: a durable execution that replays a run asks
 * {@link lastSeq} first and writes only what comes after it, so a reader that tails from its last batch
 * (`nextFrom`) never misses a later one. Should two batches overlap all the same (a write that landed
 * after its timeout, say), readers merge them by sequence, so nothing is duplicated or reordered.
 * `E` is the event type of the application layer (shared/runs/events.ts); the store reads only `seq`.
 * `now` (epoch ms): the clock a read judges that `ttl` by unless it names an instant, the one the run
 * record's `ttl` was set by (the runs' clock, shared/deps.ts); default the wall clock.
 */
export class RunEventStore<E extends SequencedEvent> {
  constructor(
    private readonly client: DynamoDBDocumentClient,
    private readonly tableName: string,
    private readonly now: () => number = Date.now,
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
   * The sequence of the last event in the run's log: the `lastSeq` of its newest batch (one query that
   * reads one item), 0 when the log is empty.
   * @throws the SDK's error when the table cannot be read
   */
  async lastSeq(tenantId: string, runId: string): Promise<number> {
    const page = await this.client.send(
      new QueryCommand({
        TableName: this.tableName,
        KeyConditionExpression: "#partition = :partition AND begins_with(#sort, :prefix)",
        ExpressionAttributeNames: { "#partition": TABLE_SCHEMA.partitionKey, "#sort": TABLE_SCHEMA.sortKey },
        ExpressionAttributeValues: {
          ":partition": keys.tenant(tenantId),
          ":prefix": keys.runEventsPrefix(runId),
        },
        ScanIndexForward: false,
        Limit: 1,
        ConsistentRead: true,
      }),
    );
    const newest = page.Items?.[0];
    return newest ? Number(splitItem(newest).attributes.lastSeq ?? 0) : 0;
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
    const now = options.now ?? new Date(this.now());
    const events = new Map<number, E>();
    let nextFrom = from;
    let last: E | undefined;
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
        if (!isLive(expiresAtSeconds, now)) continue;
        const batch = (attributes.events ?? []) as E[];
        if (batch[0]) nextFrom = Math.max(nextFrom, batch[0].seq);
        const newest = batch.at(-1);
        if (newest && newest.seq > (last?.seq ?? 0)) last = newest;
        for (const event of batch)
          if (event.seq > after && !events.has(event.seq)) events.set(event.seq, event);
      }
      startKey = page.LastEvaluatedKey;
    } while (startKey);
    return { events: [...events.values()].sort((a, b) => a.seq - b.seq), nextFrom, last };
  }
}
