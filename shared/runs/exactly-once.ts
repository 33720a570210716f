/**
 * The idempotency engine: one protocol for a caller's key, whatever the surface (the Powertools
 * idempotency shape: one persistence protocol, thin adapters that map their wire format). The HTTP
 * Idempotency-Key of `POST /v1/runs` (functions/api/run-idempotency.ts) and the key of an MCP tool call
 * (shared/runs/tool-call-run.ts, behind shared/mcp/) and the message id of an A2A SendMessage or the run
 * id of an AG-UI run (shared/runs/turns.ts) all go through {@link runOnce}:
 * 1. one conditional put claims (tenant, user, operation, key) with the request's fingerprint and a lease;
 * 2. the same fingerprint completed → `replayed` with what was stored; still running under a live lease
 *    → `in_progress` (retry after `retryAfterSeconds`); another fingerprint → `reused`; a holder whose
 *    lease passed (a crash) is taken over;
 * 3. otherwise `execute` runs once, and the adapter's {@link KeepPolicy} says what a repeat gets: the
 *    stored outcome is completed on the record (owner-fenced), or nothing is, and the key is released so
 *    a retry runs again (a failure worth retrying; the effects that committed are protected by the tools'
 *    own keys).
 * An outcome that cannot be stored (store error, too large, the fence lost) is still returned; the
 * failure is logged and the record released or left to its lease.
 */
import type { Logger } from "@aws-lambda-powertools/logger";
import type { IdempotencyClaim, IdempotencyStore, StoredOutcome } from "../store/idempotency.js";

/** Longest idempotency key accepted, on every surface (the HTTP Idempotency-Key's bound too). */
export const MAX_KEY_LENGTH = 255;

/** True for a usable key: a string of 1 to {@link MAX_KEY_LENGTH} printable ASCII characters (%x20-7E). */
export function isUsableKey(key: unknown): key is string {
  return typeof key === "string" && key.length <= MAX_KEY_LENGTH && /^[\x20-\x7e]+$/.test(key);
}

/**
 * The key scopes of the protocol surfaces. A turn's run scope is `<scope>:<key>` (A2A's message id,
 * AG-UI's run id: shared/runs/turns.ts), an MCP call's `mcp:<user>:<key>` (shared/runs/tool-call-once.ts);
 * a tool's idempotency key derives from its run scope (shared/agent/idempotency-key.ts). `POST /v1/runs`'
 * run scope is its Idempotency-Key as sent, so a key in one of these scopes is refused there
 * ({@link protocolScopeOf}): it would meet that protocol's run scope and replay its tools' effects (an
 * invoice "already recorded") instead of running its own.
 */
export const PROTOCOL_KEY_SCOPES = { a2a: "a2a", agui: "agui", mcp: "mcp" } as const;

/** The protocol scope (`a2a`, `agui`, `mcp`) `key` is in (it starts with `<scope>:`), else undefined. */
export function protocolScopeOf(key: string): string | undefined {
  return Object.values(PROTOCOL_KEY_SCOPES).find((scope) => key.startsWith(`${scope}:`));
}

/**
 * One operation under a caller's key: the caller (`tenantId`, `userId`, from the verified security
 * context: a key belongs to one caller), the operation's name (`route`: "POST /v1/runs", "MCP
 * tools/call"; a namespace of keys), the key, the request's `fingerprint` (a hash of what it asks; see the
 * adapters) and `leaseExpiresAt` (epoch ms: how long this request may hold the key, its deadline).
 */
export interface KeyedOperation {
  tenantId: string;
  userId: string;
  route: string;
  key: string;
  fingerprint: string;
  leaseExpiresAt: number;
}

/**
 * What an adapter keeps for a repeat: `keep(result)` the stored form of a result, or undefined to
 * release the key instead; `keepThrown(error)` the same for a throw (absent: release), after which the
 * throw goes on to the caller.
 */
export interface KeepPolicy<R> {
  keep(result: R): StoredOutcome | undefined | Promise<StoredOutcome | undefined>;
  keepThrown?(error: unknown): StoredOutcome | undefined;
}

/**
 * What {@link runOnce} did: `executed` (this request ran it; `result`), `replayed` (an earlier request with
 * the same fingerprint completed it; `stored`), `in_progress` (one is running; retry after
 * `retryAfterSeconds`), `reused` (the key was used for another request; nothing ran).
 */
export type OnceOutcome<R> =
  | { kind: "executed"; result: R }
  | { kind: "replayed"; stored: StoredOutcome }
  | { kind: "in_progress"; retryAfterSeconds: number }
  | { kind: "reused" };

/** What the engine uses: the one idempotency store (built in shared/deps.ts) and the logger. */
export interface ExactlyOnceDeps {
  idempotency: IdempotencyStore;
  logger: Logger;
}

/**
 * Runs `execute` at most once per (tenant, user, operation, key) within the store's retention; see the
 * module comment for the protocol.
 * @throws the store's error when the record cannot be read or written (before `execute`: nothing ran);
 *   whatever `execute` throws (after {@link KeepPolicy.keepThrown})
 */
export async function runOnce<R>(
  deps: ExactlyOnceDeps,
  operation: KeyedOperation,
  policy: KeepPolicy<R>,
  execute: () => Promise<R>,
): Promise<OnceOutcome<R>> {
  const acquired = await deps.idempotency.acquire({
    tenantId: operation.tenantId,
    userId: operation.userId,
    route: operation.route,
    idempotencyKey: operation.key,
    fingerprint: operation.fingerprint,
    leaseExpiresAt: operation.leaseExpiresAt,
  });
  switch (acquired.kind) {
    case "mismatch":
      return { kind: "reused" };
    case "in_progress":
      return { kind: "in_progress", retryAfterSeconds: acquired.retryAfterSeconds };
    case "completed":
      return { kind: "replayed", stored: acquired.response };
    case "acquired":
      return { kind: "executed", result: await holding(deps, acquired.claim, policy, execute) };
  }
}

/** Runs `execute` holding `claim`, then keeps its outcome or releases the key, as `policy` says. */
async function holding<R>(
  deps: ExactlyOnceDeps,
  claim: IdempotencyClaim,
  policy: KeepPolicy<R>,
  execute: () => Promise<R>,
): Promise<R> {
  let result: R;
  try {
    result = await execute();
  } catch (error) {
    await settle(deps, claim, policy.keepThrown?.(error), "execution threw");
    throw error;
  }
  await settle(deps, claim, await policy.keep(result), "outcome not kept");
  return result;
}

/**
 * Completes the record with `stored` (owner-fenced), or releases it when there is nothing to keep; a
 * stored outcome over the store's size cap releases too. Failures are logged, never thrown: the outcome
 * is the caller's either way.
 */
async function settle(
  deps: ExactlyOnceDeps,
  claim: IdempotencyClaim,
  stored: StoredOutcome | undefined,
  why: string,
): Promise<void> {
  if (!stored) return release(deps, claim, why);
  try {
    const completed = await deps.idempotency.complete(claim, stored);
    if (completed === "too_large") await release(deps, claim, "outcome over MAX_STORED_RESPONSE_BYTES");
    else if (completed === "not_owner") {
      deps.logger.warn("idempotency record taken over before completion", fields(claim));
    }
  } catch (error) {
    deps.logger.error("idempotency record not completed", { ...fields(claim), error: error as Error });
  }
}

/** Releases the record (owner-fenced); a failure is logged, and the lease then ends the claim. */
async function release(deps: ExactlyOnceDeps, claim: IdempotencyClaim, why: string): Promise<void> {
  try {
    await deps.idempotency.release(claim);
  } catch (error) {
    deps.logger.error("idempotency record not released", { ...fields(claim), why, error: error as Error });
  }
}

/** The log attributes of a claim: tenant, operation and the claim's owner token. */
function fields(claim: IdempotencyClaim): Record<string, string> {
  return { tenantId: claim.tenantId, route: claim.route, owner: claim.owner };
}
