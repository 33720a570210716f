import { createHash } from "node:crypto";

/**
 * Hex SHA-256 (64 lower-case hex characters) of a UTF-8 string. The one hash of the service: stores
 * use it for key material (hashed Idempotency-Keys, invoice and quote ids), the agent for tool
 * idempotency keys, the HTTP layer for request fingerprints.
 */
export function sha256Hex(text: string): string {
  return createHash("sha256").update(text, "utf8").digest("hex");
}
