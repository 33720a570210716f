import type { DynamoDBDocumentClient } from "@aws-sdk/lib-dynamodb";
import { decodeText } from "./compressed.js";
import { conditionalPut } from "./conditional.js";
import { keys } from "./keys.js";
import { queryTenant } from "./query.js";
import { countRunList, queryRunList, type RunListFilter, withReadRule } from "./run-list.js";
import type { HistorySummary } from "./run-record-schema.js";
import {
  type ContinuationRead,
  type CycleInput,
  promptFacts,
  type RunFinish,
  type RunRecord,
  type RunShapes,
  type RunSoFar,
  type RunStep,
  type RunStoreOptions,
  SYNC_DEADLINE_ATTRIBUTE,
  toRunRecord,
  toStep,
  transcriptAttributes,
  UNFINISHED_STATUSES,
  WAIT_ENDS_ATTRIBUTE,
  WAIT_STARTS_ATTRIBUTE,
} from "./run-records.js";
import { updateRunIf } from "./run-update.js";
import type { StoredItem } from "./table.js";
import { getItem, ITEM_ABSENT, isLive, listKey, splitItem, tableItem, tableKey } from "./table.js";

export type { HistorySummary } from "./run-record-schema.js";
export type {
  ContinuationRead,
  CycleInput,
  RunFinish,
  RunReadRule,
  RunRecord,
  RunRecordStatus,
  RunShapes,
  RunSoFar,
  RunStep,
  RunStepToolCall,
  RunStoreOptions,
  TokenUsage,
} from "./run-records.js";
export { MAX_ARGUMENT_CHARS, MAX_STORED_TRANSCRIPT_BYTES } from "./run-records.js";

import { zeroUsage } from "../token-usage.js";

/**
 * What {@link RunStore.start} did: `written` the new record; `exists` when the run id was taken (a
 * retried start, or a write the SDK retried after it landed), with the record that holds it
 * (undefined when it vanished in between).
 */
export type RunStartResult<S extends RunShapes = RunShapes> =
  | { kind: "written"; record: RunRecord<S> }
  | { kind: "exists"; existing: RunRecord<S> | undefined };

/**
 * What {@link RunStore.appendStep} did: `written` with the step as stored, or `exists` when the cycle's
 * step was already written (a durable replay's cycle; nothing is written then).
 */
export type StepAppendResult<S extends RunShapes = RunShapes> =
  | { kind: "written"; step: RunStep<S> }
  | { kind: "exists" };

/**
 * Run records and their audit steps, tenant-scoped (`TENANT#<tenantId>`), each item with a `ttl`
 * (epoch seconds) of `ttlSeconds` after it was written (config RUN_TTL_SECONDS). Every write is a single
 * conditional item write, so a run killed mid-way keeps the record and steps written so far.
 * `S` binds the agent's status, tool result and transcript message types (see {@link RunShapes});
 * `options` the transcript policy and the read rule every read of a record applies (see
 * {@link RunStoreOptions}: a synchronous run killed mid-run reads as `abandoned`).
 */
export class RunStore<S extends RunShapes = RunShapes> {
  constructor(
    private readonly client: DynamoDBDocumentClient,
    private readonly tableName: string,
    private readonly ttlSeconds: number,
    private readonly options: RunStoreOptions<S> = {},
  ) {}

  /**
   * Writes the run record with status `running` (conditional: never overwrites an existing run).
   * @param input.prompt the prompt text; its length, SHA-256 and first `promptExcerptChars` characters
   *   are stored ({@link RunStoreOptions})
   * @param input.conversationId the conversation's id (its first run's id, or a protocol's context or
   *   thread id; default this run's)
   * @param input.syncDeadlineAt a synchronous run's deadline (ISO 8601 UTC), kept apart from the record
   *   for the read rule ({@link RunReadRule}); absent for a durable run
   * @returns `written` with the record as stored, or `exists` with the record that has the id
   * @throws the SDK's error when the store cannot be written
   */
  async start(
    input: {
      tenantId: string;
      runId: string;
      userId: string;
      prompt: string;
      limits: RunRecord["limits"];
      previousRunId?: string | undefined;
      history?: HistorySummary | undefined;
      conversationId?: string | undefined;
      syncDeadlineAt?: string | undefined;
    },
    now = this.date(),
  ): Promise<RunStartResult<S>> {
    const expiresAtSeconds = this.expiryFrom(now);
    const record: RunRecord<S> = {
      runId: input.runId,
      tenantId: input.tenantId,
      userId: input.userId,
      status: "running",
      prompt: promptFacts(input.prompt, this.options.promptExcerptChars ?? 0),
      limits: input.limits,
      startedAt: now.toISOString(),
      updatedAt: now.toISOString(),
      finishedAt: null,
      cyclesRecorded: 0,
      cycles: null,
      answer: null,
      reason: null,
      usage: zeroUsage(),
      durationMs: null,
      expiresAt: new Date(expiresAtSeconds * 1000).toISOString(),
      previousRunId: input.previousRunId ?? null,
      history: input.history ?? null,
      cost: null,
      costNote: null,
      grounding: null,
      conversationId: input.conversationId ?? input.runId,
    };
    const put = await conditionalPut(this.client, {
      tableName: this.tableName,
      item: tableItem(
        tableKey(input.tenantId, keys.run(input.runId)),
        "run",
        {
          ...record,
          ...(input.syncDeadlineAt === undefined ? {} : { [SYNC_DEADLINE_ATTRIBUTE]: input.syncDeadlineAt }),
          ...listKey(input.tenantId, keys.runList, keys.runListed(record.startedAt, input.runId)),
        },
        expiresAtSeconds,
      ),
      condition: ITEM_ABSENT,
    });
    if (put.written) return { kind: "written", record };
    return {
      kind: "exists",
      existing: put.existing && this.seen(splitItem(put.existing).attributes),
    };
  }

  /**
   * Appends one cycle's audit step (a new item; conditional, so a cycle is never rewritten), then moves
   * the run record's `cyclesRecorded`, `usage` and `cost` (so far) and `updatedAt` forward while it is still
   * `running`.
   * @param soFar this and earlier cycles' model calls: tokens and, when costed, cost
   * @returns `written` with the step, or `exists` when the cycle's step was already written
   * @throws the SDK's error when a write fails
   */
  async appendStep(
    tenantId: string,
    runId: string,
    record: CycleInput<S>,
    soFar: Omit<RunSoFar, "cyclesRecorded">,
    now = this.date(),
  ): Promise<StepAppendResult<S>> {
    const step = toStep(record, now);
    const put = await conditionalPut(this.client, {
      tableName: this.tableName,
      item: tableItem(
        tableKey(tenantId, keys.runStep(runId, record.cycle)),
        "run_step",
        { runId, ...step },
        this.expiryFrom(now),
      ),
      condition: ITEM_ABSENT,
    });
    if (!put.written) return { kind: "exists" };
    await this.updateIfRunning(tenantId, runId, {
      ...soFar,
      cyclesRecorded: record.cycle,
      updatedAt: now.toISOString(),
    });
    return { kind: "written", step };
  }

  /**
   * Stores a run's outcome (only while the record is `running`, so an outcome is written once), with its
   * transcript when given (see {@link transcriptAttributes}): one write, so a finished run always has
   * the transcript its continuations need.
   * @returns false when the record was not `running` (already finished, or missing)
   * @throws the SDK's error for anything but the failed condition
   */
  async finish(tenantId: string, runId: string, outcome: RunFinish<S>, now = this.date()): Promise<boolean> {
    const { transcript, ...fields } = outcome;
    return this.updateIfRunning(tenantId, runId, {
      ...fields,
      ...(transcript ? transcriptAttributes(transcript, this.options.shortenTranscript) : {}),
      finishedAt: now.toISOString(),
      updatedAt: now.toISOString(),
    });
  }

  /**
   * Reads a run record with its stored transcript, for a run that continues it (consistent read of the
   * record alone, not its steps). The caller checks the owner before it says anything about the run:
   * `expired` and `found` are for the tenant's run whoever started it.
   * @returns see {@link ContinuationRead}
   * @throws the SDK's error when the store cannot be read; Error when a stored transcript is corrupt
   */
  async readContinuation(
    tenantId: string,
    runId: string,
    now = this.date(),
    signal?: AbortSignal,
  ): Promise<ContinuationRead<S>> {
    const item = await getItem(this.client, this.tableName, tableKey(tenantId, keys.run(runId)), signal);
    const split = item && splitItem(item);
    if (split?.type !== "run") return { kind: "missing" };
    const { transcript, transcriptDroppedMessages, conversationId, approvalWaitedMs } = toRunRecord<S>(
      split.attributes,
    );
    const run = this.seen(split.attributes);
    if (!isLive(split.expiresAtSeconds, now)) return { kind: "expired", run };
    const text = transcript === undefined ? undefined : decodeText(transcript);
    return {
      kind: "found",
      run,
      conversationId: typeof conversationId === "string" ? conversationId : run.runId,
      transcript: text === undefined ? undefined : (JSON.parse(text) as unknown),
      transcriptDroppedMessages: Number(transcriptDroppedMessages ?? 0),
      approvalWaitedMs,
    };
  }

  /**
   * Marks a run still going (`UNFINISHED_STATUSES`: a durable run may fail while it waits for a decision
   * or for budget) `failed` after an unexpected server error (`reason` is a generic sentence, never the
   * error's message).
   * @returns false when the record was not going (it ended first, or is missing)
   * @throws the SDK's error for anything but the failed condition
   */
  async fail(tenantId: string, runId: string, reason: string, now = this.date()): Promise<boolean> {
    return this.updateIfRunning(
      tenantId,
      runId,
      { status: "failed", reason, finishedAt: now.toISOString(), updatedAt: now.toISOString() },
      UNFINISHED_STATUSES,
    );
  }

  /**
   * Marks a run still going (`UNFINISHED_STATUSES`) `cancelled` (its durable execution was stopped);
   * `reason` says who cancelled.
   * @returns false when the record was not going (it ended first, or is missing)
   * @throws the SDK's error for anything but the failed condition
   */
  async cancel(tenantId: string, runId: string, reason: string, now = this.date()): Promise<boolean> {
    return this.updateIfRunning(
      tenantId,
      runId,
      { status: "cancelled", reason, finishedAt: now.toISOString(), updatedAt: now.toISOString() },
      UNFINISHED_STATUSES,
    );
  }

  /**
   * Records the limits a running run goes on with (a synchronous run handed over to a durable execution
   * takes the durable run's), so the record shows the limits in force; the run is durable from then on,
   * so in the same write its synchronous deadline gives way to `endsAt` (ISO 8601 UTC), its execution's
   * latest end, which the read rule judges it by from then on.
   * @returns false when the record was not `running`
   * @throws the SDK's error for anything but the failed condition
   */
  async setLimits(
    tenantId: string,
    runId: string,
    limits: RunRecord["limits"],
    endsAt: string,
    now = this.date(),
  ): Promise<boolean> {
    return this.updateIfRunning(
      tenantId,
      runId,
      { limits, updatedAt: now.toISOString(), [SYNC_DEADLINE_ATTRIBUTE]: endsAt },
      ["running"],
    );
  }

  /**
   * Moves a durable run between `running` and `awaiting_quota` (it waits for budget, docs/quotas.md), only
   * from the other of the two. @returns false when it was not there; @throws the SDK's other errors
   */
  async setAwaitingQuota(tenantId: string, runId: string, waiting: boolean, now = this.date()) {
    const [from, to] = waiting ? ["running", "awaiting_quota"] : ["awaiting_quota", "running"];
    return this.updateIfRunning(tenantId, runId, { status: to, updatedAt: now.toISOString() }, [from]);
  }

  /**
   * Moves a run between `running` and `awaiting_approval` (a durable run waits for a person's decision,
   * or goes on after it); only from the other of the two, so a finished or cancelled run stays so. Each
   * move also adds `now` (epoch ms) to the internal sum of wait starts or of wait ends, so the time the
   * run spent waiting is their difference ({@link ContinuationRead} `approvalWaitedMs`) — two single
   * additions, since one update expression cannot subtract a stored start from `now` and add it too.
   * `soFar` (a run that starts to wait): the calls it made, the one of the cycle it waits in included.
   * @returns false when the record was not in the other status (already there, ended, or missing)
   * @throws the SDK's error for anything but the failed condition
   */
  async setWaiting(
    tenantId: string,
    runId: string,
    waiting: boolean,
    now = this.date(),
    soFar?: RunSoFar,
  ): Promise<boolean> {
    const [from, to, sum] = waiting
      ? ["running", "awaiting_approval", WAIT_STARTS_ATTRIBUTE]
      : ["awaiting_approval", "running", WAIT_ENDS_ATTRIBUTE];
    return this.updateIfRunning(
      tenantId,
      runId,
      { status: to, updatedAt: now.toISOString(), ...soFar },
      [from],
      [],
      {
        name: sum,
        amount: now.getTime(),
      },
    );
  }

  /**
   * Reads a run record alone (one consistent GetItem, no steps); a record past its `ttl` counts as
   * absent. For readers that only need its owner and status (the event stream checks whether a run
   * ended).
   * @returns undefined when the tenant has no such (live) run
   */
  async getRecord(tenantId: string, runId: string, now = this.date()): Promise<RunRecord<S> | undefined> {
    const item = await getItem(this.client, this.tableName, tableKey(tenantId, keys.run(runId)));
    const split = item && splitItem(item);
    if (split?.type !== "run") return undefined;
    if (!isLive(split.expiresAtSeconds, now)) return undefined;
    return this.seen(split.attributes);
  }

  /**
   * One page of `tenantId`'s runs that pass `filter` (whose user, status, start and id), newest first,
   * from the listing index (shared/store/run-list.ts `queryRunList`: at most 500 index items read per
   * page, so a page may hold fewer than `limit` while `nextCursor` is set; eventually consistent on
   * AWS). Records written before the index listed runs are not in it. Access is the caller's: the
   * filter's `userId` is how a listing stays within what its reader may see (shared/runs/queries.ts).
   * @param options.limit page size, a positive integer (the API bounds it at 100)
   * @param options.cursor a `nextCursor` of an earlier page of this tenant's runs
   * @param options.withTotal also count the runs the filter passes (`total`: run-list.ts `countRunList`,
   *   exact within its read budget, else a lower bound)
   * @throws InvalidCursorError for a cursor not issued for this tenant's runs (nothing is read); the
   *   SDK's error for a failed read
   */
  async listPage(
    tenantId: string,
    options: { limit: number; cursor?: string | undefined; filter?: RunListFilter; withTotal?: boolean },
    now = this.date(),
  ): Promise<{ runs: RunRecord<S>[]; nextCursor: string | undefined; total?: number }> {
    const filter = withReadRule(options.filter ?? {}, this.options.readRule);
    const nowSeconds = Math.floor(now.getTime() / 1000);
    const [page, total] = await Promise.all([
      queryRunList(this.client, this.tableName, tenantId, { ...options, filter }, nowSeconds),
      options.withTotal
        ? countRunList(this.client, this.tableName, tenantId, filter, nowSeconds).then(({ count }) => count)
        : undefined,
    ]);
    return {
      runs: page.items.map((item) => this.seen(splitItem(item).attributes)),
      nextCursor: page.nextCursor,
      ...(total === undefined ? {} : { total }),
    };
  }

  /**
   * Reads a run and its steps (in cycle order) with consistent reads. Items past their `ttl` count as
   * absent (DynamoDB deletes expired items lazily, up to days later).
   * @returns undefined when the tenant has no such run
   */
  async get(
    tenantId: string,
    runId: string,
    signal?: AbortSignal,
    now = this.date(),
  ): Promise<{ run: RunRecord<S>; steps: RunStep<S>[] } | undefined> {
    const { items } = await queryTenant(this.client, this.tableName, {
      tenantId,
      prefix: keys.run(runId),
      ...(signal ? { signal } : {}),
    });
    const live = items
      .map(splitItem)
      .filter((item) => item.attributes.runId === runId && isLive(item.expiresAtSeconds, now));
    const runItem = live.find((item) => item.type === "run");
    if (!runItem) return undefined;
    const steps = live
      .filter((item) => item.type === "run_step")
      .map(({ attributes: { runId: _runId, ...step } }) => step as unknown as RunStep<S>)
      .sort((a, b) => a.cycle - b.cycle);
    return { run: this.seen(runItem.attributes), steps };
  }

  /** Now on the store's clock (`options.now`; default the wall clock). */
  private date(): Date {
    return new Date(this.options.now?.() ?? Date.now());
  }

  /** The TTL of an item written at `now`: epoch seconds, `ttlSeconds` later. */
  private expiryFrom(now: Date): number {
    return Math.floor(now.getTime() / 1000) + this.ttlSeconds;
  }

  /** A run item's own attributes as its readers see the record ({@link RunReadRule}). */
  private seen(attributes: StoredItem): RunRecord<S> {
    const { run, syncDeadlineAt } = toRunRecord<S>(attributes);
    return this.options.readRule ? this.options.readRule.view(run, syncDeadlineAt) : run;
  }

  /**
   * Sets `fields` on the run record (removing the internal attributes `remove` names) if it exists and is
   * still `running` (or one of `from`), and not abandoned (shared/store/run-update.ts `updateRunIf`).
   */
  private updateIfRunning(
    tenantId: string,
    runId: string,
    fields: Record<string, unknown>,
    from: readonly string[] = ["running"],
    remove: readonly string[] = [],
    add?: { name: string; amount: number },
  ): Promise<boolean> {
    return updateRunIf(
      this.client,
      this.tableName,
      { tenantId, runId },
      { fields, from, remove, add, abandonedBefore: this.options.readRule?.abandonedBefore() },
    );
  }
}
