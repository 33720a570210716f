import type { z } from "zod";
import type {
  ApprovalAuditSchema,
  PolicyAuditSchema,
  RunningTotalSchema,
  ToolErrorSchema,
  ToolResultSchema,
  ToolStatusSchema,
} from "./result-schema.js";

/** The fixed categories a tool call can end in (shared/agent/result-schema.ts `ToolStatusSchema`). */
export type ToolStatus = z.infer<typeof ToolStatusSchema>;
/** A failed tool call, phrased so the model can act on it ({@link ToolErrorSchema}). */
export type ToolError = z.infer<typeof ToolErrorSchema>;
/** The envelope every tool call produces, success or not ({@link ToolResultSchema}). */
export type ToolResult = z.infer<typeof ToolResultSchema>;
/** Who decided on a call that needed approval, when and why ({@link ApprovalAuditSchema}). */
export type ApprovalAudit = z.infer<typeof ApprovalAuditSchema>;
/**
 * Keeps a tool result's JSON within `maxBytes` UTF-8 bytes (the row the API returns, hence the tool
 * message the model reads, {@link toolMessage}). Over the cap, `data` becomes a string: the start of
 * its JSON followed by a marker saying it was truncated and how big it was; if the error part alone is
 * still too big, its message is cut the same way and its details dropped. `metadata.truncated` records
 * the original size.
 * @param maxBytes config MAX_TOOL_RESULT_BYTES (default 16384)
 * @returns the (possibly new) result and its JSON, which is at most `maxBytes` bytes when `maxBytes`
 *   leaves room for the envelope (a few hundred bytes)
 */
export function capToolResult(result: ToolResult, maxBytes: number): { result: ToolResult; json: string } {
  const json = JSON.stringify(result);
  // A UTF-16 code unit is at most 3 UTF-8 bytes: short JSON fits without counting its bytes.
  if (json.length * 3 <= maxBytes) return { result, json };
  const originalBytes = Buffer.byteLength(json, "utf8");
  if (originalBytes <= maxBytes) return { result, json };
  const marker = `[truncated by boundloop: this tool result was ${originalBytes} bytes, over the ${maxBytes}-byte cap]`;
  const cut = (text: string, bytes: number) => `${utf8Prefix(text, Math.max(0, bytes))}… ${marker}`;
  const metadata = { ...result.metadata, truncated: { originalBytes, maxBytes } };
  const build = (budget: number): ToolResult => {
    const data =
      result.data === null || result.data === undefined
        ? result.data
        : cut(JSON.stringify(result.data), budget);
    const errorBytes = result.error ? Buffer.byteLength(JSON.stringify(result.error), "utf8") : 0;
    const error =
      result.error && errorBytes > maxBytes / 2
        ? { ...result.error, message: cut(result.error.message, budget), details: { truncated: true } }
        : result.error;
    return { ...result, data, error, metadata };
  };
  let budget = maxBytes;
  let capped = build(budget);
  let cappedJson = JSON.stringify(capped);
  for (
    let attempt = 0;
    attempt < 20 && Buffer.byteLength(cappedJson, "utf8") > maxBytes && budget > 0;
    attempt++
  ) {
    budget = Math.floor(budget - (Buffer.byteLength(cappedJson, "utf8") - maxBytes) - 16);
    capped = build(budget);
    cappedJson = JSON.stringify(capped);
  }
  return { result: capped, json: cappedJson };
}

/**
 * The tool message the model reads for `result` (and the run's transcript keeps): the JSON of
 * `{ status, data, error }`. `metadata` is the backend's audit (latency, keys, approvers, and policy
 * totals that count other users' calls): it stays in the stored result and never reaches the model.
 * Given `capToolResult`'s result, the marker is in its data or error and the view, a part of the capped
 * envelope, is within the cap.
 */
export const toolMessage = ({ status, data, error }: ToolResult): string =>
  JSON.stringify({ status, data, error });

/** The longest prefix of `text` that fits in `bytes` UTF-8 bytes, never splitting a character. */
function utf8Prefix(text: string, bytes: number): string {
  const buffer = Buffer.from(text, "utf8");
  if (buffer.length <= bytes) return text;
  return new TextDecoder("utf-8", { fatal: false }).decode(buffer.subarray(0, bytes)).replace(/\uFFFD+$/, "");
}

/** One running total: calls counted and their gross in minor units ({@link RunningTotalSchema}). */
export type RunningTotal = z.infer<typeof RunningTotalSchema>;
/** The explanation of a policy decision ({@link PolicyAuditSchema}). */
export type PolicyAudit = z.infer<typeof PolicyAuditSchema>;
