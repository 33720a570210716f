import canonicalize from "canonicalize";
import { sha256Hex } from "../hash.js";

/**
 * RFC 8785 (JCS) canonical JSON of a value (the `canonicalize` package): key order and number
 * spelling do not change the result. Values JSON cannot hold (undefined, functions) become "null".
 */
export function canonicalJson(value: unknown): string {
  return canonicalize(value) ?? "null";
}

/**
 * The idempotency key of one mutating tool call. It is the same whenever the same operation is asked
 * for again, and different for different operations:
 * - `tenantId`, `userId`: the caller, from the verified security context (a client's Idempotency-Key,
 *   the usual run scope, belongs to one caller: another user's equal key is another operation)
 * - `runScope`: the client's Idempotency-Key when one was sent, else the run id
 * - `toolName`, and the SHA-256 of the canonical arguments (so a re-issue in a later cycle dedupes)
 * - `occurrence`: 0-based index among identical calls in one assistant turn (so two identical calls
 *   in one turn are two operations)
 * @returns `tk_` followed by 64 hex characters
 */
export function toolIdempotencyKey(parts: {
  tenantId: string;
  userId: string;
  runScope: string;
  toolName: string;
  args: unknown;
  occurrence: number;
}): string {
  const argsHash = sha256Hex(canonicalJson(parts.args));
  return `tk_${sha256Hex(canonicalJson([parts.tenantId, parts.userId, parts.runScope, parts.toolName, argsHash, parts.occurrence]))}`;
}

/**
 * The identity of an operation within one assistant turn: the tool name and the canonical (JCS) form of
 * its validated arguments, the same two parts {@link toolIdempotencyKey} hashes. Two calls with the same
 * identity in one turn are counted as occurrences 0, 1, … of it (so they are two operations); raw
 * argument text that zod normalizes to the same value (key order, whitespace, trimmed strings, nulls of
 * optional fields) has one identity.
 * @param args the tool's parsed arguments (zod's output), never the raw JSON text
 */
export function operationIdentity(toolName: string, args: unknown): string {
  return `${toolName}\u0000${canonicalJson(args)}`;
}
