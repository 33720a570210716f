import crypto from "node:crypto";

/**
 * Node's one-shot digest (Node 20.12+; `engines` allows any Node 20): about twice as fast as a Hash
 * object for the short strings hashed here, and the same digest.
 */
const oneShot = (crypto as { hash?: (algorithm: string, data: string, encoding: "hex") => string }).hash;

/**
 * Hex SHA-256 (64 lower-case hex characters) of a UTF-8 string. The one hash of the service: stores
 * use it for key material (hashed Idempotency-Keys, invoice and quote ids), the agent for tool
 * idempotency keys, the HTTP layer for request fingerprints, the run tracer for a run's span ids.
 */
export function sha256Hex(text: string): string {
  if (oneShot) return oneShot("sha256", text, "hex");
  return crypto.createHash("sha256").update(text, "utf8").digest("hex");
}
