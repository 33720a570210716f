/**
 * The values a run's start takes and gives, for every surface that starts runs (REST, the streaming
 * entry, MCP's one-cycle runs, later A2A and AG-UI): the request, the run checked and ready to start, and
 * how it started. shared/runs/start.ts starts runs with them.
 */
import type { RunOutcome } from "../agent/types.js";
import type { SecurityContext } from "../identity.js";
import type { PendingApprovalView } from "./approval-service.js";
import type { ConversationHistory } from "./conversation.js";
import type { AgentRunRecord, AgentRunStep } from "./run-shapes.js";

/**
 * The most characters a run's prompt may have (after trimming), whichever surface asks: `POST /v1/runs`'
 * schema, an A2A message's text, an AG-UI input's user text. Defined here, below the surfaces, so a
 * protocol adapter cannot take a longer prompt than the REST route does.
 */
export const PROMPT_MAX_CHARS = 8_000;

/**
 * What a run id can be: 1 to 128 of `A-Z a-z 0-9 _ -` (the server makes `run_` + 32 hex). Every surface
 * that takes a run id from a client checks it against this before the store sees it (HTTP's path
 * parameter, A2A's task ids): a longer one is past DynamoDB's key size, so it is bad input, not a lookup.
 */
export const RUN_ID_PATTERN = /^[A-Za-z0-9_-]{1,128}$/;

/** The validated body of `POST /v1/runs`. */
export interface RunBody {
  prompt: string;
  maxCycles?: number | undefined;
  timeoutMs?: number | undefined;
  previousRunId?: string | undefined;
}

/**
 * How a run started, as a value:
 * - `completed`: a synchronous run ended (any of the loop's statuses) with its outcome and the
 *   conversation it continued
 * - `accepted`: a durable run was started (`Prefer: respond-async`); `run` is its record
 * - `handed_over`: a synchronous run paused for approval and continues as a durable run; `run` and
 *   `steps` as stored, with the pending approvals once the runner reached them
 */
export type RunStart =
  | { kind: "completed"; outcome: RunOutcome; conversation: ConversationHistory | undefined }
  | { kind: "accepted"; run: AgentRunRecord }
  | {
      kind: "handed_over";
      run: AgentRunRecord;
      steps: AgentRunStep[];
      pendingApprovals: PendingApprovalView[];
    };

/** The client's Idempotency-Key and the request's fingerprint, when the request carried a key. */
export interface RunIdempotency {
  key: string;
  fingerprint: string;
}

/**
 * A run checked and ready to start: `leaseExpiresAt` (epoch ms, wall clock) is how long the
 * Idempotency-Key is held for it, `start` runs it (once), `dispose` frees its deadline timer.
 */
export interface PreparedRun {
  leaseExpiresAt: number;
  start(idempotency: RunIdempotency | undefined): Promise<RunStart>;
  dispose(): void;
}

/** A request to start a run: the verified caller, the body, and what the HTTP layer read. */
export interface RunRequest {
  security: SecurityContext;
  body: RunBody;
  prefersAsync: boolean;
  lambdaRemainingMs?: number | undefined;
  /** The id a synchronous run gets (a streamed request follows it from the start); default a new one. */
  runId?: string | undefined;
  /**
   * The id of the conversation a run that continues none starts: an A2A context's or an AG-UI thread's
   * (shared/runs/turns.ts); default the run's own id. A continuation keeps its previous run's.
   */
  conversationId?: string | undefined;
}
