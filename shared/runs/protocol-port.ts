/**
 * The narrow face of the runs layer the protocol adapters (shared/a2a/, shared/agui/) use: start a
 * turn, find, list and cancel the caller's own runs, and follow a run's events. Every call goes through
 * the same services as the HTTP API (shared/runs/turns.ts over `prepareRun`, `cancelRun`, the run
 * store, `followRunEvents`), so every guard applies; an adapter never reads a store itself, and a move
 * of those services changes this file only.
 */
import type { ApiDeps } from "../deps.js";
import type { SecurityContext } from "../identity.js";
import type { RunRecord, RunStep } from "../store/runs.js";
import type { PendingApprovalView } from "./approvals.js";
import { type FeedItem, followRunEvents, LiveEvents } from "./event-feed.js";
import { FINAL_EVENT_TYPE, type RunEvent } from "./events.js";
import type { AgentRunShapes } from "./run-shapes.js";
import { prepareTurn, type TurnRequest, type TurnStart } from "./turns.js";

/** A run as an adapter sees it: its record, its audit steps and, while it waits, its pending approvals. */
export interface ProtocolRun {
  run: RunRecord<AgentRunShapes>;
  steps: RunStep<AgentRunShapes>[];
  pendingApprovals: PendingApprovalView[];
}

/**
 * A turn begun: the run id (the task, the AG-UI run), the conversation it belongs to (undefined for a
 * key that already had its run: read it from the run), `live` (this
 * process's events of the run, collected from before it started: follow it, then close it), and
 * `settled`, which resolves when this request's part is over (its run finished or was handed over; at
 * once for a key that already had its run). `settled` never rejects: a refusal before the run started
 * is its `error`.
 */
export interface BegunTurn {
  runId: string;
  conversationId: string | undefined;
  existing: boolean;
  live: LiveEvents | undefined;
  settled: Promise<{ start?: TurnStart; error?: unknown }>;
}

/**
 * Begins a turn: checks it and starts its run in the background (see {@link BegunTurn}); a repeat of
 * the key (the same message id) begins nothing and names the run the key has.
 * @throws the refusals of `prepareTurn` (unknown conversation, previous run in progress, the key reused)
 */
export async function beginTurn(deps: ApiDeps, request: TurnRequest): Promise<BegunTurn> {
  const prepared = await prepareTurn(deps, request);
  if (prepared.kind === "existing") {
    return {
      runId: prepared.runId,
      conversationId: undefined,
      existing: true,
      live: undefined,
      settled: Promise.resolve({}),
    };
  }
  const live = new LiveEvents(deps.runEvents.hub, prepared.runId);
  const settled = prepared.start().then(
    (start) => ({ start }),
    (error: unknown) => ({ error }),
  );
  void settled.then(() => live.finish());
  return { runId: prepared.runId, conversationId: prepared.conversationId, existing: false, live, settled };
}

/**
 * The caller's own run `runId` with its steps and pending approvals, or undefined: another user's or
 * another tenant's run is not found, as an unknown one (an agent protocol acts for its caller only).
 */
export async function findOwnRun(
  deps: ApiDeps,
  security: SecurityContext,
  runId: string,
): Promise<ProtocolRun | undefined> {
  const found = await deps.runs.get(security.tenantId, runId);
  if (!found || found.run.userId !== security.userId) return undefined;
  if (found.run.status !== "awaiting_approval") return { ...found, pendingApprovals: [] };
  const { pendingApprovalsOf } = await import("./approvals.js");
  return { ...found, pendingApprovals: await pendingApprovalsOf(deps.approvals, security.tenantId, runId) };
}

/** One page of the caller's own runs, newest first (GET /v1/runs's listing). */
export function listOwnRuns(
  deps: ApiDeps,
  security: SecurityContext,
  page: { limit: number; cursor?: string | undefined },
): Promise<{ runs: RunRecord<AgentRunShapes>[]; nextCursor: string | undefined }> {
  const options = page.cursor ? { limit: page.limit, cursor: page.cursor } : { limit: page.limit };
  return deps.runs.listPage(security.tenantId, security.userId, options);
}

/**
 * Cancels the caller's own run (`cancelRun`, the rule of POST /v1/runs/{runId}/cancel), or undefined
 * when the caller has no such run.
 * @throws ProblemError RUN_NOT_RUNNING when it already ended or cannot be stopped (a synchronous run)
 */
export async function cancelOwnRun(
  deps: ApiDeps,
  security: SecurityContext,
  runId: string,
): Promise<ProtocolRun | undefined> {
  const found = await deps.runs.get(security.tenantId, runId);
  if (!found || found.run.userId !== security.userId) return undefined;
  const { cancelRun } = await import("./cancel.js");
  const after = await cancelRun(deps, security, found);
  return { ...after, pendingApprovals: [] };
}

/**
 * The events of the caller's run after sequence `after`, each once and in order, ending after
 * `run.finished`, when `signal` aborts, or after `live.finish()` (see `followRunEvents`). The caller
 * has already found the run its own.
 */
export function followEvents(
  deps: ApiDeps,
  target: {
    tenantId: string;
    runId: string;
    after: number;
    signal: AbortSignal;
    live?: LiveEvents | undefined;
  },
): AsyncGenerator<FeedItem> {
  return followRunEvents({
    deps,
    tenantId: target.tenantId,
    runId: target.runId,
    after: target.after,
    pollMs: Math.min(deps.config.stream.pollMs, deps.config.stream.heartbeatMs),
    clock: deps.clock,
    signal: target.signal,
    ...(target.live ? { live: target.live } : {}),
  });
}

/** The run a protocol stream follows: from after `after`; `live` and `settled` when this request began it. */
export interface FollowTarget {
  runId: string;
  after: number;
  live: LiveEvents | undefined;
  settled: Promise<{ start?: TurnStart; error?: unknown }> | undefined;
  /** When the stream must end (epoch ms of the API's clock): STREAM_MAX_SECONDS, the Lambda's time. */
  endsAt: number;
}

/**
 * The events of the caller's run a protocol streams: this process's live events of a turn it began,
 * then, when the run went on elsewhere (handed over to a durable run at an approval), the stored ones,
 * to `run.finished` or `endsAt`. A turn refused before its run started throws its refusal before
 * anything is yielded. The turn's run is waited for before the generator ends (on Lambda nothing runs
 * after the response).
 */
export async function* followTurn(
  deps: ApiDeps,
  security: SecurityContext,
  target: FollowTarget,
): AsyncGenerator<RunEvent> {
  const left = new AbortController();
  let after = target.after;
  let seen = false;
  try {
    for (const live of target.live ? [target.live, undefined] : [undefined]) {
      const feed = followEvents(deps, {
        tenantId: security.tenantId,
        runId: target.runId,
        after,
        signal: left.signal,
        live,
      });
      for await (const item of feed) {
        if (deps.clock.now() >= target.endsAt) return;
        if (item.kind !== "event") continue;
        after = item.event.seq;
        seen = true;
        yield item.event;
        if (item.event.type === FINAL_EVENT_TYPE) return;
      }
      live?.close();
      if (!seen && target.settled) {
        const outcome = await target.settled;
        if (outcome.error) throw outcome.error;
      }
    }
  } finally {
    left.abort();
    target.live?.close();
    if (target.settled) await target.settled;
  }
}
