import { onceUntilFailed } from "./lazy.js";

/**
 * The event announcing that a call waits for a person's approval (docs/approvals.md), so an account can
 * route it (EventBridge rule → e-mail, chat). It holds ids and the backend's numbers only: no prompt
 * text, no tool arguments the model wrote, no callback id, no secret.
 * - `preview`: the backend's numbers (recordInvoice: quoteId, subtotal, taxAmount, grossTotal, currency,
 *   threshold; decimal strings)
 * - `requestedAt`, `expiresAt`: ISO 8601
 */
export interface ApprovalRequestedEvent {
  tenantId: string;
  runId: string;
  approvalId: string;
  toolName: string;
  preview: Record<string, unknown>;
  requestedBy: string;
  requestedAt: string;
  expiresAt: string;
}

/** EventBridge `Source` of boundloop's events. */
export const EVENT_SOURCE = "boundloop";
/** EventBridge `DetailType` of {@link ApprovalRequestedEvent}. */
export const APPROVAL_REQUESTED = "boundloop.approval.requested";

/**
 * The port approvals are announced through: EventBridge's default bus on AWS
 * ({@link eventBridgeApprovalEvents}), printed locally (local/approval-events.ts).
 * @throws from `requested` when the event could not be put (the runner logs it and goes on: the
 *   approval is stored and listed by `GET /v1/approvals` either way)
 */
export interface ApprovalEvents {
  requested(event: ApprovalRequestedEvent): Promise<void>;
}

/**
 * Options of {@link eventBridgeApprovalEvents}: `clientConfig` is merged into the EventBridge client's
 * configuration (an endpoint, credentials); `importClient` loads the client module (tests inject a
 * failing one).
 */
export interface EventBridgeOptions {
  clientConfig?: Omit<import("./eventbridge-client.js").EventBridgeClientConfig, "region">;
  importClient?: () => Promise<typeof import("./eventbridge-client.js")>;
}

/**
 * {@link ApprovalEvents} on EventBridge: one `PutEvents` entry on the account's **default** bus (no
 * `EventBusName`), Source {@link EVENT_SOURCE}, DetailType {@link APPROVAL_REQUESTED}. The client is
 * loaded on the first event, not at cold start (bundle budget, test/support/bundle-contents.ts); a failed
 * load is retried by the next event. IAM (infra/durable-runner.ts): events:PutEvents on
 * `event-bus/default` only.
 * @param region the bus's region (config AWS_REGION)
 * @throws from `requested`: the SDK's error, or Error when EventBridge reports the entry failed
 */
export function eventBridgeApprovalEvents(region: string, options: EventBridgeOptions = {}): ApprovalEvents {
  const importClient = options.importClient ?? (() => import("./eventbridge-client.js"));
  const load = onceUntilFailed(async () => {
    const { EventBridgeClient, PutEventsCommand } = await importClient();
    const eventBridge = new EventBridgeClient({ ...options.clientConfig, region });
    return {
      send: async (event: ApprovalRequestedEvent) => {
        const result = await eventBridge.send(
          new PutEventsCommand({
            Entries: [
              { Source: EVENT_SOURCE, DetailType: APPROVAL_REQUESTED, Detail: JSON.stringify(event) },
            ],
          }),
        );
        if ((result.FailedEntryCount ?? 0) > 0) {
          const entry = result.Entries?.[0];
          throw new Error(`EventBridge refused the event: ${entry?.ErrorCode} ${entry?.ErrorMessage}`);
        }
      },
    };
  });
  return { requested: async (event) => (await load()).send(event) };
}
