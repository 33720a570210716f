/**
 * Every key format of the single table, in one place. Every partition key starts with the tenant
 * from the verified security context, so tenant isolation is structural, not a filter.
 *
 * | pk | sk | item |
 * |---|---|---|
 * | TENANT#<tenantId> | INVOICE#<invoiceId> | invoice |
 * | TENANT#<tenantId> | RUN#<runId> | run record (status, limits, outcome), with `ttl` |
 * | TENANT#<tenantId> | RUN#<runId>#STEP#<cycle, 4 digits> | one audit step (cycle) of a run, with `ttl` |
 */
export const keys = {
  /** Partition key of everything a tenant owns. */
  tenant: (tenantId: string) => `TENANT#${tenantId}`,
  /** Sort key of an invoice. */
  invoice: (invoiceId: string) => `INVOICE#${invoiceId}`,
  /** Sort-key prefix of all invoices (for begins_with queries). */
  invoicePrefix: "INVOICE#",
  /** Sort key of a run record; also the prefix of its steps (runIds contain no `#`). */
  run: (runId: string) => `RUN#${runId}`,
  /** Sort key of one audit step of a run; cycles are zero-padded so steps sort in cycle order. */
  runStep: (runId: string, cycle: number) => `RUN#${runId}#STEP#${String(cycle).padStart(4, "0")}`,
} as const;

/** Attribute names of the table's key schema and TTL (epoch seconds); infra/ uses the same names. */
export const TABLE_SCHEMA = { partitionKey: "pk", sortKey: "sk", ttlAttribute: "ttl" } as const;
