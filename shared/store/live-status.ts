/**
 * Which run records are live, in one place for every reader that must tell a run that may still change
 * from one that has ended (the events feed, A2A, cancel, the store's conditional writes). No imports:
 * the lowest layers read it without loading the record's schemas.
 */

/**
 * The record statuses of a run that has not ended: it works (`running`) or a durable run waits, for a
 * person (`awaiting_approval`, docs/approvals.md) or for budget (`awaiting_quota`, docs/quotas.md). Every
 * other status is final: nothing more is written to the run or appended to its events.
 */
export const LIVE_RECORD_STATUSES = ["running", "awaiting_approval", "awaiting_quota"] as const;

/** Whether a run record's `status` is one of {@link LIVE_RECORD_STATUSES} (the run has not ended). */
export function isLiveRecordStatus(status: string): boolean {
  return (LIVE_RECORD_STATUSES as readonly string[]).includes(status);
}
