import { ConditionalCheckFailedException } from "@aws-sdk/client-dynamodb";
import { type DynamoDBDocumentClient, PutCommand, UpdateCommand } from "@aws-sdk/lib-dynamodb";
import { sha256Hex } from "../hash.js";
import { COMPRESS_ABOVE_BYTES, decodeText, type EncodedText, encodeText } from "./compressed.js";
import { keys } from "./keys.js";
import { queryKept, queryTenant } from "./query.js";
import {
  getItem,
  ITEM_ABSENT,
  ITEM_PRESENT,
  type StoredItem,
  splitItem,
  tableItem,
  tableKey,
} from "./table.js";
import { setFields } from "./update.js";

/**
 * What the run store persists of the agent's types, as type parameters bound once where the store is
 * created (shared/deps.ts), so the store does not import the agent layer:
 * - `status`: the loop's terminal statuses (`RunStatus`)
 * - `toolResult`: the tool result envelope of one call (`ToolResult`); only its `data` is read, to drop
 *   it from a step over the size cap
 * - `message`: one message of the transcript a finished run stores for the runs continuing it
 *   (`HistoryMessage`); stored as JSON, never read by the store
 * - `grounding`: the grounding check of a finished run's answer (`AnswerGrounding`); stored as is
 */
export interface RunShapes {
  status: string;
  toolResult: { data: unknown };
  message: unknown;
  grounding?: unknown;
}

/** Token usage of a run or a cycle, as the agent counts it (`RunUsage`) and the store keeps it. */
export interface TokenUsage {
  promptTokens: number;
  completionTokens: number;
  totalTokens: number;
}

/**
 * Where a run is: `running` from the first write until the outcome is stored; then the loop's terminal
 * status; `failed` when the server itself failed mid-run (an unexpected error, not a model or tool
 * failure); `cancelled` when a durable run was stopped (`POST /v1/runs/{runId}/cancel`);
 * `awaiting_approval` while a durable run waits for a person's decision (docs/approvals.md).
 */
export type RunRecordStatus<S extends RunShapes = RunShapes> =
  | "running"
  | "awaiting_approval"
  | "failed"
  | "cancelled"
  | S["status"];

/**
 * The stored run (one item, sort key `RUN#<runId>`), written at start and updated as cycles complete
 * and when the run ends. The prompt itself is not stored: only its length and SHA-256, so the audit
 * can prove which prompt ran without keeping its text.
 * - `limits`: the effective caps of this run (after clamping the request's to the server's), ms for time
 * - `cyclesRecorded`: audit steps written so far (how far a killed run got)
 * - `usage`: tokens summed over recorded cycles while running, the run's total once finished
 * - `expiresAt`: when DynamoDB TTL may delete the record (ISO 8601; the item's `ttl` in epoch seconds)
 * - `previousRunId`: the run this one continues, null for a new conversation
 * - `history`: the earlier conversation it carried, see {@link HistorySummary}; null without one
 * - `grounding`: the grounding check of its answer (docs/evals.md, "Grounding"); null until it finished
 *   with an answer (and for records written before the check existed)
 * - `conversationId`: the conversation the run belongs to: its first run's id, or the id an A2A context
 *   or an AG-UI thread gave it (docs/protocols.md); a continuation takes its previous run's
 * The transcript a finished run stores for its continuations is an internal attribute of the same item
 * (never returned here, never logged), see {@link RunStore.readContinuation}.
 */
export interface RunRecord<S extends RunShapes = RunShapes> {
  runId: string;
  tenantId: string;
  userId: string;
  status: RunRecordStatus<S>;
  prompt: { chars: number; sha256: string };
  limits: { maxCycles: number; timeoutMs: number };
  startedAt: string;
  updatedAt: string;
  finishedAt: string | null;
  cyclesRecorded: number;
  cycles: number | null;
  answer: string | null;
  reason: string | null;
  usage: TokenUsage;
  durationMs: number | null;
  expiresAt: string;
  previousRunId: string | null;
  history: HistorySummary | null;
  grounding: S["grounding"] | null;
  conversationId: string;
}

/**
 * The size of the earlier conversation a run carried: `messages` sent, their `estimatedTokens`
 * (shared/agent/history.ts estimate) and `droppedMessages`, the previous transcript's messages left out
 * to stay within HISTORY_MAX_TOKENS and the run's token budget (plus any its run dropped when storing it).
 */
export interface HistorySummary {
  messages: number;
  estimatedTokens: number;
  droppedMessages: number;
}

/**
 * Cap on a stored transcript in bytes after compression. It shares the run record's item with the
 * answer and the outcome; DynamoDB items are limited to 400 KB, and 300 000 bytes leaves room for an
 * answer as long as a model writes in one response. A transcript over the cap is stored shortened by
 * {@link RunStoreOptions.shortenTranscript} (the oldest whole turns dropped) until it fits;
 * `transcriptDroppedMessages` counts what was left out, and the continuing run reports it in its
 * `history.droppedMessages`.
 */
export const MAX_STORED_TRANSCRIPT_BYTES = 300_000;

/**
 * What {@link RunStore.readContinuation} found under a run id of a tenant:
 * - `missing`: no such run (or DynamoDB has deleted it)
 * - `expired`: the record is past its `ttl` but not yet deleted by DynamoDB TTL (treated as gone)
 * - `found`: the live record; `transcript` is the stored transcript as parsed JSON (unvalidated, the
 *   caller checks its shape), undefined when none was stored (a run still running, failed, or finished
 *   before transcripts were kept); `transcriptDroppedMessages` what was cut to store it; `conversationId`
 *   the conversation it belongs to (its first run's id; the run's own id for records written before)
 */
export type ContinuationRead<S extends RunShapes = RunShapes> =
  | { kind: "missing" }
  | { kind: "expired"; run: RunRecord<S> }
  | {
      kind: "found";
      run: RunRecord<S>;
      transcript: unknown;
      transcriptDroppedMessages: number;
      conversationId: string;
      approvalWaitedMs: number;
    };

/** Internal run-item attributes (never part of a {@link RunRecord}): sums of wait starts and ends, epoch ms. */
const WAIT_STARTS_ATTRIBUTE = "approvalWaitStartsMs";
const WAIT_ENDS_ATTRIBUTE = "approvalWaitEndsMs";

/**
 * One tool call in an audit step: the model's raw arguments (cut to {@link MAX_ARGUMENT_CHARS}, with
 * `argumentsTruncated` saying so) and the backend's tool result (status, data or error, latency,
 * idempotency key).
 */
export interface RunStepToolCall<S extends RunShapes = RunShapes> {
  id: string;
  name: string;
  arguments: string;
  argumentsTruncated: boolean;
  result: S["toolResult"];
}

/**
 * One audit step: what happened in one cycle (sort key `RUN#<runId>#STEP#<cycle>`).
 * - `request`: a summary of the model request (message count, tools offered), never the prompt text
 * - `modelLatencyMs`: wall time of the model call in ms; `usage`: this cycle's tokens
 */
export interface RunStep<S extends RunShapes = RunShapes> {
  cycle: number;
  recordedAt: string;
  request: CycleInput<S>["request"];
  finishReason: string | null;
  modelLatencyMs: number;
  usage: TokenUsage;
  toolCalls: RunStepToolCall<S>[];
}

/**
 * What the store needs of one loop cycle to write its audit step (the agent's `CycleRecord` is one):
 * the cycle number (from 1), the request summary, the finish reason, the model call's latency (ms), the
 * cycle's tokens, and each tool call's id, name, raw arguments and result.
 */
export interface CycleInput<S extends RunShapes = RunShapes> {
  cycle: number;
  request: { messageCount: number; toolsOffered: string[] };
  finishReason: string | null;
  modelLatencyMs: number;
  usage: TokenUsage;
  toolCalls: ReadonlyArray<{ id: string; name: string; arguments: string; result: S["toolResult"] }>;
}

/**
 * The outcome fields written when a run ends. `transcript`: the run's conversation for later runs to
 * continue (shared/agent/history.ts `transcriptOf`), stored encoded with the outcome in the same write.
 */
export interface RunFinish<S extends RunShapes = RunShapes> {
  status: S["status"];
  cycles: number;
  answer: string | null;
  reason: string | null;
  usage: TokenUsage;
  durationMs: number;
  grounding?: S["grounding"] | null;
  transcript?: ReadonlyArray<S["message"]>;
}

/**
 * Options of a {@link RunStore}, bound once where it is created (shared/deps.ts):
 * - `shortenTranscript`: a shorter form of a transcript, tried while its encoding is over
 *   {@link MAX_STORED_TRANSCRIPT_BYTES} (the agent's whole-turn cut, shared/agent/history.ts
 *   `halveHistory`: the store does not know what a turn is). A result that is not shorter than its input
 *   makes the store keep an empty transcript. Default: no shortening (an empty transcript at once).
 */
export interface RunStoreOptions<S extends RunShapes = RunShapes> {
  shortenTranscript?: (messages: ReadonlyArray<S["message"]>) => ReadonlyArray<S["message"]>;
}

/** Sort-key prefix of run records and their steps (`RUN#<runId>`, `RUN#<runId>#STEP#…`). */
const RUN_PREFIX = "RUN#";
/** Table reads of one {@link RunStore.listPage} at most. */
export const RUN_LIST_READS = 5;
/** Items (records and steps) each read of {@link RunStore.listPage} asks for. */
export const RUN_LIST_READ_SIZE = 100;

/** Raw tool-call arguments longer than this (characters) are cut in the audit step. */
export const MAX_ARGUMENT_CHARS = 8_192;
/** A step whose JSON exceeds this many bytes drops tool result `data` (DynamoDB items are ≤ 400 KB). */
const MAX_STEP_BYTES = 300_000;

const ZERO_USAGE: TokenUsage = { promptTokens: 0, completionTokens: 0, totalTokens: 0 };

/**
 * Run records and their audit steps, tenant-scoped (`TENANT#<tenantId>`), each item with a `ttl`
 * (epoch seconds) of `ttlSeconds` after it was written (config RUN_TTL_SECONDS). Every write is a single
 * conditional item write, so a run killed mid-way keeps the record and steps written so far.
 * `S` binds the agent's status, tool result and transcript message types (see {@link RunShapes});
 * `options` the transcript policy (see {@link RunStoreOptions}).
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
   * @param input.prompt the prompt text; only its length and SHA-256 are stored
   * @param input.conversationId the conversation's id (its first run's id, or a protocol's context or
   *   thread id; default this run's)
   * @returns the record as stored
   * @throws ConditionalCheckFailedException when the runId already exists; the SDK's error otherwise
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
    },
    now: Date = new Date(),
  ): Promise<RunRecord<S>> {
    const expiresAtSeconds = this.expiryFrom(now);
    const record: RunRecord<S> = {
      runId: input.runId,
      tenantId: input.tenantId,
      userId: input.userId,
      status: "running",
      prompt: { chars: input.prompt.length, sha256: sha256Hex(input.prompt) },
      limits: input.limits,
      startedAt: now.toISOString(),
      updatedAt: now.toISOString(),
      finishedAt: null,
      cyclesRecorded: 0,
      cycles: null,
      answer: null,
      reason: null,
      usage: ZERO_USAGE,
      durationMs: null,
      expiresAt: new Date(expiresAtSeconds * 1000).toISOString(),
      previousRunId: input.previousRunId ?? null,
      history: input.history ?? null,
      grounding: null,
      conversationId: input.conversationId ?? input.runId,
    };
    await this.client.send(
      new PutCommand({
        TableName: this.tableName,
        Item: tableItem(tableKey(input.tenantId, keys.run(input.runId)), "run", record, expiresAtSeconds),
        ConditionExpression: ITEM_ABSENT,
      }),
    );
    return record;
  }

  /**
   * Appends one cycle's audit step (a new item; conditional, so a cycle is never rewritten), then moves
   * the run record's `cyclesRecorded`, `usage` (tokens so far) and `updatedAt` forward while it is still
   * `running`.
   * @param usageSoFar tokens summed over this and earlier cycles
   * @throws the SDK's error when a write fails
   */
  async appendStep(
    tenantId: string,
    runId: string,
    record: CycleInput<S>,
    usageSoFar: TokenUsage,
    now: Date = new Date(),
  ): Promise<RunStep<S>> {
    const step = toStep(record, now);
    await this.client.send(
      new PutCommand({
        TableName: this.tableName,
        Item: tableItem(
          tableKey(tenantId, keys.runStep(runId, record.cycle)),
          "run_step",
          { runId, ...step },
          this.expiryFrom(now),
        ),
        ConditionExpression: ITEM_ABSENT,
      }),
    );
    await this.updateIfRunning(tenantId, runId, {
      cyclesRecorded: record.cycle,
      usage: usageSoFar,
      updatedAt: now.toISOString(),
    });
    return step;
  }

  /**
   * Stores a run's outcome (only while the record is `running`, so an outcome is written once), with its
   * transcript when given (see {@link transcriptAttributes}): one write, so a finished run always has
   * the transcript its continuations need.
   * @returns false when the record was not `running` (already finished, or missing)
   * @throws the SDK's error for anything but the failed condition
   */
  async finish(
    tenantId: string,
    runId: string,
    outcome: RunFinish<S>,
    now: Date = new Date(),
  ): Promise<boolean> {
    const { transcript, ...fields } = outcome;
    return this.updateIfRunning(tenantId, runId, {
      ...fields,
      ...(transcript ? this.transcriptAttributes(transcript) : {}),
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
    now: Date = new Date(),
    signal?: AbortSignal,
  ): Promise<ContinuationRead<S>> {
    const item = await getItem(this.client, this.tableName, tableKey(tenantId, keys.run(runId)), signal);
    const split = item && splitItem(item);
    if (split?.type !== "run") return { kind: "missing" };
    const { run, transcript, transcriptDroppedMessages, conversationId, approvalWaitedMs } = toRunRecord<S>(
      split.attributes,
    );
    if (Number(split.expiresAtSeconds) <= Math.floor(now.getTime() / 1000)) return { kind: "expired", run };
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
   * Marks a run `failed` after an unexpected server error (best effort; `reason` is a generic sentence,
   * never the error's message).
   * @returns false when the record was not `running`
   */
  async fail(tenantId: string, runId: string, reason: string, now: Date = new Date()): Promise<boolean> {
    return this.updateIfRunning(tenantId, runId, {
      status: "failed",
      reason,
      finishedAt: now.toISOString(),
      updatedAt: now.toISOString(),
    });
  }

  /**
   * Marks a running run `cancelled` (its durable execution was stopped); `reason` says who cancelled.
   * @returns false when the record was not `running` (it ended first, or is missing)
   * @throws the SDK's error for anything but the failed condition
   */
  async cancel(tenantId: string, runId: string, reason: string, now: Date = new Date()): Promise<boolean> {
    return this.updateIfRunning(
      tenantId,
      runId,
      { status: "cancelled", reason, finishedAt: now.toISOString(), updatedAt: now.toISOString() },
      ["running", "awaiting_approval"],
    );
  }

  /**
   * Records the limits a running run goes on with (a synchronous run handed over to a durable execution
   * takes the durable run's), so the record shows the limits in force.
   * @returns false when the record was not `running`
   * @throws the SDK's error for anything but the failed condition
   */
  async setLimits(
    tenantId: string,
    runId: string,
    limits: RunRecord["limits"],
    now: Date = new Date(),
  ): Promise<boolean> {
    return this.updateIfRunning(tenantId, runId, { limits, updatedAt: now.toISOString() });
  }

  /**
   * Moves a run between `running` and `awaiting_approval` (a durable run waits for a person's decision,
   * or goes on after it); only from the other of the two, so a finished or cancelled run stays so. Each
   * move also adds `now` (epoch ms) to the internal sum of wait starts or of wait ends, so the time the
   * run spent waiting is their difference ({@link ContinuationRead} `approvalWaitedMs`) — two single
   * additions, since one update expression cannot subtract a stored start from `now` and add it too.
   * @returns false when the record was not in the other status (already there, ended, or missing)
   * @throws the SDK's error for anything but the failed condition
   */
  async setWaiting(
    tenantId: string,
    runId: string,
    waiting: boolean,
    now: Date = new Date(),
  ): Promise<boolean> {
    const [from, to, sum] = waiting
      ? ["running", "awaiting_approval", WAIT_STARTS_ATTRIBUTE]
      : ["awaiting_approval", "running", WAIT_ENDS_ATTRIBUTE];
    try {
      await this.client.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: tableKey(tenantId, keys.run(runId)),
          UpdateExpression:
            "SET #status = :to, #updatedAt = :updatedAt, #sum = if_not_exists(#sum, :zero) + :nowMs",
          ConditionExpression: `${ITEM_PRESENT} AND #status = :from`,
          ExpressionAttributeNames: { "#status": "status", "#updatedAt": "updatedAt", "#sum": sum },
          ExpressionAttributeValues: {
            ":to": to,
            ":from": from,
            ":updatedAt": now.toISOString(),
            ":zero": 0,
            ":nowMs": now.getTime(),
          },
        }),
      );
      return true;
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) return false;
      throw error;
    }
  }

  /**
   * Reads a run record alone (one consistent GetItem, no steps); a record past its `ttl` counts as
   * absent. For readers that only need its owner and status (the event stream checks whether a run
   * ended).
   * @returns undefined when the tenant has no such (live) run
   */
  async getRecord(
    tenantId: string,
    runId: string,
    now: Date = new Date(),
  ): Promise<RunRecord<S> | undefined> {
    const item = await getItem(this.client, this.tableName, tableKey(tenantId, keys.run(runId)));
    const split = item && splitItem(item);
    if (split?.type !== "run") return undefined;
    if (Number(split.expiresAtSeconds) <= Math.floor(now.getTime() / 1000)) return undefined;
    return toRunRecord<S>(split.attributes).run;
  }

  /**
   * One page of the runs `userId` started in `tenantId`, in run-id order, from the tenant's `RUN#` items
   * (records and their steps): reads up to {@link RUN_LIST_READS} table pages of
   * {@link RUN_LIST_READ_SIZE} items and keeps the user's live run records, so a page may hold fewer than
   * `limit` while `nextCursor` is set. Records past their `ttl` are left out.
   * @param options.limit page size, a positive integer (the API bounds it at 100)
   * @param options.cursor a `nextCursor` of an earlier page of this listing
   * @throws InvalidCursorError for a cursor not issued for this tenant's runs (nothing is read); the
   *   SDK's error for a failed read
   */
  async listPage(
    tenantId: string,
    userId: string,
    options: { limit: number; cursor?: string },
    now: Date = new Date(),
  ): Promise<{ runs: RunRecord<S>[]; nextCursor: string | undefined }> {
    const nowSeconds = Math.floor(now.getTime() / 1000);
    const page = await queryKept(
      this.client,
      this.tableName,
      { tenantId, prefix: RUN_PREFIX, ...(options.cursor === undefined ? {} : { cursor: options.cursor }) },
      {
        limit: options.limit,
        reads: RUN_LIST_READS,
        readSize: RUN_LIST_READ_SIZE,
        keep: (item) => {
          const split = splitItem(item);
          if (split.type !== "run" || Number(split.expiresAtSeconds) <= nowSeconds) return undefined;
          const { run } = toRunRecord<S>(split.attributes);
          return run.userId === userId ? run : undefined;
        },
      },
    );
    return { runs: page.kept, nextCursor: page.nextCursor };
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
    now: Date = new Date(),
  ): Promise<{ run: RunRecord<S>; steps: RunStep<S>[] } | undefined> {
    const { items } = await queryTenant(this.client, this.tableName, {
      tenantId,
      prefix: keys.run(runId),
      ...(signal ? { signal } : {}),
    });
    const nowSeconds = Math.floor(now.getTime() / 1000);
    const live = items
      .map(splitItem)
      .filter((item) => item.attributes.runId === runId && Number(item.expiresAtSeconds) > nowSeconds);
    const runItem = live.find((item) => item.type === "run");
    if (!runItem) return undefined;
    const steps = live
      .filter((item) => item.type === "run_step")
      .map(({ attributes: { runId: _runId, ...step } }) => step as unknown as RunStep<S>)
      .sort((a, b) => a.cycle - b.cycle);
    return { run: toRunRecord<S>(runItem.attributes).run, steps };
  }

  /**
   * The stored attributes of a transcript: its JSON encoded by shared/store/compressed.ts (gzip above
   * {@link COMPRESS_ABOVE_BYTES}). Over {@link MAX_STORED_TRANSCRIPT_BYTES} even compressed,
   * it is shortened by {@link RunStoreOptions.shortenTranscript} until it fits; in the end an empty
   * transcript always does.
   */
  private transcriptAttributes(transcript: ReadonlyArray<S["message"]>): {
    transcript: EncodedText;
    transcriptDroppedMessages: number;
  } {
    const limits = {
      compressAboveBytes: COMPRESS_ABOVE_BYTES,
      maxBytes: MAX_STORED_TRANSCRIPT_BYTES,
    };
    const shorten = this.options.shortenTranscript ?? (() => []);
    let kept = transcript;
    for (;;) {
      const encoded = encodeText(JSON.stringify(kept), limits);
      if (encoded) return { transcript: encoded, transcriptDroppedMessages: transcript.length - kept.length };
      const shorter = shorten(kept);
      kept = shorter.length < kept.length ? shorter : [];
    }
  }

  /** The TTL of an item written at `now`: epoch seconds, `ttlSeconds` later. */
  private expiryFrom(now: Date): number {
    return Math.floor(now.getTime() / 1000) + this.ttlSeconds;
  }

  /** Sets `fields` on the run record if it exists and is still `running` (or one of `from`; names are
   * placeholders, so reserved words such as `status` and `usage` are safe). */
  private async updateIfRunning(
    tenantId: string,
    runId: string,
    fields: Record<string, unknown>,
    from: readonly string[] = ["running"],
  ): Promise<boolean> {
    const set = setFields(fields);
    try {
      await this.client.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: tableKey(tenantId, keys.run(runId)),
          UpdateExpression: set.expression,
          ConditionExpression: `${ITEM_PRESENT} AND #status IN (${from.map((_, i) => `:from${i}`).join(", ")})`,
          ExpressionAttributeNames: { ...set.names, "#status": "status" },
          ExpressionAttributeValues: {
            ...set.values,
            ...Object.fromEntries(from.map((status, i) => [`:from${i}`, status])),
          },
        }),
      );
      return true;
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) return false;
      throw error;
    }
  }
}

/** Turns a loop cycle record into an audit step, bounding its size. */
function toStep<S extends RunShapes>(record: CycleInput<S>, now: Date): RunStep<S> {
  const step: RunStep<S> = {
    cycle: record.cycle,
    recordedAt: now.toISOString(),
    request: record.request,
    finishReason: record.finishReason,
    modelLatencyMs: record.modelLatencyMs,
    usage: record.usage,
    toolCalls: record.toolCalls.map((call) => ({
      id: call.id,
      name: call.name,
      arguments: call.arguments.slice(0, MAX_ARGUMENT_CHARS),
      argumentsTruncated: call.arguments.length > MAX_ARGUMENT_CHARS,
      result: call.result,
    })),
  };
  if (Buffer.byteLength(JSON.stringify(step)) > MAX_STEP_BYTES) {
    for (const call of step.toolCalls) {
      call.result = { ...call.result, data: { omitted: "tool result data too large for the audit step" } };
    }
  }
  return step;
}

/**
 * A run item's own attributes (table attributes already split off) as a {@link RunRecord}, fields added
 * since records were first written defaulted, and the internal transcript attributes set apart.
 */
function toRunRecord<S extends RunShapes>(
  attributes: StoredItem,
): {
  run: RunRecord<S>;
  transcript: unknown;
  transcriptDroppedMessages: unknown;
  approvalWaitedMs: number;
  conversationId: unknown;
} {
  const {
    transcript,
    transcriptDroppedMessages,
    conversationId,
    [WAIT_STARTS_ATTRIBUTE]: waitStarts,
    [WAIT_ENDS_ATTRIBUTE]: waitEnds,
    ...rest
  } = attributes;
  return {
    run: {
      previousRunId: null,
      history: null,
      grounding: null,
      ...rest,
      // Records written before the attribute existed belong to a conversation of their own.
      conversationId: typeof conversationId === "string" ? conversationId : rest.runId,
    } as unknown as RunRecord<S>,
    transcript,
    transcriptDroppedMessages,
    conversationId,
    approvalWaitedMs: Math.max(0, Number(waitEnds ?? 0) - Number(waitStarts ?? 0)),
  };
}
