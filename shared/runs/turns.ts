/**
 * A turn a protocol client asks for: an A2A message (shared/a2a/) or an AG-UI run (shared/agui/) starts a
 * run, or continues the conversation the client names, through the same start as `POST /v1/runs`
 * (shared/runs/start.ts `prepareRun`) and the one idempotency engine (shared/runs/exactly-once.ts): the
 * client's id of the message is the key, so a repeat is the same run, never a second one.
 */
import { canonicalJson } from "../agent/idempotency-key.js";
import type { ApiDeps } from "../deps.js";
import { DomainError } from "../domain-errors.js";
import { asyncRunId } from "../durable/executions.js";
import { sha256Hex } from "../hash.js";
import type { SecurityContext } from "../identity.js";
import type { ConversationHead } from "../store/conversations.js";
import { RUN_ABANDONED_STATUS } from "./abandoned.js";
import { isUsableKey, runOnce } from "./exactly-once.js";
import { prepareRun, type RunStart } from "./start.js";

/**
 * A turn as the adapter read it from its protocol:
 * - `operation`: the protocol's operation (`A2A SendMessage`, `AG-UI run`): the namespace of its keys
 * - `scope`: the prefix of the run scope (`a2a`, `agui`), so a key can never meet a REST Idempotency-Key
 * - `key`: the client's id of this message (A2A `messageId`, AG-UI `runId`): a usable key
 *   (`isUsableKey`, shared/runs/exactly-once.ts), which the adapter checks and refuses in its protocol;
 *   `keyName` is what the client calls it ("message id", "run id"), for the refusal of a reused key
 * - `conversationId`: the conversation the client names (A2A `contextId`, AG-UI `threadId`), if any;
 *   `unknownConversation` says whether one the caller never started is refused (A2A: contexts are the
 *   server's) or starts a conversation of that id (AG-UI: threads are the client's)
 * - `asked`: what else makes two messages under one key different (fingerprinted with the prompt)
 */
export interface TurnRequest {
  security: SecurityContext;
  prompt: string;
  operation: string;
  scope: string;
  key: string;
  keyName: string;
  conversationId?: string | undefined;
  unknownConversation: "refuse" | "start";
  asked?: unknown;
  prefersAsync: boolean;
  lambdaRemainingMs?: number | undefined;
}

/**
 * A turn checked and ready: `existing` when the key already has its run (a repeat: replayed, or still
 * starting), else `ready`, whose `start` runs it once (and may still find the key taken by a request
 * that raced this one: `existing` then) and `dispose` frees it when it is not started.
 */
export type PreparedTurn =
  | { kind: "existing"; runId: string }
  | {
      kind: "ready";
      runId: string;
      conversationId: string;
      start(): Promise<TurnStart>;
      dispose(): void;
    };

/**
 * How a ready turn went: this request `started` its run (how it started), or found it `existing`; with
 * `retryAfterSeconds` when a concurrent request with the same key still holds it (its run may have no
 * record yet).
 */
export type TurnStart =
  | { kind: "started"; start: RunStart }
  | { kind: "existing"; retryAfterSeconds?: number | undefined };

/**
 * What a turn uses: the API's dependencies (the run start, the run store, the conversation heads, the
 * one idempotency store, the logger).
 */
export type TurnDeps = ApiDeps;

/**
 * The run id of a turn: derived from the caller, the scoped key and the fingerprint (as an async start
 * under an Idempotency-Key derives it, shared/durable/executions.ts), so a repeat names the same run
 * whether it ran synchronously or durably, and a stream can follow it before it starts.
 */
export function turnRunId(request: TurnRequest): string {
  return asyncRunId(request.security, scopedKey(request), fingerprintOf(request));
}

/**
 * Checks a turn and makes it ready, or finds the run its key already has. A continuation is checked as
 * `POST /v1/runs` checks one (404 another user's or an unknown run, 409 one still running) before the
 * key is claimed. The conversation's head is the run its latest turn started; a head that never got
 * going (no record, `failed` or `cancelled`) is stepped over to the run it continued.
 * @throws DomainError NOT_FOUND (an unknown conversation where those are refused), the errors of
 *   `prepareRun` (a continuation's NOT_FOUND, PREVIOUS_RUN_IN_PROGRESS, PREVIOUS_RUN_NOT_CONTINUABLE);
 *   RangeError for a key that is not usable (the adapter's check was skipped); the store's errors
 */
export async function prepareTurn(deps: TurnDeps, request: TurnRequest): Promise<PreparedTurn> {
  const { security } = request;
  if (!isUsableKey(request.key)) throw new RangeError("A turn's key must be usable (isUsableKey).");
  const runId = turnRunId(request);
  const existing = await deps.runs.getRecord(security.tenantId, runId);
  if (existing && existing.userId === security.userId) return { kind: "existing", runId };
  const { conversations } = deps;
  const conversationId = request.conversationId ?? runId;
  const found = await conversations.head(security.tenantId, security.userId, conversationId);
  // A conversation this turn starts is named by its run id, so a head there is this turn's own: an
  // earlier send of the same key advanced it and was then refused (a rate limit, a quota) before its run
  // was written. The retry takes that head over instead of finding its own turn "in progress" for ever.
  const head = request.conversationId !== undefined || found?.headRunId === runId ? found : undefined;
  if (request.conversationId && !head && request.unknownConversation === "refuse") {
    throw new DomainError("NOT_FOUND", `There is no conversation ${request.conversationId} to continue.`, {
      facts: { conversationId: request.conversationId },
    });
  }
  // A head that is already this turn's run: a request with the same key (a retry racing the first)
  // advanced it before that run's record was read above. Its continuation is the one that request
  // chose, never the run itself; claiming the key below then finds the run the key has.
  const previousRunId = !head
    ? undefined
    : head.headRunId === runId
      ? (head.priorRunId ?? undefined)
      : await continuableRun(deps, security, head);
  const prepared = await prepareRun(deps, {
    security,
    body: { prompt: request.prompt, ...(previousRunId ? { previousRunId } : {}) },
    prefersAsync: request.prefersAsync,
    lambdaRemainingMs: request.lambdaRemainingMs,
    runId,
    conversationId,
  });
  const idempotency = { key: scopedKey(request), fingerprint: fingerprintOf(request) };
  const operation = {
    tenantId: security.tenantId,
    userId: security.userId,
    route: request.operation,
    ...idempotency,
    leaseExpiresAt: prepared.leaseExpiresAt,
  };
  const engine = { idempotency: deps.idempotency, logger: deps.logger };
  const advance = async () => {
    const moved = await conversations.advance(security.tenantId, security.userId, conversationId, {
      from: head,
      to: runId,
      prior: previousRunId ?? null,
    });
    if (moved === "moved") {
      throw new DomainError(
        "PREVIOUS_RUN_IN_PROGRESS",
        `Another turn of the conversation ${conversationId} started just now; send again once it has finished.`,
        { facts: { conversationId }, retryAfterSeconds: 1 },
      );
    }
  };
  return {
    kind: "ready",
    runId,
    conversationId,
    start: async () => {
      try {
        const outcome = await runOnce(engine, operation, KEEP_RUN_ID, async () => {
          await advance();
          return prepared.start(idempotency);
        });
        return turnStartOf(outcome, request.keyName);
      } finally {
        prepared.dispose();
      }
    },
    dispose: () => prepared.dispose(),
  };
}

/** What a repeat of a turn's key gets: the run it started (nothing is kept when it threw before one). */
const KEEP_RUN_ID = {
  keep: (start: RunStart) => ({
    kind: "turn_run",
    body: JSON.stringify({ runId: start.kind === "completed" ? start.outcome.runId : start.run.runId }),
  }),
};

/** The engine's outcome as a {@link TurnStart}; a key reused for another message is refused. */
function turnStartOf(outcome: Awaited<ReturnType<typeof runOnce<RunStart>>>, keyName: string): TurnStart {
  switch (outcome.kind) {
    case "executed":
      return { kind: "started", start: outcome.result };
    case "reused":
      throw new DomainError(
        "IDEMPOTENCY_KEY_REUSED",
        `This ${keyName} was already used for different input; use a new ${keyName} for new input.`,
      );
    case "in_progress":
      return { kind: "existing", retryAfterSeconds: outcome.retryAfterSeconds };
    default:
      return { kind: "existing" };
  }
}

/**
 * The run a new turn continues: the head, unless it never got going (no record: its start failed; or it
 * ended `failed`, `cancelled` or `abandoned` (killed mid-run: shared/runs/abandoned.ts), leaving no
 * transcript), then the run the head continued, if any.
 */
async function continuableRun(
  deps: TurnDeps,
  security: SecurityContext,
  head: ConversationHead,
): Promise<string | undefined> {
  const record = await deps.runs.getRecord(security.tenantId, head.headRunId);
  const leftNothing = ["failed", "cancelled", RUN_ABANDONED_STATUS];
  if (record && !leftNothing.includes(record.status)) return head.headRunId;
  return head.priorRunId ?? undefined;
}

/** The client's key in the turn's scope (`a2a:<messageId>`): the run scope of the turn's tools. */
function scopedKey(request: TurnRequest): string {
  return `${request.scope}:${request.key}`;
}

/** Hex SHA-256 of the operation and the canonical JSON of what the message asks. */
function fingerprintOf(request: TurnRequest): string {
  const asked = {
    prompt: request.prompt,
    conversationId: request.conversationId ?? null,
    asked: request.asked,
  };
  return sha256Hex(`${request.operation}\n${canonicalJson(asked)}`);
}
