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
 * - `tenantId`: from the verified security context
 * - `runScope`: the client's Idempotency-Key when one was sent, else the run id
 * - `toolName`, and the SHA-256 of the canonical arguments (so a re-issue in a later cycle dedupes)
 * - `occurrence`: 0-based index among identical calls in one assistant turn (so two identical calls
 *   in one turn are two operations)
 * @returns `tk_` followed by 64 hex characters
 */
export function toolIdempotencyKey(parts: {
  tenantId: string;
  runScope: string;
  toolName: string;
  args: unknown;
  occurrence: number;
}): string {
  const argsHash = sha256Hex(canonicalJson(parts.args));
  return `tk_${sha256Hex(canonicalJson([parts.tenantId, parts.runScope, parts.toolName, argsHash, parts.occurrence]))}`;
}
