import { sha256Hex } from "../hash.js";

/**
 * Every key format of the single table, in one place (the attribute names are `TABLE_SCHEMA` in
 * table.ts). Every partition key starts with the tenant from the verified security context, so tenant
 * isolation is structural, not a filter.
 *
 * | pk | sk | item |
 * |---|---|---|
 * | TENANT#<tenantId> | INVOICE#<invoiceId> | invoice |
 * | TENANT#<tenantId> | RUN#<runId> | run record (status, limits, outcome), with `ttl` |
 * | TENANT#<tenantId> | RUN#<runId>#STEP#<cycle, 4 digits> | one audit step (cycle) of a run, with `ttl` |
 * | TENANT#<tenantId> | QUOTE#<quoteId> | tax quote, with `ttl` (epoch seconds) for DynamoDB TTL |
 * | TENANT#<tenantId> | IDEM#<route>#<sha256([userId, Idempotency-Key])> | HTTP Idempotency-Key record of one caller and route |
 * | TENANT#<tenantId> | APPROVAL#<runId>#<approvalId> | one approval of a run's tool call, with `ttl` |
 * | TENANT#<tenantId> | DECIDED#<decidedAt>#<runId>#<approvalId> | a decided (or expired, cancelled) approval's copy, newest last, with the approval's `ttl` |
 * | TENANT#<tenantId> | EVENTS#<runId>#<first sequence, 8 digits> | one batch of a run's events, with the run's `ttl` |
 *
 * Client-supplied keys are hashed (hex SHA-256) so any printable value fits the sort key and cannot
 * collide with the `#` separators.
 */
export const keys = {
  /** Partition key of everything a tenant owns. */
  tenant: (tenantId: string) => `TENANT#${tenantId}`,
  /** Sort key of an invoice. */
  invoice: (invoiceId: string) => `INVOICE#${invoiceId}`,
  /** Sort-key prefix of all invoices (for begins_with queries). */
  invoicePrefix: "INVOICE#",
  /** Sort key of a tax quote (calculateTax's quoteId). */
  quote: (quoteId: string) => `QUOTE#${quoteId}`,
  /**
   * Sort key of an HTTP Idempotency-Key record: the route (e.g. `POST /v1/runs`) and the SHA-256 of the
   * caller's user id and the client's key (as the JSON array `[userId, key]`, so no two pairs meet). A
   * key belongs to one caller: the tenant is in the partition key, the user in the hash, so two tenants'
   * or two users' equal keys never meet.
   */
  idempotency: (route: string, userId: string, idempotencyKey: string) =>
    `IDEM#${route}#${sha256Hex(JSON.stringify([userId, idempotencyKey]))}`,
  /** Sort-key prefix of all Idempotency-Key records (for begins_with queries). */
  idempotencyPrefix: "IDEM#",
  /** Sort key of a run record; also the prefix of its steps (runIds contain no `#`). */
  run: (runId: string) => `RUN#${runId}`,
  /** Sort key of one approval of a run (runIds and approvalIds contain no `#`). */
  approval: (runId: string, approvalId: string) => `APPROVAL#${runId}#${approvalId}`,
  /** Sort-key prefix of a run's approvals (`APPROVAL#<runId>#`), or of all the tenant's (`APPROVAL#`). */
  approvalPrefix: (runId?: string) => (runId === undefined ? "APPROVAL#" : `APPROVAL#${runId}#`),
  /**
   * Sort key of the copy of an approval that is no longer pending, by when it was decided (`decidedAt`,
   * ISO 8601 UTC with milliseconds, so keys sort in time order), for the newest-first listing of
   * decisions (`GET /v1/approvals?status=decided`).
   */
  decidedApproval: (decidedAt: string, runId: string, approvalId: string) =>
    `DECIDED#${decidedAt}#${runId}#${approvalId}`,
  /** Sort-key prefix of all decided approvals' copies. */
  decidedApprovalPrefix: "DECIDED#",
  /** Sort key of one audit step of a run; cycles are zero-padded so steps sort in cycle order. */
  runStep: (runId: string, cycle: number) => `RUN#${runId}#STEP#${String(cycle).padStart(4, "0")}`,
  /** Sort key of one batch of a run's events, by the sequence of its first event (zero-padded to sort). */
  runEvents: (runId: string, firstSeq: number) => `EVENTS#${runId}#${String(firstSeq).padStart(8, "0")}`,
  /** Sort-key prefix of a run's event batches. */
  runEventsPrefix: (runId: string) => `EVENTS#${runId}#`,
} as const;
