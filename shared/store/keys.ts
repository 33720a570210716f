/**
 * Every key format of the single table, in one place. Every partition key starts with the tenant
 * from the verified security context, so tenant isolation is structural, not a filter.
 *
 * | pk | sk | item |
 * |---|---|---|
 * | TENANT#<tenantId> | INVOICE#<invoiceId> | invoice |
 * | TENANT#<tenantId> | QUOTE#<quoteId> | tax quote, with `ttl` (epoch seconds) for DynamoDB TTL |
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
} as const;

/** Attribute names of the table's key schema and TTL (epoch seconds); infra/ uses the same names. */
export const TABLE_SCHEMA = { partitionKey: "pk", sortKey: "sk", ttlAttribute: "ttl" } as const;
