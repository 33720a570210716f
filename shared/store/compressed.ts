import { gunzipSync, gzipSync } from "node:zlib";

/**
 * A text stored in a DynamoDB attribute: as it is (`encoding: "identity"`, a string) or gzip-compressed
 * (`encoding: "gzip"`, binary). The one encoding of large stored texts: Idempotency-Key responses
 * (shared/store/idempotency.ts) and run transcripts (shared/store/runs.ts) both use it.
 */
export type EncodedText = { encoding: "identity"; body: string } | { encoding: "gzip"; body: Uint8Array };

/**
 * Stored texts above this many UTF-8 bytes are gzip-compressed; smaller ones stay readable text. One
 * threshold for every stored text (Idempotency-Key responses, run transcripts).
 */
export const COMPRESS_ABOVE_BYTES = 8 * 1024;

/**
 * Encodes `text` for storage: unchanged up to `compressAboveBytes` UTF-8 bytes, gzip-compressed above.
 * @returns the encoded text, or undefined when it is still over `maxBytes` after compression (the
 *   caller decides what to do; DynamoDB items are limited to 400 KB)
 */
export function encodeText(
  text: string,
  limits: { compressAboveBytes: number; maxBytes: number },
): EncodedText | undefined {
  const bytes = Buffer.byteLength(text, "utf8");
  if (bytes <= limits.compressAboveBytes) {
    return bytes > limits.maxBytes ? undefined : { encoding: "identity", body: text };
  }
  const compressed = gzipSync(Buffer.from(text, "utf8"));
  if (compressed.byteLength > limits.maxBytes) return undefined;
  return { encoding: "gzip", body: new Uint8Array(compressed) };
}

/**
 * Decodes what {@link encodeText} stored (given the attribute holding `encoding` and `body`).
 * @returns the text, or undefined when `stored` is not an encoded text
 * @throws Error when a gzip body is corrupt
 */
export function decodeText(stored: unknown): string | undefined {
  if (!stored || typeof stored !== "object") return undefined;
  const { encoding, body } = stored as Record<string, unknown>;
  if (encoding === "gzip" && body instanceof Uint8Array) return gunzipSync(body).toString("utf8");
  return typeof body === "string" ? body : undefined;
}
