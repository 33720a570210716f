import * as z from "zod";
import { ProblemError } from "../../shared/errors.js";
import { keys } from "../../shared/store/keys.js";

/**
 * Encodes a DynamoDB LastEvaluatedKey (`{pk, sk}` strings) as an opaque cursor: base64url of its JSON.
 * The cursor is opaque to clients, not secret: it only names a position in the caller's own partition,
 * and {@link decodeInvoiceCursor} refuses any other partition.
 */
export function encodeCursor(key: Record<string, string>): string {
  return Buffer.from(JSON.stringify(key), "utf8").toString("base64url");
}

const InvoiceKey = z.object({ pk: z.string(), sk: z.string().startsWith(keys.invoicePrefix) }).strict();

/**
 * Decodes a cursor from `GET /v1/invoices` back to the ExclusiveStartKey of the caller's next page.
 * @throws ProblemError INVALID_REQUEST when the cursor is not one this API issued for this tenant
 *   (bad base64url, bad JSON, another shape, or another tenant's partition)
 */
export function decodeInvoiceCursor(cursor: string, tenantId: string): Record<string, string> {
  const invalid = () =>
    new ProblemError("INVALID_REQUEST", "The cursor is not valid for this listing.", {
      extensions: { errors: [{ in: "query", path: "cursor", message: "unknown or malformed cursor" }] },
    });
  if (!/^[A-Za-z0-9_-]+$/.test(cursor)) throw invalid();
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(cursor, "base64url").toString("utf8"));
  } catch {
    throw invalid();
  }
  const key = InvoiceKey.safeParse(parsed);
  if (!key.success || key.data.pk !== keys.tenant(tenantId)) throw invalid();
  return key.data;
}
