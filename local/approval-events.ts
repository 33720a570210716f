import {
  APPROVAL_REQUESTED,
  type ApprovalEvents,
  type ApprovalRequestedEvent,
} from "../shared/approval-events.js";

/**
 * {@link ApprovalEvents} for local runs: prints one line per event (`print`, default console.log) with
 * its detail type and detail, and keeps every event in `sent` (for tests and scripts).
 */
export function printedApprovalEvents(
  print: (line: string) => void = console.log,
): ApprovalEvents & { sent: ApprovalRequestedEvent[] } {
  const sent: ApprovalRequestedEvent[] = [];
  return {
    sent,
    requested: async (event) => {
      sent.push(event);
      print(`event ${APPROVAL_REQUESTED} ${JSON.stringify(event)}`);
    },
  };
}
