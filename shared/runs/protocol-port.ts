/**
 * What the protocol adapters (shared/a2a/, shared/agui/) use of the runs layer beyond the services every
 * surface calls (`readRun`, `listRuns` in queries.ts, `cancelRun` in cancel.ts, the access rules of
 * access.ts): beginning a turn (shared/runs/turns.ts over `prepareRun` and the one idempotency engine)
 * in the background, and following its events (`followRunEvents`) as one stream. An adapter never reads
 * a store itself.
 */

import type { ApiDeps } from "../deps.js";
import { DomainError } from "../domain-errors.js";
import type { SecurityContext } from "../identity.js";
import { type FeedItem, followRunEvents, LiveEvents } from "./event-feed.js";
import { FINAL_EVENT_TYPE, type RunEvent } from "./events.js";
import { prepareTurn, type TurnRequest, type TurnStart } from "./turns.js";

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
 * @throws DomainError: the refusals of `prepareTurn` (an unknown conversation, a previous run still in
 *   progress or not continuable); the store's errors. The key reused for another message is the
 *   `settled` outcome's error (IDEMPOTENCY_KEY_REUSED), as every refusal met while starting.
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
 * The events of a run after sequence `after`, each once and in order, ending after `run.finished`, when
 * `signal` aborts, or after `live.finish()` (see `followRunEvents`). The caller has already checked that
 * it may see the run (`readRun`).
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
    if (!seen && target.settled) stillStarting((await target.settled).start);
  } finally {
    left.abort();
    target.live?.close();
    if (target.settled) await target.settled;
  }
}

/**
 * Throws when a turn found its key held by a request still starting that run (`retryAfterSeconds`) and
 * the stream saw none of it: an empty stream would tell the client nothing, so it is told to send again.
 * @throws DomainError IDEMPOTENCY_KEY_IN_USE with the key holder's `retryAfterSeconds`
 */
function stillStarting(start: TurnStart | undefined): void {
  if (start?.kind !== "existing" || start.retryAfterSeconds === undefined) return;
  throw new DomainError(
    "IDEMPOTENCY_KEY_IN_USE",
    "A request with this key is still starting its run; send the same input again shortly.",
    { retryAfterSeconds: start.retryAfterSeconds },
  );
}
