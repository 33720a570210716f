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
 * | TENANT#<tenantId> | APPROVAL#<runId>#<approvalId> | one approval of a run's tool call, with `ttl` and its list key (below) |
 * | TENANT#<tenantId> | EVENTS#<runId>#<first sequence, 8 digits> | one batch of a run's events, with the run's `ttl` |
 * | TENANT#<tenantId> | CONVERSATION#<sha256([userId, conversationId])> | the head of a conversation a protocol client names (A2A context, AG-UI thread), with `ttl` |
 * | TENANT#<tenantId> | POLICYSET | the tenant's policy set: its latest version and the enforced one (docs/policies.md) |
 * | TENANT#<tenantId> | POLICYSET#V#<version, 8 digits> | one version of the tenant's policy set, kept (who, when) |
 * | TENANT#<tenantId> | POLICYSHADOW#<decidedAt>#<runId>#<toolCallId> | a decision the shadow set would have made otherwise, with `ttl` |
 * | TENANT#<tenantId> | COUNTER#<name>#<window id> | running totals and in-flight reservations of one counter family in one UTC window (counters.ts), with `ttl` |
 * | TENANT#<tenantId> | LIMITS | the tenant's own quota limits, replacing the deploy's (quota-limits.ts) |
 * | TENANT#<tenantId> | QUOTAWAIT#<runId> | a durable run waiting for budget: the callback that wakes it (quota-waits.ts), with `ttl` |
 *
 * The listing index (`LIST_INDEX` in table.ts, a sparse global secondary index) holds only the items
 * with its two attributes, set by `listKey` in the same write as the state they list:
 *
 * | list partition | list sort key | item |
 * |---|---|---|
 * | TENANT#<tenantId>#APPROVALS#pending | <requestedAt>#<runId>#<approvalId> | a pending approval (listed oldest first) |
 * | TENANT#<tenantId>#APPROVALS#decided | <decidedAt>#<runId>#<approvalId> | an approval no longer pending: approved, rejected, expired or cancelled (listed newest first) |
 * | TENANT#<tenantId>#RUNS | <startedAt>#<runId> | a run record (listed newest first; filtered by user, status, id) |
 * | TENANT#<tenantId>#INVOICES | <createdAt>#<invoiceId> | an invoice (listed newest first) |
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
   * Partition of one of a tenant's lists in the listing index (`TENANT#<tenantId>#<list>`): it starts
   * with the tenant's partition key, so a list, like an item, is only ever its tenant's.
   */
  listPartition: (tenantId: string, list: string) => `TENANT#${tenantId}#${list}`,
  /** The list of a tenant's approvals in one state: `APPROVALS#pending` or `APPROVALS#decided`. */
  approvalList: (status: "pending" | "decided") => `APPROVALS#${status}`,
  /**
   * An approval's place in its list: when it entered it (`requestedAt` while pending, `decidedAt` once
   * not; ISO 8601 UTC with milliseconds, so keys sort in time order), then its run and approval id.
   */
  approvalListed: (at: string, runId: string, approvalId: string) => `${at}#${runId}#${approvalId}`,
  /** The list of a tenant's invoices, by when each was recorded. */
  invoiceList: "INVOICES",
  /** An invoice's place in the invoices list: when it was recorded (ISO 8601 UTC, ms), then its id. */
  invoiceListed: (createdAt: string, invoiceId: string) => `${createdAt}#${invoiceId}`,
  /** The list of a tenant's run records, by when each started. */
  runList: "RUNS",
  /**
   * A run's place in the runs list: when it started (ISO 8601 UTC with milliseconds, so keys sort in
   * time order), then its id.
   */
  runListed: (startedAt: string, runId: string) => `${startedAt}#${runId}`,
  /** Sort key of one audit step of a run; cycles are zero-padded so steps sort in cycle order. */
  runStep: (runId: string, cycle: number) => `RUN#${runId}#STEP#${String(cycle).padStart(4, "0")}`,
  /** Sort key of one batch of a run's events, by the sequence of its first event (zero-padded to sort). */
  runEvents: (runId: string, firstSeq: number) => `EVENTS#${runId}#${String(firstSeq).padStart(8, "0")}`,
  /** Sort-key prefix of a run's event batches. */
  runEventsPrefix: (runId: string) => `EVENTS#${runId}#`,
  /**
   * Sort key of the head of one caller's conversation named by a protocol client (an A2A context id, an
   * AG-UI thread id): the SHA-256 of `[userId, conversationId]`, so any printable id fits and two users'
   * equal ids never meet.
   */
  conversation: (userId: string, conversationId: string) =>
    `CONVERSATION#${sha256Hex(JSON.stringify([userId, conversationId]))}`,
  /** Sort key of a tenant's policy set head (its latest version and the one enforced). */
  policySet: "POLICYSET",
  /** Sort key of one kept version of a tenant's policy set; zero-padded so versions sort in order. */
  policySetVersion: (version: number) => `POLICYSET#V#${String(version).padStart(8, "0")}`,
  /** Sort-key prefix of a tenant's kept policy set versions. */
  policySetVersionPrefix: "POLICYSET#V#",
  /**
   * Sort key of a shadow decision that differed from the enforced one: when (ISO 8601 UTC, so keys sort
   * in time order), its run, and its tool call (hashed: a model's tool call id may hold any character).
   */
  policyShadow: (decidedAt: string, runId: string, toolCallId: string) =>
    `POLICYSHADOW#${decidedAt}#${runId}#${sha256Hex(toolCallId).slice(0, 16)}`,
  /** Sort-key prefix of a tenant's shadow decisions. */
  policyShadowPrefix: "POLICYSHADOW#",
  /**
   * Sort key of one counter item (shared/store/counters.ts): a counter family (`quota`, a tool's running
   * totals, …; no `#`) in one UTC window (`d20260102`, `h2026010213`, `m202601021305`).
   */
  counter: (name: string, windowId: string) => `COUNTER#${name}#${windowId}`,
  /** Sort key of a tenant's own quota limits (one item per tenant). */
  quotaLimits: "LIMITS",
  /** Sort key of a durable run's wait for budget (runIds contain no `#`). */
  quotaWait: (runId: string) => `QUOTAWAIT#${runId}`,
  /** Sort-key prefix of a tenant's runs waiting for budget. */
  quotaWaitPrefix: "QUOTAWAIT#",
} as const;
