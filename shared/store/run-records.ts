/**
 * The shapes the run store keeps (a run record, its audit steps, what a continuation reads back) and the
 * mapping between them and their items. The store itself is shared/store/runs.ts.
 */

import type * as z from "zod";
import { sha256Hex } from "../hash.js";
import type { Cost } from "../money/cost.js";
import type { TokenUsage } from "../token-usage.js";
import { COMPRESS_ABOVE_BYTES, type EncodedText, encodeText } from "./compressed.js";
import type {
  ModelRequestSummary,
  PromptSummary,
  RECORD_STATUSES,
  RunRecordSchema,
  RunStepSchema,
  RunStepToolCallSchema,
} from "./run-record-schema.js";
import type { StoredItem } from "./table.js";

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

export type { TokenUsage } from "../token-usage.js";

/**
 * The statuses of a run that is still going (see {@link RunRecordStatus}): more will be written, its
 * outcome and its events. Every other status is final.
 */
export const UNFINISHED_STATUSES: readonly string[] = ["running", "awaiting_approval", "awaiting_quota"];

/**
 * Where a run is: `running` from the first write until the outcome is stored; then the loop's terminal
 * status; `failed` when the server itself failed mid-run (an unexpected error, not a model or tool
 * failure); `cancelled` when a durable run was stopped (`POST /v1/runs/{runId}/cancel`);
 * `awaiting_approval` while a durable run waits for a person's decision (docs/approvals.md);
 * `awaiting_quota` while a durable run waits for budget (docs/quotas.md).
 */
export type RunRecordStatus<S extends RunShapes = RunShapes> = (typeof RECORD_STATUSES)[number] | S["status"];

/**
 * The stored run: the fields of ./run-record-schema.ts `RunRecordSchema` (each described there), with
 * `status` and `grounding` narrowed from their bound to the agent's shapes `S` ({@link RunShapes}).
 */
export type RunRecord<S extends RunShapes = RunShapes> = Omit<
  z.infer<typeof RunRecordSchema>,
  "status" | "grounding"
> & {
  status: RunRecordStatus<S>;
  grounding: S["grounding"] | null;
};

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

/** Internal run-item attribute (never part of a {@link RunRecord}): the sum of wait starts, epoch ms. */
export const WAIT_STARTS_ATTRIBUTE = "approvalWaitStartsMs";
/** Internal run-item attribute (never part of a {@link RunRecord}): the sum of wait ends, epoch ms. */
export const WAIT_ENDS_ATTRIBUTE = "approvalWaitEndsMs";
/**
 * Internal run-item attribute (never part of a {@link RunRecord}): the instant (ISO 8601 UTC) the run's
 * writer must have ended by, written at its start: a synchronous run's deadline, a durable run's
 * execution's latest end (replaced by it when a synchronous run is handed over to one). Absent on
 * records written before it was kept. See {@link RunReadRule}.
 */
export const SYNC_DEADLINE_ATTRIBUTE = "syncDeadlineAt";

/**
 * How readers see a run the store holds, the application's rule for a synchronous run killed mid-run
 * (shared/runs/abandoned.ts), given to the store where it is built (shared/deps.ts) so every read says
 * the same:
 * - `view(run, syncDeadlineAt)`: the record as read (`syncDeadlineAt`: {@link SYNC_DEADLINE_ATTRIBUTE},
 *   undefined when the item has none); applied by every read of a record
 * - `abandonedBefore()`: an ISO 8601 UTC instant; an unfinished record whose writer's deadline is before
 *   it is the one `view` shows as `abandoned`: a listing's `status` / `statuses` filter reads it so, and
 *   a write conditioned on an unfinished record no longer finds it so
 * - `deadlineAbandonedAt(instant)`: the writer's deadline (ISO 8601 UTC) of a run that reads abandoned
 *   from `instant` (ISO 8601) on: a listing of runs changed after `instant` keeps those abandoned since
 */
export interface RunReadRule<S extends RunShapes = RunShapes> {
  view(run: RunRecord<S>, syncDeadlineAt: string | undefined): RunRecord<S>;
  abandonedBefore(): string;
  deadlineAbandonedAt(instant: string): string;
}

/**
 * One tool call in an audit step: ./run-record-schema.ts `RunStepToolCallSchema` (described there), its
 * `result` the agent's tool result envelope `S["toolResult"]`.
 */
export type RunStepToolCall<S extends RunShapes = RunShapes> = Omit<
  z.infer<typeof RunStepToolCallSchema>,
  "result"
> & { result: S["toolResult"] };

/**
 * One audit step: ./run-record-schema.ts `RunStepSchema` (each field described there), its tool calls'
 * results the agent's `S["toolResult"]` (see {@link RunStepToolCall}).
 */
export type RunStep<S extends RunShapes = RunShapes> = Omit<z.infer<typeof RunStepSchema>, "toolCalls"> & {
  toolCalls: RunStepToolCall<S>[];
};

/**
 * What the store needs of one loop cycle to write its audit step (the agent's `CycleRecord` is one):
 * the cycle number (from 1), the request summary, the finish reason, the model call's latency (ms), the
 * cycle's tokens, and each tool call's id, name, raw arguments and result.
 */
export interface CycleInput<S extends RunShapes = RunShapes> {
  cycle: number;
  request: ModelRequestSummary;
  finishReason: string | null;
  modelLatencyMs: number;
  usage: TokenUsage;
  toolCalls: ReadonlyArray<{ id: string; name: string; arguments: string; result: S["toolResult"] }>;
  /** The model call's cost as the step stores it (`cost`), when it was costed. */
  stepCost?: Cost | null;
}

/**
 * The outcome fields written when a run ends. `transcript`: the run's conversation for later runs to
 * continue (shared/agent/transcript.ts `transcriptOf`), stored encoded with the outcome in the same write.
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
  cost?: Cost | null;
  costNote?: string | null;
}

/**
 * What a running run's record shows of the model calls made so far (./run-record-schema.ts): the
 * cycles reached, their tokens and, when costed, their summed cost (`costNote` naming a model without a
 * price).
 */
export interface RunSoFar {
  cyclesRecorded: number;
  usage: TokenUsage;
  cost?: Cost | null;
  costNote?: string | null;
}

/**
 * Options of a {@link RunStore}, bound once where it is created (shared/deps.ts):
 * - `shortenTranscript`: a shorter form of a transcript, tried while its encoding is over
 *   {@link MAX_STORED_TRANSCRIPT_BYTES} (the agent's whole-turn cut, shared/agent/transcript.ts
 *   `halveHistory`: the store does not know what a turn is). A result that is not shorter than its input
 *   makes the store keep an empty transcript. Default: no shortening (an empty transcript at once).
 * - `promptExcerptChars`: how many characters of a prompt (its start) a record keeps (config
 *   PROMPT_EXCERPT_CHARS); default none.
 * - `readRule`: how readers see a run, see {@link RunReadRule}; default: as stored.
 * - `now`: the clock (epoch ms) writes are dated by and expiry (`ttl`) is judged by when a call names no
 *   instant: the runs' clock (shared/deps.ts); default the wall clock.
 */
export interface RunStoreOptions<S extends RunShapes = RunShapes> {
  shortenTranscript?: (messages: ReadonlyArray<S["message"]>) => ReadonlyArray<S["message"]>;
  promptExcerptChars?: number;
  readRule?: RunReadRule<S>;
  now?: () => number;
}

/**
 * What a record keeps of `prompt`: its length, its SHA-256 and, unless `excerptChars` is 0, its first
 * `excerptChars` characters (code points, so no character is cut in two; the whole prompt when shorter).
 */
export function promptFacts(prompt: string, excerptChars: number): PromptSummary {
  const facts = { chars: prompt.length, sha256: sha256Hex(prompt) };
  if (excerptChars === 0) return facts;
  const excerpt = prompt.length <= excerptChars ? prompt : Array.from(prompt).slice(0, excerptChars).join("");
  return { ...facts, excerpt };
}

/** Raw tool-call arguments longer than this (characters) are cut in the audit step. */
export const MAX_ARGUMENT_CHARS = 8_192;
/** A step whose JSON exceeds this many bytes drops tool result `data` (DynamoDB items are ≤ 400 KB). */
export const MAX_STEP_BYTES = 300_000;

/** Turns a loop cycle record into an audit step, bounding its size. */
export function toStep<S extends RunShapes>(record: CycleInput<S>, now: Date): RunStep<S> {
  const step: RunStep<S> = {
    cycle: record.cycle,
    recordedAt: now.toISOString(),
    request: record.request,
    finishReason: record.finishReason,
    modelLatencyMs: record.modelLatencyMs,
    usage: record.usage,
    ...(record.stepCost === undefined ? {} : { cost: record.stepCost }),
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
 * since records were first written defaulted, and the internal attributes (transcript, approval waits,
 * synchronous deadline) set apart.
 */
export function toRunRecord<S extends RunShapes>(
  attributes: StoredItem,
): {
  run: RunRecord<S>;
  transcript: unknown;
  transcriptDroppedMessages: unknown;
  approvalWaitedMs: number;
  conversationId: unknown;
  syncDeadlineAt: string | undefined;
} {
  const {
    transcript,
    transcriptDroppedMessages,
    conversationId,
    [WAIT_STARTS_ATTRIBUTE]: waitStarts,
    [WAIT_ENDS_ATTRIBUTE]: waitEnds,
    [SYNC_DEADLINE_ATTRIBUTE]: syncDeadlineAt,
    ...rest
  } = attributes;
  return {
    run: {
      previousRunId: null,
      history: null,
      grounding: null,
      cost: null,
      costNote: null,
      ...rest,
      // Records written before the attribute existed belong to a conversation of their own.
      conversationId: typeof conversationId === "string" ? conversationId : rest.runId,
    } as unknown as RunRecord<S>,
    transcript,
    transcriptDroppedMessages,
    conversationId,
    approvalWaitedMs: Math.max(0, Number(waitEnds ?? 0) - Number(waitStarts ?? 0)),
    syncDeadlineAt: typeof syncDeadlineAt === "string" ? syncDeadlineAt : undefined,
  };
}

/**
 * The stored attributes of a transcript: its JSON encoded by shared/store/compressed.ts (gzip above
 * {@link COMPRESS_ABOVE_BYTES}). Over {@link MAX_STORED_TRANSCRIPT_BYTES} even compressed, it is shortened
 * by `shorten` ({@link RunStoreOptions.shortenTranscript}; default: straight to empty) until it fits; in
 * the end an empty transcript always does. `transcriptDroppedMessages` counts what was left out.
 */
export function transcriptAttributes<S extends RunShapes>(
  transcript: ReadonlyArray<S["message"]>,
  shorten: RunStoreOptions<S>["shortenTranscript"] = () => [],
): { transcript: EncodedText; transcriptDroppedMessages: number } {
  const limits = { compressAboveBytes: COMPRESS_ABOVE_BYTES, maxBytes: MAX_STORED_TRANSCRIPT_BYTES };
  let kept = transcript;
  for (;;) {
    const encoded = encodeText(JSON.stringify(kept), limits);
    if (encoded) return { transcript: encoded, transcriptDroppedMessages: transcript.length - kept.length };
    const shorter = shorten(kept);
    kept = shorter.length < kept.length ? shorter : [];
  }
}
