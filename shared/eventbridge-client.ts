/**
 * The two names of @aws-sdk/client-eventbridge the approval events port uses, re-exported so that its
 * dynamic `import()` (shared/approval-events.ts) loads only them: a dynamically imported SDK namespace
 * cannot be tree-shaken and would keep every command, schema and error class of the client.
 */
export {
  EventBridgeClient,
  type EventBridgeClientConfig,
  PutEventsCommand,
} from "@aws-sdk/client-eventbridge";
